package frontend

import (
	"context"
	"errors"
	"net/http"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/openhcp/openhcp/internal/arm"
	"github.com/openhcp/openhcp/internal/docstore"
)

func cloudError(statusCode int, code, target, format string, args ...any) *arm.CloudError {
	return arm.NewCloudError(statusCode, code, target, format, args...)
}

// report is the one place where errors become HTTP responses. Handlers return CloudErrors for
// what they decide themselves; store and Cluster Service errors are mapped here; anything else
// is a 500 whose details go to the log, not to the caller.
func (s *Server) report(w http.ResponseWriter, r *http.Request, err error) {
	ce := s.toCloudError(r, err)
	if ce.StatusCode >= 500 {
		info(r).logger().Error("request failed", "error", err, "code", ce.Code)
	} else {
		info(r).logger().Info("request rejected", "error", err, "code", ce.Code)
	}
	arm.WriteCloudError(w, ce)
}

func (s *Server) toCloudError(r *http.Request, err error) *arm.CloudError {
	if ce, ok := arm.AsCloudError(err); ok {
		return ce
	}
	switch {
	case errors.Is(err, docstore.ErrNotFound):
		return cloudError(http.StatusNotFound, arm.CodeNotFound, "", "The requested resource was not found.")
	case errors.Is(err, docstore.ErrPreconditionFailed), errors.Is(err, docstore.ErrAlreadyExists):
		// Our own conditional write lost a race with another writer.
		return cloudError(http.StatusConflict, arm.CodeConflict, "", "The resource was changed by another request at the same time; retry the request.")
	case errors.Is(err, docstore.ErrInvalidContinuation):
		return cloudError(http.StatusBadRequest, arm.CodeInvalidParameter, "$skipToken", "The $skipToken is not valid.")
	case errors.Is(err, docstore.ErrUnavailable):
		// The database is down or restarting. The client retries, as after Cluster Service's
		// Unavailable; a PUT or DELETE is idempotent, so that is safe even if the lost
		// connection had committed.
		ce := cloudError(http.StatusServiceUnavailable, arm.CodeServiceUnavailable, "", "The service is temporarily unavailable; retry the request.")
		ce.RetryAfter = s.retryAfterSeconds()
		return ce
	}
	// status.FromError would put the whole wrapped chain into the message; the customer gets
	// Cluster Service's own message only.
	var gs interface{ GRPCStatus() *status.Status }
	if errors.As(err, &gs) {
		if st := gs.GRPCStatus(); st.Code() != codes.OK && st.Code() != codes.Unknown {
			return s.grpcToCloudError(st)
		}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		ce := cloudError(http.StatusServiceUnavailable, arm.CodeServiceUnavailable, "", "The service did not answer in time; retry the request.")
		ce.RetryAfter = s.retryAfterSeconds()
		return ce
	}
	return cloudError(http.StatusInternalServerError, arm.CodeInternalServerError, "",
		"An internal error occurred. Quote request ID %s when you contact support.", info(r).requestID)
}

// grpcToCloudError maps Cluster Service status codes (DESIGN §3.3). CS messages are written
// for customers, so they are passed on — except an InvalidArgument's with field violations,
// whose message names proto fields: a refusal that fieldViolations did not map to ARM paths
// answers with the violations' descriptions alone.
func (s *Server) grpcToCloudError(st *status.Status) *arm.CloudError {
	switch st.Code() {
	case codes.InvalidArgument, codes.OutOfRange:
		if d := violationDescriptions(st); d != "" {
			return cloudError(http.StatusBadRequest, arm.CodeInvalidRequestContent, "", "%s", d)
		}
		return cloudError(http.StatusBadRequest, arm.CodeInvalidRequestContent, "", "%s", st.Message())
	case codes.NotFound:
		return cloudError(http.StatusNotFound, arm.CodeNotFound, "", "%s", st.Message())
	case codes.AlreadyExists, codes.FailedPrecondition, codes.Aborted:
		return cloudError(http.StatusConflict, arm.CodeConflict, "", "%s", st.Message())
	case codes.ResourceExhausted:
		ce := cloudError(http.StatusServiceUnavailable, arm.CodeServiceUnavailable, "", "%s", st.Message())
		ce.RetryAfter = seconds(s.cfg.CapacityRetryAfter)
		for _, d := range st.Details() {
			if ri, ok := d.(*errdetails.RetryInfo); ok && ri.GetRetryDelay() != nil {
				if n := seconds(ri.GetRetryDelay().AsDuration()); n > 0 {
					ce.RetryAfter = n
				}
			}
		}
		return ce
	case codes.Unavailable, codes.DeadlineExceeded:
		ce := cloudError(http.StatusServiceUnavailable, arm.CodeServiceUnavailable, "", "The cluster service is temporarily unavailable; retry the request.")
		ce.RetryAfter = s.retryAfterSeconds()
		return ce
	}
	return cloudError(http.StatusInternalServerError, arm.CodeInternalServerError, "", "An internal error occurred in the cluster service.")
}
