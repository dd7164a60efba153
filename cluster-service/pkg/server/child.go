package server

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/store"
	"github.com/openhcp/openhcp/internal/logattr"
)

// The RPCs of a cluster's children (node pools, external auths) are one lifecycle: create
// under a live cluster of the ARM resource's parent, get, list by cluster, a partial update
// merged under the store's row lock and validated whole as a create is, delete, watch. A
// childService holds what differs between kinds: names, the ARM ID pattern, the store's
// store, and two hooks (validate a spec, decide an update).

// childStatus is a child's status: it says which spec revision it reflects.
type childStatus interface {
	proto.Message
	GetObservedRevision() int64
}

// childMessage is a child's API message (csv1.NodePool, csv1.ExternalAuth).
type childMessage[Spec proto.Message] interface {
	proto.Message
	GetId() string
	GetClusterId() string
	GetArmResourceId() string
	GetSpec() Spec
}

// childUpdateRequest is a child's Update request.
type childUpdateRequest[Update proto.Message] interface {
	GetId() string
	GetRevision() int64
	GetSpecRevision() int64
	GetUpdate() Update
}

// childEvent is a child's watch message (csv1.NodePoolEvent): type, revision and the object
// in the field named as the kind's request field (node_pool).
type childEvent interface {
	proto.Message
	watchEvent
}

type childService[Spec proto.Message, Status childStatus, API childMessage[Spec], Update proto.Message, Event childEvent] struct {
	what   string // "node pool"
	field  string // the request's field of the object: "node_pool"
	logKey string // the log attribute of its ID: logattr.KeyNodePoolID
	// armRE matches its ARM resource ID; its first group is the cluster's. armHint is what a
	// mismatch is told ("must be ... not %q").
	armRE   *regexp.Regexp
	armHint string

	// validate checks a create's spec (the request's <field>.spec) against its cluster, as read in
	// the create's transaction, and returns it defaulted.
	validate func(v *violations, in Spec, cl *store.Cluster) Spec
	// decide applies an update to the stored object under its row lock, validated whole as on
	// create (against its cluster as read in the update's transaction) with violations at the
	// spec's paths, and returns what to write: the spec, and an upgrade policy to start with it
	// (nil: none).
	decide func(v *violations, cl *store.Cluster, cur *store.Child[Spec, Status], u Update) (Spec, *csv1.UpgradePolicy)
	// createError answers a create's store error that is the kind's own; nil for the others.
	createError func(clusterID string, err error) error

	store   store.Children[Spec, Status]
	toProto func(*store.Child[Spec, Status]) API
}

// create validates and stores a new child: the IDs and ARM resource ID, the cluster (the
// ARM ID's parent, not being deleted), then the spec. A create for an ARM resource that exists
// returns it (idempotent), unless it is being deleted.
func (k *childService[Spec, Status, API, Update, Event]) create(ctx context.Context, s *Server, in API) (API, error) {
	var zero API
	var v violations
	if !in.ProtoReflect().IsValid() {
		v.add(k.field, "is required")
		return zero, v.err()
	}
	validateClusterID(&v, k.field+".id", in.GetId())
	validateClusterID(&v, k.field+".cluster_id", in.GetClusterId())
	m := k.armRE.FindStringSubmatch(in.GetArmResourceId())
	if m == nil {
		v.add(k.field+".arm_resource_id", k.armHint, in.GetArmResourceId())
	}
	if err := v.err(); err != nil {
		return zero, err
	}
	op := "create " + k.what
	// The spec is checked against the cluster as it is in the create's transaction, so no
	// write of the cluster lands between the check and the create's commit.
	c, created, err := k.store.CreateChecked(ctx, &store.Child[Spec, Status]{ID: in.GetId(), ClusterID: in.GetClusterId(), ARMResourceID: in.GetArmResourceId()},
		func(cl *store.Cluster) (Spec, error) {
			var v violations
			if !strings.EqualFold(m[1], cl.ARMResourceID) {
				v.add(k.field+".arm_resource_id", "belongs to cluster %s, not to cluster %s (%s)", m[1], cl.ID, cl.ARMResourceID)
			}
			spec := k.validate(&v, in.GetSpec(), cl)
			return spec, v.err()
		})
	if errors.Is(err, store.ErrNotFound) {
		return zero, status.Errorf(codes.NotFound, "cluster %s not found", in.GetClusterId())
	}
	if _, ok := status.FromError(err); ok && err != nil {
		return zero, err // the spec's violations, already a status
	}
	if err != nil {
		if k.createError != nil {
			if kerr := k.createError(in.GetClusterId(), err); kerr != nil {
				return zero, kerr
			}
		}
		return zero, s.toStatus(ctx, op, err)
	}
	log := LoggerFrom(ctx).With(k.logKey, c.ID, logattr.KeyClusterID, c.ClusterID)
	if !created && c.Deleting {
		return zero, status.Errorf(codes.FailedPrecondition, "the %s %s for this ARM resource is being deleted; retry when it is gone", k.what, c.ID)
	}
	if created {
		log.Info(k.what+" created", logattr.KeyResourceID, c.ARMResourceID, "revision", c.Revision)
	} else {
		log.Info(k.what+" already exists for this ARM resource; returning it", "requested_id", in.GetId())
	}
	return k.toProto(c), nil
}

func (k *childService[Spec, Status, API, Update, Event]) get(ctx context.Context, s *Server, id string) (API, error) {
	var zero API
	var v violations
	validateClusterID(&v, "id", id)
	if err := v.err(); err != nil {
		return zero, err
	}
	c, err := k.store.Get(ctx, id)
	if err != nil {
		return zero, s.toStatus(ctx, "get "+k.what, err)
	}
	return k.toProto(c), nil
}

// list lists the children of a cluster that exists.
func (k *childService[Spec, Status, API, Update, Event]) list(ctx context.Context, s *Server, clusterID string) ([]API, error) {
	var v violations
	validateClusterID(&v, "cluster_id", clusterID)
	if err := v.err(); err != nil {
		return nil, err
	}
	op := "list " + k.what + "s"
	if _, err := s.st.GetCluster(ctx, clusterID); err != nil {
		return nil, s.toStatus(ctx, op, err)
	}
	all, err := k.store.List(ctx, clusterID, "", 0)
	if err != nil {
		return nil, s.toStatus(ctx, op, err)
	}
	return messages(all, k.toProto), nil
}

// update applies a partial update to the stored spec under the object's write lock; the
// result is validated as a create's (k.decide), so no caller reads and writes back the whole
// spec. An update that leaves the spec as it is writes nothing and returns the object at its
// revision: the store's one rule for "nothing for Cluster Service to do", for every kind.
func (k *childService[Spec, Status, API, Update, Event]) update(ctx context.Context, s *Server, req childUpdateRequest[Update]) (API, error) {
	var zero API
	var v violations
	validateClusterID(&v, "id", req.GetId())
	if req.GetRevision() < 0 {
		v.add("revision", "must not be negative")
	}
	if req.GetSpecRevision() < 0 {
		v.add("spec_revision", "must not be negative")
	}
	u := req.GetUpdate()
	if !u.ProtoReflect().IsValid() {
		v.add("update", "is required: set the fields to change (an empty update changes nothing)")
	}
	if err := v.err(); err != nil {
		return zero, err
	}
	op := "update " + k.what
	var upgrade *csv1.UpgradePolicy
	c, err := k.store.Update(ctx, req.GetId(), store.Precondition{Revision: req.GetRevision(), SpecRevision: req.GetSpecRevision()},
		func(cl *store.Cluster, cur *store.Child[Spec, Status]) (Spec, *csv1.UpgradePolicy, error) {
			var specV violations
			var spec Spec
			spec, upgrade = k.decide(&specV, cl, cur, u)
			return spec, upgrade, updateViolations(specV, u.ProtoReflect().Descriptor()).err()
		})
	if errors.Is(err, store.ErrDeleting) {
		return zero, status.Errorf(codes.FailedPrecondition, "%s %s is being deleted", k.what, req.GetId())
	}
	if errors.Is(err, store.ErrUpgradeInProgress) {
		return zero, status.Errorf(codes.FailedPrecondition, "%s %s: %v; wait for it to finish", op, req.GetId(), err)
	}
	if _, ok := status.FromError(err); ok && err != nil {
		return zero, err // the update's violations, already a status
	}
	if err != nil {
		return zero, s.toStatus(ctx, op, err)
	}
	log := LoggerFrom(ctx).With(k.logKey, c.ID, logattr.KeyClusterID, c.ClusterID)
	if upgrade != nil {
		log.Info(k.what+" upgrade started", logattr.KeyUpgradePolicyID, upgrade.Id, "from", upgrade.FromVersion, "to", upgrade.ToVersion)
	}
	log.Info(k.what+" updated", "revision", c.Revision)
	return k.toProto(c), nil
}

// updateViolations readdresses violations of a merged spec ("spec.taints[1].effect") to the
// update request's field ("update.taints.values[1].effect"); a violation of a part the update
// cannot change keeps the spec's path (the caller cannot map it to its own field).
func updateViolations(specV violations, update protoreflect.MessageDescriptor) violations {
	var v violations
	for _, f := range specV {
		field := f.Field
		if p, ok := csv1.UpdateFieldPath(update, strings.TrimPrefix(field, "spec.")); ok && strings.HasPrefix(field, "spec.") {
			field = "update." + p
		}
		v.add(field, "%s", f.Description)
	}
	return v
}

// delete marks the object deleting; the controller removes it once its manifests are gone.
func (k *childService[Spec, Status, API, Update, Event]) delete(ctx context.Context, s *Server, id string) (API, error) {
	var zero API
	var v violations
	validateClusterID(&v, "id", id)
	if err := v.err(); err != nil {
		return zero, err
	}
	c, err := k.store.MarkDeleting(ctx, id)
	if err != nil {
		return zero, s.toStatus(ctx, "delete "+k.what, err)
	}
	LoggerFrom(ctx).Info(k.what+" deletion requested", k.logKey, c.ID, logattr.KeyClusterID, c.ClusterID, "revision", c.Revision)
	return k.toProto(c), nil
}

// watch serves a watch of the kind exactly as WatchClusters does for clusters.
func (k *childService[Spec, Status, API, Update, Event]) watch(s *Server, since int64, stream watchStream[Event]) error {
	return serveWatch(s, since, stream, watchLog[Event]{
		snapshot: func(ctx context.Context) ([]Event, int64, error) {
			all, rev, err := k.store.Snapshot(ctx)
			return messages(all, func(c *store.Child[Spec, Status]) Event {
				return k.event(csv1.EventType_EVENT_TYPE_UPSERTED, c.Revision, c)
			}), rev, err
		},
		eventsAfter: func(ctx context.Context, after int64, limit int) ([]Event, error) {
			evs, err := k.store.EventsAfter(ctx, after, limit)
			return messages(evs, func(ev store.ChildEvent[Spec, Status]) Event { return k.event(ev.Type, ev.Revision, ev.Object) }), err
		},
		compacted:  k.store.CompactedRevision,
		current:    k.store.CurrentRevision,
		changes:    k.store.Changes,
		bookmark:   func(rev int64) Event { return k.event(csv1.EventType_EVENT_TYPE_BOOKMARK, rev, nil) },
		snapshotOp: fmt.Sprintf("watch %ss snapshot", k.what), compactedOp: fmt.Sprintf("watch %ss", k.what),
		eventsOp: fmt.Sprintf("watch %s events", k.what), history: k.what + " event history",
	})
}

// event is the watch message of one object; c is nil for a BOOKMARK.
func (k *childService[Spec, Status, API, Update, Event]) event(typ csv1.EventType, rev int64, c *store.Child[Spec, Status]) Event {
	var zero Event
	m := zero.ProtoReflect().Type().New()
	f := m.Descriptor().Fields()
	m.Set(f.ByName("type"), protoreflect.ValueOfEnum(protoreflect.EnumNumber(typ)))
	m.Set(f.ByName("revision"), protoreflect.ValueOfInt64(rev))
	if c != nil {
		m.Set(f.ByName(protoreflect.Name(k.field)), protoreflect.ValueOfMessage(k.toProto(c).ProtoReflect()))
	}
	return m.Interface().(Event)
}
