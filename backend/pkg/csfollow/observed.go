package csfollow

import (
	"context"
	"fmt"
	"log/slog"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/openhcp/openhcp/internal/armdoc"
	"github.com/openhcp/openhcp/internal/reconcile"
)

// Every kind reads its object and follows its watch the same way, through its client's Get and
// Watch calls, whose requests share one shape in every Cluster Service API: a Get request is
// {string id = 1}, a Watch request {int64 since_revision = 1}. A kind names its calls (method
// expressions such as csv1.NodePoolsClient.GetNodePool) and how its states map to outcomes.

// object is a Cluster Service object as a Get returns it: a pointer to E, nil when unknown.
type object[E any] interface {
	*E
	GetUpdateTime() *timestamppb.Timestamp
}

// request is a Get or Watch request message R.
type request[R any] interface {
	*R
	proto.Message
}

// observer is the Observe of a kind whose object (what: "node pool") get reads from client by
// the operation's InternalID, and outcome maps. Without a client (nil) every operation of the
// kind fails to observe with an error that names the missing client.
func observer[C, R any, PR request[R], E any, P object[E]](client C, what string,
	get func(C, context.Context, PR, ...grpc.CallOption) (P, error),
	outcome func(*armdoc.OperationDocument, P) Outcome) func(context.Context, *armdoc.OperationDocument) (Observation, error) {
	id := requestField[R, PR]("id", protoreflect.StringKind)
	if any(client) == nil {
		return func(_ context.Context, op *armdoc.OperationDocument) (Observation, error) {
			return Observation{}, fmt.Errorf("%s operation %s: the backend has no Cluster Service client for the %s", op.Request, op.ID, what)
		}
	}
	return func(ctx context.Context, op *armdoc.OperationDocument) (Observation, error) {
		req := PR(new(R))
		req.ProtoReflect().Set(id, protoreflect.ValueOfString(op.InternalID))
		obj, err := get(client, ctx, req)
		return observed(what, op.InternalID, obj, err, func(obj P) Outcome { return outcome(op, obj) })
	}
}

// deleter is the Delete of a kind whose object (what: "node pool") del deletes on client by the
// operation's InternalID (a Delete request is {string id = 1}, as a Get request is). NotFound
// is an object already deleted. Without a client (nil) the kind has no Delete (nil).
func deleter[C, R any, PR request[R], P any](client C, what string,
	del func(C, context.Context, PR, ...grpc.CallOption) (P, error)) func(context.Context, *armdoc.OperationDocument) error {
	id := requestField[R, PR]("id", protoreflect.StringKind)
	if any(client) == nil {
		return nil
	}
	return func(ctx context.Context, op *armdoc.OperationDocument) error {
		req := PR(new(R))
		req.ProtoReflect().Set(id, protoreflect.ValueOfString(op.InternalID))
		if _, err := del(client, ctx, req); err != nil && status.Code(err) != codes.NotFound {
			return fmt.Errorf("delete %s %s in cluster service: %w", what, op.InternalID, err)
		}
		return nil
	}
}

// follower is the Follow of a kind whose watch (what: "node pool") on client streams events V,
// idOf naming the object each event changed (reconcile.Follow). Without a client (nil) the kind
// is not followed (nil).
func follower[C, R any, PR request[R], S reconcile.Stream[V], V reconcile.Event](client C, what string,
	watch func(C, context.Context, PR, ...grpc.CallOption) (S, error), idOf func(V) string) func(context.Context, *slog.Logger, func(id string)) {
	since := requestField[R, PR]("since_revision", protoreflect.Int64Kind)
	if any(client) == nil {
		return nil
	}
	return func(ctx context.Context, log *slog.Logger, changed func(id string)) {
		reconcile.Follow(ctx, log, what, func(ctx context.Context, rev int64) (reconcile.Stream[V], error) {
			req := PR(new(R))
			req.ProtoReflect().Set(since, protoreflect.ValueOfInt64(rev))
			return watch(client, ctx, req)
		}, func(ev V) { changed(idOf(ev)) })
	}
}

// requestField is the field name of kind k of request R. Every kind is registered at start-up
// (Kinds), so a request of another shape stops the backend there, and TestEveryKindIsObserved.
func requestField[R any, PR request[R]](name protoreflect.Name, k protoreflect.Kind) protoreflect.FieldDescriptor {
	desc := PR(new(R)).ProtoReflect().Descriptor()
	f := desc.Fields().ByName(name)
	if f == nil || f.Kind() != k || f.Cardinality() == protoreflect.Repeated {
		panic(fmt.Sprintf("csfollow: request %s has no %s field %s", desc.FullName(), k, name))
	}
	return f
}

// observed turns one Get of a Cluster Service object into an Observation. NotFound is an object
// Cluster Service does not know, which outcomeOf receives as nil; any other error fails the read
// of `what` id.
func observed[E any, P object[E]](what, id string, obj P, err error, outcomeOf func(P) Outcome) (Observation, error) {
	if status.Code(err) == codes.NotFound {
		obj, err = nil, nil
	}
	if err != nil {
		return Observation{}, fmt.Errorf("get %s %s from cluster service: %w", what, id, err)
	}
	out := outcomeOf(obj)
	if r, ok := any(obj).(interface{ GetRevision() int64 }); ok && obj != nil {
		out.Revision = r.GetRevision()
	}
	return Observation{Out: out, Known: obj != nil, Updated: obj.GetUpdateTime()}, nil
}
