package maintenance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/openhcp/openhcp/internal/pkirotation"
)

// TypeRegionCertificateRotation rotates the region's own service certificates (or rolls one of
// its CAs over) through the PKI holder's rotation API, and checks by TLS handshakes that every
// listener of the region then serves a new certificate of the current CA.
const TypeRegionCertificateRotation = "region-certificate-rotation"

// Keys of Task.Params and Task.Data used by the region certificate rotation.
const (
	// ParamScope is what to rotate: "certificates" (the default) or "ca:<service|arm|person>".
	ParamScope = "scope"
	// DataServedBefore is what every listener served at check: a JSON object of listener name
	// to {serial, notBefore}.
	DataServedBefore = "servedBefore"
	// DataRotationRequested is when the holder took the request (RFC 3339).
	DataRotationRequested = "rotationRequested"
	// DataListenersRotated counts the listeners verify found serving a new certificate.
	DataListenersRotated = "listenersRotated"
)

// RegionPKI is the PKI holder's rotation API as the task type uses it (pkirotation.Client).
type RegionPKI interface {
	Request(ctx context.Context, key string, scope pkirotation.Scope) (*pkirotation.Rotation, error)
	Get(ctx context.Context, key string) (*pkirotation.Rotation, error)
	Region(ctx context.Context) (*pkirotation.Region, error)
}

// RegionCertConfig tunes the region certificate rotation task type.
type RegionCertConfig struct {
	// PKI is the holder's rotation API; nil where the region has none (make deploy, whose
	// charts' Secrets the Key Vault CSI driver rotates): the task then fails saying so.
	PKI RegionPKI
	// CAFile is the service CA file every listener's certificate must chain to, read at each
	// probe (it changes in a rollover).
	CAFile string
	// Poll is how often a rotation under way is looked at (default 2s).
	Poll time.Duration
	// Estimate is how long a rotation is expected to take, for blackouts (default 30m; a CA
	// rollover reloads every holder three times, restarting the Maestro servers and agents).
	Estimate time.Duration
}

// noRotationAPI is why a task fails where the maintenance service has no rotation API.
const noRotationAPI = "this region's PKI holder offers no rotation API to the maintenance service (--region-pki is not set): " +
	"under make deploy the charts' certificates are Secrets that the Key Vault CSI driver rotates, not a task"

// servedCert is what one listener served.
type servedCert struct {
	Serial    string    `json:"serial"`
	NotBefore time.Time `json:"notBefore"`
}

// RegionCertificateRotation returns the region certificate rotation task type. Its target is
// the region (Task.Region, the holder's region name); its steps:
//
//	check    the holder names this region; every listener it lists serves a certificate that
//	         verifies against the CA file now: record each one's serial (servedBefore)
//	request  ask the holder for the rotation of params.scope under the task's ID
//	wait     until the holder says the rotation is Done (Failed fails the task)
//	verify   every listener serves a certificate issued after the one recorded at check, which
//	         verifies against the CA file now; one still serving its old serial fails the task
//	         naming it
//
// The holder is idempotent on the key (the task ID): a request asked again after a crash
// returns the rotation already made, so the region is rotated once per task.
func RegionCertificateRotation(cfg RegionCertConfig) TaskType {
	if cfg.Poll <= 0 {
		cfg.Poll = 2 * time.Second
	}
	if cfg.Estimate <= 0 {
		cfg.Estimate = 30 * time.Minute
	}
	// region reads the holder's region and checks it is the task's.
	region := func(ctx context.Context, t *Task) (*pkirotation.Region, error) {
		if cfg.PKI == nil {
			return nil, Permanent(errors.New(noRotationAPI))
		}
		reg, err := cfg.PKI.Region(ctx)
		if errors.Is(err, pkirotation.ErrForbidden) {
			return nil, Permanent(err)
		}
		if err != nil {
			return nil, err
		}
		if reg.Name != t.Region {
			return nil, Permanent(fmt.Errorf("the task is for region %q, but this maintenance service's PKI holder holds region %q", t.Region, reg.Name))
		}
		if len(reg.Listeners) == 0 {
			return nil, Permanent(errors.New("the PKI holder lists no listener to verify the rotation on"))
		}
		return reg, nil
	}
	probe := func(ctx context.Context, reg *pkirotation.Region) ([]pkirotation.Served, error) {
		roots, err := pkirotation.ReadCAFile(cfg.CAFile)
		if err != nil {
			return nil, err
		}
		return pkirotation.Probe(ctx, reg.Listeners, roots), nil
	}
	scopeOf := func(t *Task) (pkirotation.Scope, error) {
		s, err := pkirotation.ParseScope(t.Params[ParamScope])
		if err != nil {
			return "", Permanent(fmt.Errorf("params.%s: %w", ParamScope, err))
		}
		return s, nil
	}
	return TaskType{Name: TypeRegionCertificateRotation, Region: true, MaxAttempts: 5, Estimate: cfg.Estimate, Params: []Param{
		{Name: ParamScope, Doc: "what to rotate: certificates (the default: every certificate of the region under its current CAs) or ca:service, ca:arm, ca:person (roll that CA over and renew what it signs)"},
	}, Steps: []Step{
		{Name: "check", Run: func(ctx context.Context, t *Task) (StepResult, error) {
			if t.Data[DataServedBefore] != "" {
				return StepResult{}, nil // recorded before a crash
			}
			if _, err := scopeOf(t); err != nil {
				return StepResult{}, err
			}
			reg, err := region(ctx, t)
			if err != nil {
				return StepResult{}, err
			}
			served, err := probe(ctx, reg)
			if err != nil {
				return StepResult{}, err
			}
			before := map[string]servedCert{}
			var bad []string
			for _, s := range served {
				if s.Err != nil {
					bad = append(bad, s.Err.Error())
					continue
				}
				before[s.Listener.Name] = servedCert{Serial: s.Cert.SerialNumber.String(), NotBefore: s.Cert.NotBefore}
			}
			if len(bad) > 0 {
				return StepResult{}, fmt.Errorf("before the rotation, not every listener serves a verified certificate: %s", strings.Join(bad, "; "))
			}
			b, err := json.Marshal(before)
			if err != nil {
				return StepResult{}, err
			}
			setData(t, DataServedBefore, string(b))
			return StepResult{}, nil
		}},
		{Name: "request", Run: func(ctx context.Context, t *Task) (StepResult, error) {
			if cfg.PKI == nil {
				return StepResult{}, Permanent(errors.New(noRotationAPI))
			}
			scope, err := scopeOf(t)
			if err != nil {
				return StepResult{}, err
			}
			rot, err := cfg.PKI.Request(ctx, t.ID, scope)
			switch {
			case errors.Is(err, pkirotation.ErrBusy):
				return StepResult{Wait: cfg.Poll, Message: "waiting for another rotation of the region to end: " + err.Error()}, nil
			case errors.Is(err, pkirotation.ErrKeyReused), errors.Is(err, pkirotation.ErrForbidden):
				return StepResult{}, Permanent(err)
			case errors.Is(err, pkirotation.ErrTooSoon):
				// The same CA was rolled over too recently: the task fails at once, with the
				// holder's time to retry, rather than waiting an hour holding the region lock.
				return StepResult{}, Permanent(err)
			case err != nil:
				return StepResult{}, err
			}
			setData(t, DataRotationRequested, rot.Requested.UTC().Format(time.RFC3339Nano))
			return StepResult{}, nil
		}},
		{Name: "wait", Run: func(ctx context.Context, t *Task) (StepResult, error) {
			if cfg.PKI == nil {
				return StepResult{}, Permanent(errors.New(noRotationAPI))
			}
			rot, err := cfg.PKI.Get(ctx, t.ID)
			switch {
			case errors.Is(err, pkirotation.ErrNotFound):
				return StepResult{}, Permanent(fmt.Errorf("the PKI holder no longer knows rotation %s (restarted?): %w", t.ID, err))
			case err != nil:
				return StepResult{}, err
			}
			switch rot.State {
			case pkirotation.StateDone:
				return StepResult{}, nil
			case pkirotation.StateFailed:
				return StepResult{}, Permanent(fmt.Errorf("the rotation of %s failed: %s", rot.Scope, rot.Message))
			}
			return StepResult{Wait: cfg.Poll, Message: fmt.Sprintf("the PKI holder rotates %s (since %s)", rot.Scope, rot.Requested.Format(time.RFC3339))}, nil
		}},
		{Name: "verify", Run: func(ctx context.Context, t *Task) (StepResult, error) {
			var before map[string]servedCert
			if err := json.Unmarshal([]byte(t.Data[DataServedBefore]), &before); err != nil {
				return StepResult{}, Permanent(fmt.Errorf("data.%s: %w", DataServedBefore, err))
			}
			scope, err := scopeOf(t)
			if err != nil {
				return StepResult{}, err
			}
			// Every listener serves a service-CA certificate: the ARM and person CAs sign only
			// client certificates, so their rollover leaves what the listeners serve as it was.
			expectNew := scope == pkirotation.ScopeCertificates || scope.CA() == "service"
			reg, err := region(ctx, t)
			if err != nil {
				return StepResult{}, err
			}
			served, err := probe(ctx, reg)
			if err != nil {
				return StepResult{}, err
			}
			var old, unreadable []string
			seen := map[string]bool{}
			for _, s := range served {
				seen[s.Listener.Name] = true
				if s.Err != nil {
					unreadable = append(unreadable, s.Err.Error())
					continue
				}
				was, ok := before[s.Listener.Name]
				// A new serial issued no earlier than the old one (certificate times are in whole
				// seconds, so a renewal within the second has the same notBefore).
				if expectNew && ok && (was.Serial == s.Cert.SerialNumber.String() || s.Cert.NotBefore.Before(was.NotBefore)) {
					old = append(old, fmt.Sprintf("%s (%s) still serves serial %s", s.Listener.Name, s.Listener.Address, s.Cert.SerialNumber))
				}
			}
			for name := range before {
				if !seen[name] {
					unreadable = append(unreadable, name+" is no longer listed by the PKI holder")
				}
			}
			slices.Sort(old)
			if len(old) > 0 {
				return StepResult{}, Permanent(fmt.Errorf("not rotated: %s", strings.Join(old, "; ")))
			}
			if len(unreadable) > 0 {
				slices.Sort(unreadable)
				return StepResult{}, fmt.Errorf("after the rotation: %s", strings.Join(unreadable, "; "))
			}
			setData(t, DataListenersRotated, strconv.Itoa(len(served)))
			setData(t, DataOutcome, "rotated")
			return StepResult{}, nil
		}},
	}}
}
