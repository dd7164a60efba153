package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/openhcp/openhcp/internal/arm"
)

// parseJSON reads one JSON value (objects as map[string]any, numbers as json.Number) and
// reports every key that appears more than once in an object (the value kept is the last, as
// encoding/json would keep it). Every step is linear in the body, whatever its shape: the
// nesting depth is checked first, in one pass over the bytes and before any recursion; then
// the syntax, by encoding/json's scanner; then the value is built in one more pass.
func parseJSON(body []byte) (any, *problems, error) {
	if err := checkShape(body); err != nil {
		return nil, nil, arm.NewCloudError(http.StatusBadRequest, arm.CodeInvalidRequestContent, "",
			"The request content was invalid and could not be deserialized: %v.", err)
	}
	if !json.Valid(body) {
		err := json.Unmarshal(body, new(json.RawMessage)) // the same scanner, to say what is wrong
		return nil, nil, arm.NewCloudError(http.StatusBadRequest, arm.CodeInvalidRequestContent, "",
			"The request content was invalid and could not be deserialized: %v", err)
	}
	b := builder{data: body, errs: &problems{}}
	v := b.value()
	return v, b.errs, nil
}

// checkShape refuses a body that opens more than MaxDepth objects and arrays inside one
// another or holds more than MaxValues values, reading each byte once and stopping at the first
// level or value too many. Values are counted as the objects and arrays opened plus the commas
// between members, which is never more than the values there are. Brackets and commas inside
// strings do not count. It does not check the syntax.
func checkShape(body []byte) error {
	depth, values := 0, 0
	inString, escaped := false, false
	for _, c := range body {
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '{', '[':
			if depth++; depth > MaxDepth {
				return fmt.Errorf("objects and arrays are nested deeper than %d levels", MaxDepth)
			}
			values++
		case '}', ']':
			depth--
		case ',':
			values++
		default:
			continue
		}
		if values > MaxValues {
			return fmt.Errorf("it holds more than %d values", MaxValues)
		}
	}
	return nil
}

// builder builds the value of a body that json.Valid accepted and that nests at most MaxDepth
// levels, so it need not check the syntax and its recursion is bounded.
type builder struct {
	data []byte
	i    int
	errs *problems
	at   path // where b.i stands
}

func (b *builder) space() {
	for b.i < len(b.data) {
		switch b.data[b.i] {
		case ' ', '\t', '\n', '\r':
			b.i++
		default:
			return
		}
	}
}

// value reads the value at b.i.
func (b *builder) value() any {
	b.space()
	switch b.data[b.i] {
	case '{':
		b.i++
		obj := map[string]any{}
		for {
			b.space()
			if b.data[b.i] == '}' {
				b.i++
				return obj
			}
			if b.data[b.i] == ',' {
				b.i++
				b.space()
			}
			k := b.str()
			b.space()
			b.i++ // ':'
			b.at.property(k)
			if hasNUL(k) && !b.errs.full() {
				b.errs.add(&b.at, "The property name '%s' in %s contains a NUL character (\\u0000), which no name or value may hold.", spellKey(k), b.at.parent())
			}
			if _, dup := obj[k]; dup && !b.errs.full() {
				b.errs.add(&b.at, "The property '%s' appears more than once in %s.", k, b.at.parent())
			}
			obj[k] = b.value()
			b.at.pop()
		}
	case '[':
		b.i++
		arr := []any{}
		for {
			b.space()
			if b.data[b.i] == ']' {
				b.i++
				return arr
			}
			if b.data[b.i] == ',' {
				b.i++
			}
			b.at.element(len(arr))
			arr = append(arr, b.value())
			b.at.pop()
		}
	case '"':
		s := b.str()
		if hasNUL(s) && !b.errs.full() {
			b.errs.add(&b.at, "The value of '%s' contains a NUL character (\\u0000), which no name or value may hold.", b.at.String())
		}
		return s
	case 't':
		b.i += len("true")
		return true
	case 'f':
		b.i += len("false")
		return false
	case 'n':
		b.i += len("null")
		return nil
	}
	start := b.i
	for b.i < len(b.data) && isNumberByte(b.data[b.i]) {
		b.i++
	}
	return json.Number(b.data[start:b.i])
}

// hasNUL says s holds U+0000, which JSON may carry escaped ("\u0000") but the store cannot:
// PostgreSQL's jsonb and text refuse it, so a body holding one is a 400 naming where it stands
// rather than a failed write. Invalid UTF-8 needs no such check: a string is read as
// encoding/json reads it, each invalid byte becoming U+FFFD.
func hasNUL(s string) bool { return strings.IndexByte(s, 0) >= 0 }

func isNumberByte(c byte) bool {
	return c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'
}

// str reads the string at b.i. One without escapes and in valid UTF-8 is its bytes; any other
// goes through encoding/json, so escapes and invalid UTF-8 read exactly as they do there.
func (b *builder) str() string {
	start := b.i
	b.i++
	plain := true
	for b.data[b.i] != '"' {
		if b.data[b.i] == '\\' {
			plain = false
			b.i++
		}
		b.i++
	}
	b.i++
	quoted := b.data[start:b.i]
	if plain && utf8.Valid(quoted) {
		return string(quoted[1 : len(quoted)-1])
	}
	var s string
	if err := json.Unmarshal(quoted, &s); err != nil {
		// json.Valid accepted it, so this does not happen; keep what was written rather than
		// fail a request on it.
		return string(quoted[1 : len(quoted)-1])
	}
	return s
}
