// Package maestro is Cluster Service's client for Maestro: it sends ManifestWorks to management
// clusters (Maestro consumers) and reads their status and feedback back. It is a thin layer over
// Maestro's own gRPC source work client (grpcsource) and REST API, adding per-consumer clients,
// create-or-update, retries and a fan-out watch.
package maestro

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/openshift-online/maestro/pkg/api/openapi"
	"github.com/openshift-online/maestro/pkg/client/cloudevents/grpcsource"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	workv1client "open-cluster-management.io/api/client/work/clientset/versioned/typed/work/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	cecommon "open-cluster-management.io/sdk-go/pkg/cloudevents/clients/common"
	ceutils "open-cluster-management.io/sdk-go/pkg/cloudevents/clients/utils"
	ceclients "open-cluster-management.io/sdk-go/pkg/cloudevents/generic/clients"
	grpcoptions "open-cluster-management.io/sdk-go/pkg/cloudevents/generic/options/grpc"

	"github.com/openhcp/openhcp/internal/backoff"
)

// DefaultSourceID is the Maestro source Cluster Service publishes as.
const DefaultSourceID = "cluster-service"

// Config says where Maestro is.
type Config struct {
	// GRPCAddr is host:port of Maestro's gRPC source server.
	GRPCAddr string
	// RESTURL is the base URL of Maestro's REST API, e.g. http://127.0.0.1:8000.
	RESTURL string
	// SourceID names this client's works in Maestro; default "cluster-service". Works are
	// scoped by source: another source never sees or changes them.
	SourceID string
	// TLS is used for both gRPC and REST. Nil means plaintext, which New accepts only when both
	// endpoints are on a loopback address.
	TLS *tls.Config
	// ReadBeforeWrite makes Apply read every work before it creates or patches it, instead of
	// relying on its memory of what it wrote (see Apply). The rule before 2026-11-24, kept as a
	// benchmark's baseline (Cluster Service's --maestro-read-before-write); default false.
	ReadBeforeWrite bool
}

// WorkEvent is one change of a work on a consumer.
type WorkEvent struct {
	// Type is Added the first time a watch reports a work, Modified afterwards, and Deleted once
	// the agent has removed the work's objects.
	Type watch.EventType
	// Work carries metadata, status conditions and feedback. Events that come from status updates
	// may lack the spec; use Get for it.
	Work *workv1.ManifestWork
}

// Client talks to one Maestro server. It is safe for concurrent use.
type Client struct {
	cfg Config
	log *slog.Logger
	// klogger is log for sdk-go, which logs through klog.FromContext of the caller's context.
	klogger logr.Logger
	ctx     context.Context // lifetime of the gRPC subscriptions and watches
	cancel  context.CancelFunc
	api     *openapi.APIClient
	// dialer caches one gRPC connection that every consumer's work client shares.
	dialer *grpcoptions.GRPCDialer

	mu        sync.Mutex
	consumers map[string]*consumerClient
}

// consumerClient is the work client of one consumer. grpcsource's WorkV1Interface.ManifestWorks
// sets the namespace on a single shared ManifestWork client, so one interface used for several
// consumers would send works to whichever consumer was named last. Each consumer therefore gets
// its own work client (and its own subscription on the shared connection), made once.
type consumerClient struct {
	name  string
	works workv1client.ManifestWorkInterface
	hub   *hub

	mu sync.Mutex
	// held is, per work, a digest of the labels, annotations and spec (canonicalJSON) that this
	// client last wrote or read for it: Apply's memory of what Maestro holds (see Apply).
	held map[string][sha256.Size]byte
}

// heldDigest is what this client last wrote or read for the work, and whether it knows.
func (cc *consumerClient) heldDigest(name string) ([sha256.Size]byte, bool) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	d, ok := cc.held[name]
	return d, ok
}

// hold remembers the digest of what Maestro holds for the work (on a write or a read).
func (cc *consumerClient) hold(name string, d [sha256.Size]byte) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	cc.held[name] = d
}

// forget drops what is remembered of the work (it is deleted, or being deleted).
func (cc *consumerClient) forget(name string) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	delete(cc.held, name)
}

// setReconnectBackoff replaces sdk-go's reconnect backoff, clients.DelayFn. Upstream's starts at
// 5–10 s, grows ×5 to a minute and resets only after 10 quiet minutes, and it is one value for
// the whole process: after a first Maestro restart, the next within 10 minutes cost Cluster
// Service up to a minute of refused publishes (measured: 42 s). Ours goes 0.5 s, 1 s, 2 s, then
// 4 s, and resets after a quiet minute. Cluster Service is the only sdk-go user in its process.
var setReconnectBackoff sync.Once

// reconnectDelays is the reconnect backoff setReconnectBackoff installs: 0.5 s doubling to 4 s,
// each with up to 50 % jitter (so never over 6 s), reset after a quiet minute. The cap was 15 s
// (up to 22.5 s with the jitter): after a one-minute Maestro server outage Cluster Service's
// publishes were refused ("the cloudevents client is not ready") for 18 s after the server was
// back (docs/reliability.md). An attempt every 4-6 s against a server that is away costs nothing.
func reconnectDelays() func() time.Duration {
	return wait.Backoff{Duration: 500 * time.Millisecond, Factor: 2, Jitter: 0.5, Steps: 4, Cap: 4 * time.Second}.
		DelayWithReset(clock.RealClock{}, time.Minute)
}

// New makes a client. It does not wait for Maestro: connections are made lazily and re-made
// after failures, so a Cluster Service can start before Maestro. The client lives until ctx ends
// or Close is called.
func New(ctx context.Context, cfg Config, log *slog.Logger) (*Client, error) {
	if log == nil {
		log = slog.Default()
	}
	if cfg.SourceID == "" {
		cfg.SourceID = DefaultSourceID
	}
	if cfg.GRPCAddr == "" || cfg.RESTURL == "" {
		return nil, errors.New("maestro client: GRPCAddr and RESTURL are required")
	}
	rest, err := url.Parse(cfg.RESTURL)
	if err != nil || (rest.Scheme != "http" && rest.Scheme != "https") || rest.Host == "" {
		return nil, fmt.Errorf("maestro client: RESTURL %q is not an http(s) URL", cfg.RESTURL)
	}
	grpcHost, _, err := net.SplitHostPort(cfg.GRPCAddr)
	if err != nil {
		return nil, fmt.Errorf("maestro client: GRPCAddr %q: %w", cfg.GRPCAddr, err)
	}
	if cfg.TLS == nil && (!isLoopback(grpcHost) || !isLoopback(rest.Hostname())) {
		return nil, fmt.Errorf("maestro client: plaintext to %s / %s refused; set TLS for a non-loopback Maestro", cfg.GRPCAddr, cfg.RESTURL)
	}
	if cfg.TLS != nil && rest.Scheme != "https" {
		return nil, fmt.Errorf("maestro client: TLS is set but RESTURL %q is not https", cfg.RESTURL)
	}

	apiCfg := openapi.NewConfiguration()
	apiCfg.Servers = openapi.ServerConfigurations{{URL: cfg.RESTURL}}
	apiCfg.UserAgent = "openhcp-cluster-service"
	transport := http.DefaultTransport.(*http.Transport).Clone()
	if cfg.TLS != nil {
		transport.TLSClientConfig = cfg.TLS.Clone()
	}
	apiCfg.HTTPClient = &http.Client{Transport: transport, Timeout: 30 * time.Second}

	dialer := &grpcoptions.GRPCDialer{
		URL:       cfg.GRPCAddr,
		TLSConfig: cfg.TLS,
		// Maestro's server accepts pings no more often than every 5 s, and only with a stream
		// open, which this client always has (its subscription).
		KeepAliveOptions: grpcoptions.KeepAliveOptions{Enable: true, Time: 30 * time.Second, Timeout: 10 * time.Second},
	}

	setReconnectBackoff.Do(func() { ceclients.DelayFn = reconnectDelays() })

	// sdk-go logs through klog.FromContext: route it into our slog handler.
	klogger := logr.FromSlogHandler(demoteInfo{log.Handler()})
	ctx = klog.NewContext(ctx, klogger)
	ctx, cancel := context.WithCancel(ctx)
	return &Client{
		cfg:       cfg,
		log:       log,
		klogger:   klogger,
		ctx:       ctx,
		cancel:    cancel,
		api:       openapi.NewAPIClient(apiCfg),
		dialer:    dialer,
		consumers: map[string]*consumerClient{},
	}, nil
}

// Close ends every subscription and watch and closes the gRPC connection.
func (c *Client) Close() error {
	c.cancel()
	return c.dialer.Close()
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// consumer returns the work client of one consumer, making it on first use.
func (c *Client) consumer(name string) (*consumerClient, error) {
	if name == "" {
		return nil, errors.New("maestro: consumer name is empty")
	}
	if err := c.ctx.Err(); err != nil {
		return nil, fmt.Errorf("maestro client closed: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if cc, ok := c.consumers[name]; ok {
		return cc, nil
	}
	// ServerHealthinessTimeout makes a silently dead stream reconnect: Maestro sends a heartbeat
	// every 10 s by default.
	healthiness := 30 * time.Second
	wc, err := grpcsource.NewMaestroGRPCSourceWorkClient(c.ctx, &slogAdapter{log: c.log}, c.api,
		&grpcoptions.GRPCOptions{Dialer: c.dialer, ServerHealthinessTimeout: &healthiness}, c.cfg.SourceID)
	if err != nil {
		return nil, fmt.Errorf("maestro work client for consumer %s: %w", name, err)
	}
	cc := &consumerClient{name: name, works: wc.ManifestWorks(name), hub: newHub(), held: map[string][sha256.Size]byte{}}
	c.consumers[name] = cc
	go c.pump(cc)
	return cc, nil
}

// Apply creates the ManifestWork on the consumer, or updates it if it exists (the caller sets
// ServerSideApply in ManifestConfigs). Labels, annotations and the whole spec are replaced by
// work's; an unchanged work is not re-sent.
//
// Every Create and Patch of Maestro's client reads the work over REST first, so Apply reads it
// itself only when it must. It remembers a digest of what it last wrote or read for each work
// (and what List returned): a work it has no memory of is created straight away (an existing one
// answers AlreadyExists, and Apply then reads and compares as below); a work whose remembered
// content differs from work's is patched straight away. Only when the memory says the work is
// unchanged does Apply read it and compare, so the memory never causes a write to be skipped;
// a stale memory costs at most a patch that changes nothing but the generation.
func (c *Client) Apply(ctx context.Context, consumer string, work *workv1.ManifestWork) error {
	if work == nil || work.Name == "" {
		return errors.New("maestro apply: work has no name")
	}
	cc, err := c.consumer(consumer)
	if err != nil {
		return err
	}
	ctx = klog.NewContext(ctx, c.klogger)
	desired := work.DeepCopy()
	desired.Namespace = consumer
	want, err := digest(desired)
	if err != nil {
		return fmt.Errorf("maestro apply work %s/%s: %w", consumer, work.Name, err)
	}
	err = retry(ctx, true, func() error {
		if !c.cfg.ReadBeforeWrite {
			// Write straight away when memory says how; fall through to the read when the
			// write finds the work otherwise than remembered, or memory says unchanged.
			switch have, known := cc.heldDigest(desired.Name); {
			case !known:
				err := create(ctx, cc, desired, want)
				if !apierrors.IsAlreadyExists(err) {
					return err
				}
			case have != want:
				err := patch(ctx, cc, desired, want)
				if !apierrors.IsNotFound(err) {
					return err
				}
			}
		}
		existing, err := cc.works.Get(ctx, desired.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			cc.forget(desired.Name)
			return create(ctx, cc, desired, want)
		}
		if err != nil {
			return err
		}
		have, err := digest(existing)
		if err != nil {
			return err
		}
		cc.hold(desired.Name, have)
		if have == want {
			return nil
		}
		return patch(ctx, cc, desired, want)
	})
	if err != nil {
		return refusal(consumer, work.Name, fmt.Errorf("maestro apply work %s/%s: %w", consumer, work.Name, err))
	}
	return nil
}

// RefusedError is Apply's answer when Maestro refuses the work as invalid: its source client
// validates every work before it sends it (sdk-go's ValidateWork, with the ManifestWork API's
// workvalidator: at most 500 KiB of manifests, each with a name), and answers a Kubernetes
// Invalid error without sending anything. The refusal is permanent for that work: sending it
// again, however often, gets the same answer, while an unavailable broker or a conflict (any
// other error of Apply) may pass on the next try. Caller: errors.As(err, new(*RefusedError)).
type RefusedError struct {
	Consumer, Work string
	// Reason is what the validator said, e.g. "the size of manifests is 612345 bytes which
	// exceeds the 512000 limit".
	Reason string
	Err    error
}

func (e *RefusedError) Error() string { return e.Err.Error() }
func (e *RefusedError) Unwrap() error { return e.Err }

// refusal is err as a *RefusedError when it is Maestro's refusal of the work as invalid, else
// err unchanged.
func refusal(consumer, name string, err error) error {
	var se apierrors.APIStatus
	if !apierrors.IsInvalid(err) || !errors.As(err, &se) {
		return err
	}
	reason := se.Status().Message
	if d := se.Status().Details; d != nil && len(d.Causes) > 0 {
		msgs := make([]string, 0, len(d.Causes))
		for _, c := range d.Causes {
			if c.Field != "" {
				msgs = append(msgs, c.Field+": "+c.Message)
			} else {
				msgs = append(msgs, c.Message)
			}
		}
		reason = strings.Join(msgs, "; ")
	}
	return &RefusedError{Consumer: consumer, Work: name, Reason: reason, Err: err}
}

// create sends desired as a new work and remembers its digest want.
func create(ctx context.Context, cc *consumerClient, desired *workv1.ManifestWork, want [sha256.Size]byte) error {
	fresh := desired.DeepCopy()
	fresh.ResourceVersion, fresh.Generation = "", 0
	if _, err := cc.works.Create(ctx, fresh, metav1.CreateOptions{}); err != nil {
		return err
	}
	cc.hold(desired.Name, want)
	return nil
}

// patch replaces the work's labels, annotations and spec with desired's and remembers its
// digest want. Maestro's client applies the patch to the work as it reads it, and sends the
// result with that work's generation.
func patch(ctx context.Context, cc *consumerClient, desired *workv1.ManifestWork, want [sha256.Size]byte) error {
	ops, err := replaceOps(desired)
	if err != nil {
		return err
	}
	if _, err := cc.works.Patch(ctx, desired.Name, types.JSONPatchType, ops, metav1.PatchOptions{}); err != nil {
		return err
	}
	cc.hold(desired.Name, want)
	return nil
}

// AnnotationRepublishedFrom marks a work that Republish sent again unchanged; its value is the
// generation the agent had not applied. Apply leaves it out of its comparison, so the Apply of an
// unchanged spec (after a Cluster Service restart) does not send the work once more, and an Apply
// of a new spec drops it with the other annotations.
const AnnotationRepublishedFrom = "openhcp.io/republished-from"

// LabelRepublished carries the same generation as AnnotationRepublishedFrom, as a label, because
// the pinned agent's work controller looks at a work again only when its spec or its labels
// change (ocm's manifestcontroller onUpdateFunc): a new generation or annotation alone leaves a
// work that is waiting out the controller's per-work failure backoff (5 ms doubling to 1000 s,
// reset only by such a change) waiting, and after a management kube-apiserver outage that backoff
// had grown to 40 s and more (docs/reliability.md, "Management kube-apiserver outage"). A label
// change makes the controller forget the backoff and apply the work at once. Apply leaves the
// label out of its comparison and drops it with the other labels, as it does the annotation.
const LabelRepublished = "openhcp.io/republished-from"

// Republish sends the work again, unchanged but as a new generation, so that an agent which lost
// the last spec update (the pinned agent's store race, docs/maestro.md) receives it once more and
// applies it, and an agent backing off from failed applies applies it now. It changes only
// AnnotationRepublishedFrom and LabelRepublished (republishOps), under a JSON patch "test" of
// the generation it read, so a concurrent Apply wins: the stale patch fails and Republish
// re-reads and retries. It returns the
// generation it republished, the one the agent had not applied.
func (c *Client) Republish(ctx context.Context, consumer, name string) (int64, error) {
	cc, err := c.consumer(consumer)
	if err != nil {
		return 0, err
	}
	ctx = klog.NewContext(ctx, c.klogger)
	var from int64
	err = retry(ctx, false, func() error {
		existing, err := cc.works.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		from = existing.Generation
		patch, err := republishOps(existing)
		if err != nil {
			return err
		}
		_, err = cc.works.Patch(ctx, name, types.JSONPatchType, patch, metav1.PatchOptions{})
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("maestro republish work %s/%s: %w", consumer, name, err)
	}
	return from, nil
}

// republishOps is Republish's JSON patch of existing: its annotations and labels, each with the
// republish mark of its generation added, under the precondition that the work is still at
// existing's generation.
func republishOps(existing *workv1.ManifestWork) ([]byte, error) {
	from := strconv.FormatInt(existing.Generation, 10)
	annotations := maps.Clone(existing.Annotations)
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[AnnotationRepublishedFrom] = from
	labels := maps.Clone(existing.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[LabelRepublished] = from
	b, err := json.Marshal([]map[string]any{
		// The precondition: Maestro's client applies the patch to the work as it is at patch
		// time, and an Apply since the read (another replica's) makes a new generation; the
		// patch then fails, and Republish reads again, instead of restoring the labels and
		// annotations it read over the Apply's.
		{"op": "test", "path": "/metadata/generation", "value": existing.Generation},
		{"op": "add", "path": "/metadata/annotations", "value": annotations},
		{"op": "add", "path": "/metadata/labels", "value": labels},
	})
	if err != nil {
		return nil, fmt.Errorf("republish patch of work %s: %w", existing.Name, err)
	}
	return b, nil
}

// replaceOps is the JSON patch that makes a work's labels, annotations and whole spec desired's
// ("add" replaces a whole value, so nothing of the old spec survives, unlike a merge patch).
func replaceOps(desired *workv1.ManifestWork) ([]byte, error) {
	return json.Marshal([]map[string]any{
		{"op": "add", "path": "/metadata/labels", "value": desired.Labels},
		{"op": "add", "path": "/metadata/annotations", "value": desired.Annotations},
		{"op": "add", "path": "/spec", "value": desired.Spec},
	})
}

// digest identifies the parts of w that Apply owns. Works are compared semantically
// (canonicalJSON): Maestro hands manifests back with their keys in another order, and an
// unneeded patch would still bump the work's generation.
func digest(w *workv1.ManifestWork) ([sha256.Size]byte, error) {
	b, err := canonicalJSON(w)
	if err != nil {
		return [sha256.Size]byte{}, err
	}
	return sha256.Sum256([]byte(b)), nil
}

// canonicalJSON is the JSON of the parts of w that Apply owns, with every object's keys sorted
// (a round trip through map[string]any) and empty maps and nil treated alike.
func canonicalJSON(w *workv1.ManifestWork) (string, error) {
	labels, annotations := w.Labels, w.Annotations
	if _, ok := annotations[AnnotationRepublishedFrom]; ok {
		annotations = maps.Clone(annotations)
		delete(annotations, AnnotationRepublishedFrom)
	}
	if _, ok := labels[LabelRepublished]; ok {
		labels = maps.Clone(labels)
		delete(labels, LabelRepublished)
	}
	if len(labels) == 0 {
		labels = nil
	}
	if len(annotations) == 0 {
		annotations = nil
	}
	b, err := json.Marshal(struct {
		Labels      map[string]string       `json:"labels"`
		Annotations map[string]string       `json:"annotations"`
		Spec        workv1.ManifestWorkSpec `json:"spec"`
	}{labels, annotations, w.Spec})
	if err != nil {
		return "", err
	}
	var generic any
	if err := json.Unmarshal(b, &generic); err != nil {
		return "", err
	}
	b, err = json.Marshal(generic)
	return string(b), err
}

// Delete requests deletion; a missing work is success. The agent removes the work's objects
// (per its DeleteOption) and a Deleted event follows on Watch.
func (c *Client) Delete(ctx context.Context, consumer, name string) error {
	cc, err := c.consumer(consumer)
	if err != nil {
		return err
	}
	ctx = klog.NewContext(ctx, c.klogger)
	cc.forget(name)
	err = retry(ctx, false, func() error {
		err := cc.works.Delete(ctx, name, metav1.DeleteOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("maestro delete work %s/%s: %w", consumer, name, err)
	}
	return nil
}

// AnnotationStatusGeneration is set by Get on the work it returns, never sent: the generation
// of the work the agent held when it wrote the status that Maestro has (Maestro's
// ObservedVersion; absent while there is no status). Maestro keeps only a status written for
// its current generation and disregards older ones, so a value below the work's generation
// means the agent has not reported on the current spec yet. StatusGeneration reads it.
const AnnotationStatusGeneration = "maestro.openhcp.io/status-generation"

// StatusGeneration is the generation the work's status was written for (0: no status yet).
func StatusGeneration(w *workv1.ManifestWork) int64 {
	if w == nil {
		return 0
	}
	n, _ := strconv.ParseInt(w.Annotations[AnnotationStatusGeneration], 10, 64)
	return n
}

// Get returns the work with status and feedback, and AnnotationStatusGeneration; a k8s
// apierrors NotFound when absent. It reads Maestro's REST API as grpcsource's Get does, keeping
// the status's ObservedVersion that grpcsource's conversion drops.
func (c *Client) Get(ctx context.Context, consumer, name string) (*workv1.ManifestWork, error) {
	if _, err := c.consumer(consumer); err != nil {
		return nil, err
	}
	id := ceutils.UID(c.cfg.SourceID, cecommon.ManifestWorkGR.String(), consumer, name)
	var rb *openapi.ResourceBundle
	err := retry(ctx, false, func() error {
		var resp *http.Response
		var err error
		rb, resp, err = c.api.DefaultAPI.ApiMaestroV1ResourceBundlesIdGet(ctx, id).Execute()
		if resp != nil && resp.StatusCode == http.StatusNotFound {
			return apierrors.NewNotFound(cecommon.ManifestWorkGR, name)
		}
		return err
	})
	if err != nil {
		if apierrors.IsNotFound(err) {
			return nil, err
		}
		return nil, fmt.Errorf("maestro get work %s/%s: %w", consumer, name, err)
	}
	w, err := grpcsource.ToManifestWork(rb)
	if err != nil {
		return nil, fmt.Errorf("maestro get work %s/%s: decode resource bundle %s: %w", consumer, name, id, err)
	}
	if v, ok := rb.Status["ObservedVersion"].(float64); ok && v > 0 {
		if w.Annotations == nil {
			w.Annotations = map[string]string{}
		}
		w.Annotations[AnnotationStatusGeneration] = strconv.FormatInt(int64(v), 10)
	}
	return w, nil
}

// List returns every work of this source on the consumer.
func (c *Client) List(ctx context.Context, consumer string) ([]workv1.ManifestWork, error) {
	cc, err := c.consumer(consumer)
	if err != nil {
		return nil, err
	}
	var out []workv1.ManifestWork
	opts := metav1.ListOptions{Limit: 500}
	for {
		var l *workv1.ManifestWorkList
		err := retry(ctx, false, func() error {
			var err error
			l, err = cc.works.List(ctx, opts)
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("maestro list works of %s: %w", consumer, err)
		}
		for i := range l.Items {
			if d, err := digest(&l.Items[i]); err == nil {
				cc.hold(l.Items[i].Name, d)
			}
		}
		out = append(out, l.Items...)
		if l.Continue == "" {
			return out, nil
		}
		opts.Continue = l.Continue
	}
}

// retry runs f until it succeeds, fails in a way that another try cannot fix, or 5 tries have
// been made. Writes retry NotFound (notFoundRetriable) because the agent's store can answer
// NotFound to a change made right after a watch event, and Conflict because a concurrent writer
// moved the work on; reads return NotFound at once, since it is an answer.
func retry(ctx context.Context, notFoundRetriable bool, f func() error) error {
	return backoff.Retry(ctx, backoff.Policy{Initial: 50 * time.Millisecond, Max: 400 * time.Millisecond}, 5, func(err error) bool {
		return retriable(err) && (notFoundRetriable || !apierrors.IsNotFound(err))
	}, func(context.Context) error { return f() })
}

func retriable(err error) bool {
	switch {
	case apierrors.IsInvalid(err), apierrors.IsBadRequest(err), apierrors.IsMethodNotSupported(err),
		errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return false
	}
	return true
}

// Watch streams status changes and deletions of this source's works on one consumer until ctx
// ends, starting with an Added event for every work that exists. A slow reader never holds up
// others: events for the same work are merged while they wait, so a reader always gets the
// latest state of each work.
func (c *Client) Watch(ctx context.Context, consumer string) (<-chan WorkEvent, error) {
	cc, err := c.consumer(consumer)
	if err != nil {
		return nil, err
	}
	s := cc.hub.subscribe()
	existing, err := c.List(ctx, consumer)
	if err != nil {
		cc.hub.unsubscribe(s)
		return nil, err
	}
	for i := range existing {
		s.offerInitial(&existing[i])
	}
	out := make(chan WorkEvent)
	go func() {
		defer close(out)
		defer cc.hub.unsubscribe(s)
		for {
			ev, ok := s.next(ctx, c.ctx)
			if !ok {
				return
			}
			select {
			case out <- ev:
			case <-ctx.Done():
				return
			case <-c.ctx.Done():
				return
			}
		}
	}()
	return out, nil
}

// pump keeps one grpcsource watch open per consumer for the client's lifetime and hands its
// events to the hub. grpcsource blocks its event delivery (for every consumer) until a watcher
// takes the event, and shares one watcher among all callers of Watch on a namespace, so exactly
// one reader, always draining, is the safe way to use it.
func (c *Client) pump(cc *consumerClient) {
	backoff.Reconnect(c.ctx, backoff.Policy{Initial: 100 * time.Millisecond, Max: 10 * time.Second}, func(ctx context.Context) (bool, error) {
		w, err := cc.works.Watch(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		c.log.Debug("maestro watch started", "consumer", cc.name)
		progressed := false
		for {
			select {
			case <-ctx.Done():
				w.Stop()
				drain(w.ResultChan())
				return false, ctx.Err()
			case ev, open := <-w.ResultChan():
				if !open {
					// The watcher ended its stream (grpcsource closes the channel when its
					// subscription ends): reading on would spin on the closed channel, so
					// open a new watch, backing off unless this one delivered anything.
					return progressed, errors.New("maestro watch closed its result channel")
				}
				progressed = true
				if work, ok := ev.Object.(*workv1.ManifestWork); ok {
					if ev.Type == watch.Deleted {
						cc.forget(work.Name)
					}
					cc.hub.publish(ev.Type, work)
				}
			}
		}
	}, func(err error, wait time.Duration) {
		c.log.Warn("maestro watch failed; retrying", "consumer", cc.name, "error", err, "retryIn", wait)
	})
}

// drain takes events a grpcsource watcher may still be sending after Stop, so its sender is
// not left blocked.
func drain(ch <-chan watch.Event) {
	for {
		select {
		case _, open := <-ch:
			if !open {
				return
			}
		case <-time.After(time.Second):
			return
		}
	}
}
