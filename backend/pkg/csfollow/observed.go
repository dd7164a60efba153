package csfollow

import (
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// observed turns one Get of a Cluster Service object into an Observation. NotFound is an object
// Cluster Service does not know, which outcomeOf receives as nil; any other error fails the read
// of `what` id.
func observed[E any, P interface {
	*E
	GetUpdateTime() *timestamppb.Timestamp
}](what, id string, obj P, err error, outcomeOf func(P) Outcome) (Observation, error) {
	if status.Code(err) == codes.NotFound {
		obj, err = nil, nil
	}
	if err != nil {
		return Observation{}, fmt.Errorf("get %s %s from cluster service: %w", what, id, err)
	}
	return Observation{Out: outcomeOf(obj), Known: obj != nil, Updated: obj.GetUpdateTime()}, nil
}
