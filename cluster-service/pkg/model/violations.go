package model

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Violations collects field errors and turns them into one InvalidArgument with BadRequest
// details, so a caller sees every problem at once with its field path.
type Violations []*errdetails.BadRequest_FieldViolation

// MaxDescription bounds a violation's description: longer, it quotes a caller's value (an ID of
// 60,000 characters was repeated whole, in the message and in the details) and is cut, on a
// UTF-8 boundary, with "…" at the end.
const MaxDescription = 1024

// Add records a violation of field.
func (v *Violations) Add(field, format string, args ...any) {
	d := fmt.Sprintf(format, args...)
	if len(d) > MaxDescription {
		n := MaxDescription
		for n > 0 && !utf8.RuneStart(d[n]) {
			n--
		}
		d = d[:n] + "…"
	}
	*v = append(*v, &errdetails.BadRequest_FieldViolation{Field: field, Description: d})
}

// Err is the InvalidArgument status of v, or nil when there is none.
func (v Violations) Err() error {
	if len(v) == 0 {
		return nil
	}
	msgs := make([]string, 0, len(v))
	for _, f := range v {
		msgs = append(msgs, f.Field+": "+f.Description)
	}
	st := status.New(codes.InvalidArgument, "invalid request: "+strings.Join(msgs, "; "))
	if d, err := st.WithDetails(&errdetails.BadRequest{FieldViolations: v}); err == nil {
		st = d
	}
	return st.Err()
}

// OneOf requires val, when set, to be one of allowed.
func OneOf(v *Violations, field, val string, allowed ...string) {
	if val == "" {
		return
	}
	for _, a := range allowed {
		if val == a {
			return
		}
	}
	v.Add(field, "must be one of %s, not %q", strings.Join(allowed, ", "), val)
}

// Indexed is the path of the i-th element of the list at field.
func Indexed(field string, i int) string { return field + "[" + strconv.Itoa(i) + "]" }
