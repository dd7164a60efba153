package maintenance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"sort"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/internal/docstore"
)

// CampaignState is where a campaign is: Running → Succeeded, or Halted (waits for resume or
// cancel) and Cancelled.
type CampaignState string

const (
	CampaignRunning   CampaignState = "Running"
	CampaignHalted    CampaignState = "Halted"
	CampaignSucceeded CampaignState = "Succeeded"
	CampaignCancelled CampaignState = "Cancelled"
)

// Wave is the clusters (or node pools) of one shard in a campaign, upgraded together.
type Wave struct {
	Shard    string   `json:"shard"`
	Clusters []string `json:"clusters"`
	// NodePools are the wave's node pools in a campaign over node pools (Clusters then lists
	// their clusters); each gets a task, and the wave's counts are of node pools.
	NodePools []WaveNodePool `json:"nodePools,omitempty"`
	Started   time.Time      `json:"started,omitempty"`
	Finished  time.Time      `json:"finished,omitempty"`
	// Succeeded and Failed count the wave's finished tasks; AcceptedFailures are the failures
	// an operator accepted by resuming, which no longer count against the threshold.
	Succeeded        int `json:"succeeded"`
	Failed           int `json:"failed"`
	AcceptedFailures int `json:"acceptedFailures"`
}

// WaveNodePool is a node pool of a wave, by its Cluster Service ID and its cluster's.
type WaveNodePool struct {
	Cluster  string `json:"cluster"`
	NodePool string `json:"nodePool"`
}

// What a campaign upgrades (CampaignSpec.Target).
const (
	// TargetClusters (the default, also "") upgrades control planes: one zstream-upgrade task per
	// cluster whose spec runs FromVersion.
	TargetClusters = "clusters"
	// TargetNodePools upgrades node pools: one nodepool-zstream-upgrade task per node pool whose
	// spec runs FromVersion, in a cluster of ChannelGroup.
	TargetNodePools = "nodepools"
)

// CampaignSpec is what an operator asks for: upgrade every cluster (or, with Target nodepools,
// every node pool) running FromVersion on ChannelGroup to its recommended z-stream, shard by
// shard, CanaryShard first.
type CampaignSpec struct {
	ID           string `json:"id"`
	FromVersion  string `json:"fromVersion"`
	ChannelGroup string `json:"channelGroup"`
	CanaryShard  string `json:"canaryShard,omitempty"`
	// Target is what is upgraded: TargetClusters ("" too) or TargetNodePools. Left out when
	// empty, so a spec signed before the field existed still verifies.
	Target string `json:"target,omitempty"`
	// MaxInFlight is how many of the campaign's tasks may be unfinished at once (default 2).
	MaxInFlight int `json:"maxInFlight"`
	// Bake is how long to wait after a wave finished before the next one starts (default 30m).
	Bake time.Duration `json:"bake"`
	// FailureThreshold: a wave whose failed share of its clusters exceeds it halts the
	// campaign (default 0.1; 0 halts at the first failure).
	FailureThreshold *float64 `json:"failureThreshold,omitempty"`
	RequestedBy      string   `json:"requestedBy"`
	// Request is the ID of the maintenance request that created the campaign, if one did: a
	// request carried out again after a crash finds its campaign by it.
	Request string `json:"request,omitempty"`
}

// FieldError is a campaign spec or request refused for one of its fields; Field is its JSON
// name (the admin API answers 400 naming it). It wraps ErrInvalidCampaign, or ErrInvalidRequest
// for what is not a campaign's (a task, a window).
type FieldError struct {
	Field   string
	Message string
	kind    error
}

func (e *FieldError) Error() string {
	return fmt.Sprintf("%s: %s: %s", e.Unwrap(), e.Field, e.Message)
}

func (e *FieldError) Unwrap() error {
	if e.kind == nil {
		return ErrInvalidCampaign
	}
	return e.kind
}

func invalid(field, format string, args ...any) error {
	return &FieldError{Field: field, Message: fmt.Sprintf(format, args...)}
}

// invalidRequest is invalid for a request that is not about a campaign.
func invalidRequest(field, format string, args ...any) error {
	return &FieldError{Field: field, Message: fmt.Sprintf(format, args...), kind: ErrInvalidRequest}
}

// campaignIDRE: a campaign ID is part of document and task IDs, so it is kept to a DNS label.
var campaignIDRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,38}[a-z0-9])?$`)

// nameRE is what a version, channel group or shard name may hold.
var nameRE = regexp.MustCompile(`^[A-Za-z0-9][-A-Za-z0-9.+_]{0,62}$`)

// Validate checks what a spec says on its own, before any default is applied; what depends on
// the fleet (the version in the catalogue, the canary shard's clusters) Create checks. It is the
// one check of a campaign spec: the admin API answers 400 with it, Create refuses with it.
func (s *CampaignSpec) Validate() error {
	switch {
	case !campaignIDRE.MatchString(s.ID):
		return invalid("id", "campaign ID %q must be 1 to 40 lower-case letters, digits and '-', starting and ending with a letter or digit", s.ID)
	case !nameRE.MatchString(s.FromVersion):
		return invalid("fromVersion", "fromVersion %q must be a version ID such as 4.19.16", s.FromVersion)
	case !nameRE.MatchString(s.ChannelGroup):
		return invalid("channelGroup", "channelGroup %q must be a channel group such as stable", s.ChannelGroup)
	case s.CanaryShard != "" && !nameRE.MatchString(s.CanaryShard):
		return invalid("canaryShard", "canaryShard %q is no shard name", s.CanaryShard)
	case s.Target != "" && s.Target != TargetClusters && s.Target != TargetNodePools:
		return invalid("target", "target %.64q must be %s (control planes, the default) or %s", s.Target, TargetClusters, TargetNodePools)
	case s.MaxInFlight < 0 || s.MaxInFlight > maxCampaignInFlight:
		return invalid("maxInFlight", "maxInFlight %d must be from 1 to %d (0: the default, 2)", s.MaxInFlight, maxCampaignInFlight)
	case s.Bake < 0 || s.Bake > maxBake:
		return invalid("bake", "bake %s must be from 0 to %s (0: the default, 30m)", s.Bake, maxBake)
	case s.FailureThreshold != nil && (*s.FailureThreshold < 0 || *s.FailureThreshold > 1 || math.IsNaN(*s.FailureThreshold)):
		return invalid("failureThreshold", "failureThreshold %v must be between 0 and 1", *s.FailureThreshold)
	}
	return nil
}

// Bounds of a campaign's pacing: beyond them a value is a typo, not a plan.
const (
	maxCampaignInFlight = 100
	maxBake             = 14 * 24 * time.Hour
)

// Campaign is a stored campaign: its spec, the waves fixed when it was created (so a cluster is
// in one wave and gets one task), and where it is.
type Campaign struct {
	CampaignSpec
	State   CampaignState `json:"state"`
	Current int           `json:"current"`
	Waves   []Wave        `json:"waves"`
	Message string        `json:"message,omitempty"`
	Created time.Time     `json:"created"`
	History []Transition  `json:"history"`

	etag string
}

func (c *Campaign) record(now time.Time, msg string) {
	c.Message = msg
	c.History = append(c.History, Transition{State: State(c.State), Step: c.Current, At: now.UTC(), Message: msg})
}

// recordFor is record with the maintenance request that made the change.
func (c *Campaign) recordFor(now time.Time, msg, request string) {
	c.record(now, msg)
	c.History[len(c.History)-1].Request = request
}

// applied says whether request (not "") already changed the campaign.
func (c *Campaign) applied(request string) bool {
	if request == "" {
		return false
	}
	for _, h := range c.History {
		if h.Request == request {
			return true
		}
	}
	return false
}

// unit is what one of a campaign's tasks upgrades: a cluster's control plane, or a node pool.
type unit struct{ cluster, nodePool string }

// units are the wave's units in the campaign c: its clusters, or its node pools.
func (c *Campaign) units(w *Wave) []unit {
	var us []unit
	if c.Target == TargetNodePools {
		for _, np := range w.NodePools {
			us = append(us, unit{np.Cluster, np.NodePool})
		}
		return us
	}
	for _, cl := range w.Clusters {
		us = append(us, unit{cluster: cl})
	}
	return us
}

// Clusters is how many clusters (node pools, for a campaign over node pools) the campaign covers.
func (c *Campaign) Clusters() int {
	n := 0
	for i := range c.Waves {
		n += len(c.units(&c.Waves[i]))
	}
	return n
}

// unitName names u in the campaign's messages.
func (c *Campaign) unitName(u unit) string {
	if u.nodePool != "" {
		return "node pool " + u.nodePool + " of cluster " + u.cluster
	}
	return "cluster " + u.cluster
}

// what names the campaign's units, for its messages.
func (c *Campaign) what() string {
	if c.Target == TargetNodePools {
		return "node pools"
	}
	return "clusters"
}

// TaskID is the ID of the campaign's task for a cluster: fixed, so it is created once.
func (c *Campaign) TaskID(cluster string) string { return c.ID + "-" + cluster }

// NodePoolTaskID is the ID of the campaign's task for a node pool of cluster.
func (c *Campaign) NodePoolTaskID(cluster, nodePool string) string {
	return c.ID + "-" + cluster + "-" + nodePool
}

func (c *Campaign) taskID(u unit) string {
	if u.nodePool != "" {
		return c.NodePoolTaskID(u.cluster, u.nodePool)
	}
	return c.TaskID(u.cluster)
}

// task is the campaign's task for u.
func (c *Campaign) task(u unit) *Task {
	t := &Task{ID: c.taskID(u), Cluster: u.cluster, Type: TypeZStreamUpgrade, RequestedBy: "campaign " + c.ID,
		Campaign: c.ID, Params: map[string]string{ParamFromVersion: c.FromVersion}}
	if u.nodePool != "" {
		// The pool's target is its recommended z-stream when the task checks it; the task fails
		// when the control plane is behind it (a node pool never runs ahead of its control plane).
		t.Type, t.Params = TypeNodePoolZStreamUpgrade, map[string]string{ParamNodePool: u.nodePool}
	}
	return t
}

// Campaigns stores campaigns and moves them through their waves.
type Campaigns struct {
	tasks *Tasks
	cs    ClusterService
	now   func() time.Time
}

// NewCampaigns returns the campaign store and reconciler; now is the clock (nil: time.Now).
func NewCampaigns(tasks *Tasks, cs ClusterService, now func() time.Time) *Campaigns {
	if now == nil {
		now = time.Now
	}
	return &Campaigns{tasks: tasks, cs: cs, now: now}
}

func campaignDoc(c *Campaign) (*docstore.Document, error) {
	b, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("encode campaign %s: %w", c.ID, err)
	}
	return &docstore.Document{PartitionKey: Partition, ID: "campaign/" + c.ID, Type: TypeCampaign, ResourceID: "campaign/" + c.ID, Body: b}, nil
}

func decodeCampaign(d *docstore.Document) (*Campaign, error) {
	var c Campaign
	if err := json.Unmarshal(d.Body, &c); err != nil {
		return nil, fmt.Errorf("decode campaign %s: %w", d.ID, err)
	}
	c.etag = d.ETag
	return &c, nil
}

// ErrInvalidCampaign is returned by Create for a spec that cannot run.
var ErrInvalidCampaign = errors.New("invalid campaign")

// Create selects the clusters (every cluster whose spec runs FromVersion on ChannelGroup, as
// Cluster Service lists them now), cuts them into waves by shard, canary first, and stores the
// campaign Running.
func (m *Campaigns) Create(ctx context.Context, spec CampaignSpec) (*Campaign, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	if spec.MaxInFlight == 0 {
		spec.MaxInFlight = 2
	}
	if spec.Bake == 0 {
		spec.Bake = 30 * time.Minute
	}
	if spec.FailureThreshold == nil {
		d := 0.1
		spec.FailureThreshold = &d
	}
	if err := m.checkVersion(ctx, spec); err != nil {
		return nil, err
	}
	byShard, pools, err := m.selectUnits(ctx, spec)
	if err != nil {
		return nil, err
	}
	what := "cluster"
	if spec.Target == TargetNodePools {
		what = "node pool"
	}
	if spec.CanaryShard != "" && len(byShard[spec.CanaryShard]) == 0 {
		return nil, invalid("canaryShard", "canary shard %s has no %s on %s in %s", spec.CanaryShard, what, spec.FromVersion, spec.ChannelGroup)
	}
	var shards []string
	for s := range byShard {
		if s != spec.CanaryShard {
			shards = append(shards, s)
		}
	}
	sort.Strings(shards)
	if spec.CanaryShard != "" {
		shards = append([]string{spec.CanaryShard}, shards...)
	}
	now := m.now()
	c := &Campaign{CampaignSpec: spec, State: CampaignRunning, Created: now.UTC()}
	for _, s := range shards {
		ids := byShard[s]
		sort.Strings(ids)
		w := Wave{Shard: s, Clusters: ids}
		if spec.Target == TargetNodePools {
			for _, cl := range ids {
				for _, np := range pools[cl] {
					w.NodePools = append(w.NodePools, WaveNodePool{Cluster: cl, NodePool: np})
				}
			}
		}
		c.Waves = append(c.Waves, w)
	}
	if len(c.Waves) == 0 {
		c.State = CampaignSucceeded
		c.recordFor(now, "no "+what+" runs "+spec.FromVersion+" in "+spec.ChannelGroup, spec.Request)
	} else {
		c.recordFor(now, fmt.Sprintf("created by %s: %d %s in %d waves", spec.RequestedBy, c.Clusters(), c.what(), len(c.Waves)), spec.Request)
	}
	d, err := campaignDoc(c)
	if err != nil {
		return nil, err
	}
	out, err := m.tasks.st.Create(ctx, d)
	if err != nil {
		return nil, fmt.Errorf("create campaign %s: %w", spec.ID, err)
	}
	c.etag = out.ETag
	return c, nil
}

// selectUnits lists what the campaign upgrades, as Cluster Service lists it now: by shard, the
// clusters whose spec runs FromVersion on ChannelGroup; for a campaign over node pools, the
// clusters that have a node pool whose spec runs FromVersion on ChannelGroup (the pool's own
// group, which the node pool task upgrades along: a pool's group may differ from its
// cluster's), and (pools) those pools by cluster, sorted. A cluster not placed on a shard yet is
// left out.
func (m *Campaigns) selectUnits(ctx context.Context, spec CampaignSpec) (byShard, pools map[string][]string, err error) {
	byShard, pools = map[string][]string{}, map[string][]string{}
	req := &csv1.ListClustersRequest{PageSize: 500}
	for {
		resp, err := m.cs.ListClusters(ctx, req)
		if err != nil {
			return nil, nil, fmt.Errorf("list clusters: %w", err)
		}
		for _, c := range resp.GetClusters() {
			if c.GetShard() == "" {
				continue
			}
			if spec.Target != TargetNodePools {
				if c.GetSpec().GetChannelGroup() == spec.ChannelGroup && c.GetSpec().GetVersionId() == spec.FromVersion {
					byShard[c.GetShard()] = append(byShard[c.GetShard()], c.GetId())
				}
				continue
			}
			nps, err := m.cs.ListNodePools(ctx, &csv1.ListNodePoolsRequest{ClusterId: c.GetId()})
			if status.Code(err) == codes.NotFound {
				continue // deleted since it was listed
			}
			if err != nil {
				return nil, nil, fmt.Errorf("list node pools of cluster %s: %w", c.GetId(), err)
			}
			for _, np := range nps.GetNodePools() {
				if nodePoolChannelGroup(np, c) == spec.ChannelGroup && np.GetSpec().GetVersionId() == spec.FromVersion {
					pools[c.GetId()] = append(pools[c.GetId()], np.GetId())
				}
			}
			if ids := pools[c.GetId()]; len(ids) > 0 {
				sort.Strings(ids)
				byShard[c.GetShard()] = append(byShard[c.GetShard()], c.GetId())
			}
		}
		if resp.GetNextPageToken() == "" {
			return byShard, pools, nil
		}
		req.PageToken = resp.GetNextPageToken()
	}
}

// checkVersion refuses a campaign that could upgrade nothing: FromVersion not in ChannelGroup's
// catalogue, or without a z-stream to move to (Cluster Service's catalogue is the one owner of
// versions and edges).
func (m *Campaigns) checkVersion(ctx context.Context, spec CampaignSpec) error {
	vs, err := m.cs.ListVersions(ctx, &csv1.ListVersionsRequest{ChannelGroup: spec.ChannelGroup})
	if err != nil {
		if status.Code(err) == codes.InvalidArgument || status.Code(err) == codes.NotFound {
			return invalid("channelGroup", "channel group %s: %s", spec.ChannelGroup, status.Convert(err).Message())
		}
		return fmt.Errorf("list versions of channel group %s: %w", spec.ChannelGroup, err)
	}
	known := false
	for _, v := range vs.GetVersions() {
		known = known || v.GetId() == spec.FromVersion
	}
	if !known {
		return invalid("fromVersion", "version %s is not in channel group %s", spec.FromVersion, spec.ChannelGroup)
	}
	if _, ok := RecommendedZStream(vs.GetVersions(), spec.FromVersion, m.now()); !ok {
		return invalid("fromVersion", "version %s has no z-stream upgrade in channel group %s", spec.FromVersion, spec.ChannelGroup)
	}
	return nil
}

// Get reads one campaign.
func (m *Campaigns) Get(ctx context.Context, id string) (*Campaign, error) {
	d, err := m.tasks.st.Get(ctx, Partition, "campaign/"+id)
	if err != nil {
		return nil, fmt.Errorf("get campaign %s: %w", id, err)
	}
	return decodeCampaign(d)
}

// List returns every campaign, oldest first.
func (m *Campaigns) List(ctx context.Context) ([]*Campaign, error) {
	return listAll(ctx, m.tasks.st, docstore.Query{Partition: Partition, Type: TypeCampaign}, "campaigns",
		decodeCampaign, func(c *Campaign) (time.Time, string) { return c.Created, c.ID })
}

func (m *Campaigns) replace(ctx context.Context, c *Campaign) error {
	d, err := campaignDoc(c)
	if err != nil {
		return err
	}
	out, err := m.tasks.st.Replace(ctx, d, c.etag)
	if err != nil {
		return fmt.Errorf("write campaign %s: %w", c.ID, err)
	}
	c.etag = out.ETag
	return nil
}

// ErrCampaignState is returned for a resume or cancel the campaign's state does not allow.
var ErrCampaignState = errors.New("campaign is not in a state that allows this")

// Resume sets a Halted campaign Running again; the failures of its current wave so far are
// accepted and no longer count against the threshold. Failed clusters are not retried.
func (m *Campaigns) Resume(ctx context.Context, id, by string) (*Campaign, error) {
	return m.resume(ctx, id, by, "")
}

// resume is Resume on behalf of request (when not ""): if the campaign's history already holds
// that request's resume, it changes nothing.
func (m *Campaigns) resume(ctx context.Context, id, by, request string) (*Campaign, error) {
	return m.change(ctx, id, request, func(c *Campaign) error {
		if c.State != CampaignHalted {
			return fmt.Errorf("%w: resume campaign %s in state %s", ErrCampaignState, id, c.State)
		}
		c.State = CampaignRunning
		c.Waves[c.Current].AcceptedFailures = c.Waves[c.Current].Failed
		c.recordFor(m.now(), "resumed by "+by, request)
		return nil
	})
}

// Cancel ends a campaign that has not finished: it starts no more tasks and cancels its tasks
// that have not finished (a running one stops between steps).
func (m *Campaigns) Cancel(ctx context.Context, id, by string) (*Campaign, error) {
	return m.cancel(ctx, id, by, "")
}

// cancel is Cancel on behalf of request (when not ""): if the campaign's history already holds
// that request's cancel, it only cancels the tasks again (a crash may have cut that short).
func (m *Campaigns) cancel(ctx context.Context, id, by, request string) (*Campaign, error) {
	c, err := m.change(ctx, id, request, func(c *Campaign) error {
		if c.State != CampaignRunning && c.State != CampaignHalted {
			return fmt.Errorf("%w: cancel campaign %s in state %s", ErrCampaignState, id, c.State)
		}
		c.State = CampaignCancelled
		c.recordFor(m.now(), "cancelled by "+by, request)
		return nil
	})
	if err != nil {
		return nil, err
	}
	for i := range c.Waves {
		for _, u := range c.units(&c.Waves[i]) {
			t, err := m.tasks.Get(ctx, c.taskID(u))
			if errors.Is(err, docstore.ErrNotFound) || (err == nil && !c.owns(t)) {
				continue // never created, or another campaign's task at the same ID
			}
			if err == nil {
				_, err = m.tasks.Cancel(ctx, t.ID, by, m.now())
			}
			if err != nil && !errors.Is(err, docstore.ErrNotFound) {
				return c, err
			}
		}
	}
	return c, nil
}

// owns says whether t, found at one of c's task IDs, is c's. Task IDs <campaign>-<cluster>
// [-<pool>] of two campaigns can be equal when campaign IDs hold '-' (campaign "x" over node
// pools and campaign "x-<cluster>" over clusters), so the ID alone does not say it; the task
// names its campaign.
func (c *Campaign) owns(t *Task) bool { return t.Campaign == c.ID }

// note records msg in c's history unless it is there already (a reconcile sees the same thing
// each poll).
func (c *Campaign) note(now time.Time, msg string) {
	for _, h := range c.History {
		if h.Message == msg {
			return
		}
	}
	c.record(now, msg)
}

func (m *Campaigns) change(ctx context.Context, id, request string, f func(*Campaign) error) (*Campaign, error) {
	for range 10 {
		c, err := m.Get(ctx, id)
		if err != nil {
			return nil, err
		}
		if c.applied(request) {
			return c, nil
		}
		if err := f(c); err != nil {
			return nil, err
		}
		if err := m.replace(ctx, c); err == nil {
			return c, nil
		} else if !errors.Is(err, docstore.ErrPreconditionFailed) {
			return nil, err
		}
	}
	return nil, fmt.Errorf("change campaign %s: kept conflicting", id)
}

// Reconcile moves one Running campaign on: it counts the current wave's finished tasks, halts
// the campaign when the wave's failures (less those accepted on resume) exceed the threshold,
// creates tasks up to MaxInFlight unfinished ones, and once the wave is done waits Bake before
// the next. It returns when to look again (0: nothing to wait for).
func (m *Campaigns) Reconcile(ctx context.Context, id string) (time.Duration, error) {
	c, err := m.Get(ctx, id)
	if err != nil {
		return 0, err
	}
	if c.State != CampaignRunning {
		return 0, nil
	}
	now := m.now()
	before, _ := json.Marshal(c)
	wait := m.step(ctx, c, now)
	if wait < 0 {
		return 0, ctx.Err()
	}
	if after, _ := json.Marshal(c); string(after) != string(before) {
		if err := m.replace(ctx, c); err != nil {
			return 0, err
		}
	}
	return wait, nil
}

// step works on c in memory; -1: ctx ended or a read failed (look again soon).
func (m *Campaigns) step(ctx context.Context, c *Campaign, now time.Time) time.Duration {
	const again = time.Second
	w := &c.Waves[c.Current]
	if w.Started.IsZero() {
		if c.Current > 0 {
			if left := c.Waves[c.Current-1].Finished.Add(c.Bake).Sub(now); left > 0 {
				c.Message = fmt.Sprintf("baking wave %d (%s) until %s", c.Current, c.Waves[c.Current-1].Shard, now.Add(left).UTC().Format(time.RFC3339))
				return left
			}
		}
		w.Started = now.UTC()
		c.record(now, fmt.Sprintf("wave %d (shard %s, %d %s) started", c.Current+1, w.Shard, len(c.units(w)), c.what()))
	}
	units := c.units(w)
	var unfinished, succeeded, failed int
	var notCreated []unit
	for _, u := range units {
		t, err := m.tasks.Get(ctx, c.taskID(u))
		switch {
		case errors.Is(err, docstore.ErrNotFound):
			notCreated = append(notCreated, u)
		case err != nil:
			return again
		case !c.owns(t):
			// The unit cannot have its task: its ID is taken. It counts as failed, so a
			// campaign does not report a cluster upgraded that it never touched.
			failed++
			c.note(now, fmt.Sprintf("task %s belongs to campaign %s, not to this one: its %s is counted as failed", t.ID, t.Campaign, c.unitName(u)))
		case t.State == StateSucceeded:
			succeeded++
		case t.State == StateFailed || t.State == StateCancelled:
			failed++
		default:
			unfinished++
		}
	}
	w.Succeeded, w.Failed = succeeded, failed
	if ratio := float64(failed-w.AcceptedFailures) / float64(len(units)); ratio > *c.FailureThreshold {
		c.State = CampaignHalted
		c.record(now, fmt.Sprintf("halted: wave %d (shard %s) has %d failed of %d %s (%.0f%% > threshold %.0f%%); resume or cancel",
			c.Current+1, w.Shard, failed, len(units), c.what(), 100*ratio, 100**c.FailureThreshold))
		return 0
	}
	for _, u := range notCreated {
		if unfinished >= c.MaxInFlight {
			break
		}
		_, err := m.tasks.Create(ctx, c.task(u), now)
		if err != nil && !errors.Is(err, docstore.ErrAlreadyExists) {
			return again
		}
		unfinished++
		notCreated = notCreated[1:]
	}
	if unfinished > 0 || len(notCreated) > 0 {
		return again
	}
	w.Finished = now.UTC()
	c.record(now, fmt.Sprintf("wave %d (shard %s) finished: %d succeeded, %d failed", c.Current+1, w.Shard, succeeded, failed))
	if c.Current+1 == len(c.Waves) {
		c.State = CampaignSucceeded
		c.record(now, fmt.Sprintf("all %d waves done", len(c.Waves)))
		return 0
	}
	c.Current++
	return again
}

// Run reconciles every Running campaign each poll until ctx ends. One runner per region is
// enough (run it under the backend's leader lease); two would only repeat each other's
// conditional writes.
func (m *Campaigns) Run(ctx context.Context, poll time.Duration) {
	for ctx.Err() == nil {
		cs, err := m.List(ctx)
		if err == nil {
			for _, c := range cs {
				if c.State == CampaignRunning {
					_, _ = m.Reconcile(ctx, c.ID)
				}
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(poll):
		}
	}
}
