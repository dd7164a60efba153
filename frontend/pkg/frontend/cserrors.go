package frontend

import (
	"net/http"
	"sort"
	"strings"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/frontend/pkg/api"
	"github.com/openhcp/openhcp/internal/arm"
)

// fieldViolations turns Cluster Service's refusal of req (InvalidArgument with field
// violations) into ARM's answer: one 400 per violation whose target is the field as the
// request's api-version spells it — Cluster Service's path through the arm_path options of
// req's fields (csv1.ARMPath), then the version's ExternalPath — and, for several,
// MultipleErrorsOccurred with one detail each (DESIGN §3.1). A violation of a field the
// request body does not carry has no target. No proto name reaches the client: the message is
// Cluster Service's description, which names no fields. Any other error is returned as it is;
// the gRPC status stays in the returned error's chain, so definitive() still sees it.
func fieldViolations(ver api.Version, req proto.Message, err error) error {
	st, ok := status.FromError(err)
	if !ok || st.Code() != codes.InvalidArgument {
		return err
	}
	var errs []*arm.CloudError
	for _, d := range st.Details() {
		br, ok := d.(*errdetails.BadRequest)
		if !ok {
			continue
		}
		for _, fv := range br.GetFieldViolations() {
			p, ok := csv1.ARMPath(req.ProtoReflect().Descriptor(), fv.GetField())
			if !ok {
				errs = append(errs, cloudError(http.StatusBadRequest, arm.CodeInvalidRequestContent, "", "%s", sentence(fv.GetDescription())))
				continue
			}
			if ver != nil {
				p = ver.ExternalPath(p)
			}
			errs = append(errs, cloudError(http.StatusBadRequest, arm.CodeInvalidRequestContent, p,
				"Invalid value for field '%s': %s", p, sentence(fv.GetDescription())))
		}
	}
	if len(errs) == 0 {
		return err
	}
	sort.SliceStable(errs, func(i, j int) bool { return errs[i].Target < errs[j].Target })
	ce, _ := arm.AsCloudError(arm.Multiple(errs))
	return &csRefusal{cloud: ce, cause: err}
}

// csRefusal is Cluster Service's refusal as ARM answers it, keeping the gRPC error beneath.
type csRefusal struct {
	cloud *arm.CloudError
	cause error
}

func (e *csRefusal) Error() string   { return e.cloud.Error() }
func (e *csRefusal) Unwrap() []error { return []error{e.cloud, e.cause} }

// violationDescriptions joins the descriptions of st's field violations ("" when it has none).
func violationDescriptions(st *status.Status) string {
	var ds []string
	for _, d := range st.Details() {
		if br, ok := d.(*errdetails.BadRequest); ok {
			for _, fv := range br.GetFieldViolations() {
				ds = append(ds, sentence(fv.GetDescription()))
			}
		}
	}
	return strings.Join(ds, " ")
}
