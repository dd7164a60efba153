package pkirotation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/openhcp/openhcp/internal/identity"
)

// Rotate carries out one rotation and returns once every holder of the region's certificates
// serves the new files (the launcher's RotateCertificates or RollCA).
type Rotate func(ctx context.Context, scope Scope) error

// ServerConfig is what the holder's side needs.
type ServerConfig struct {
	// Rotate does the work; the server runs one rotation at a time.
	Rotate Rotate
	// Region describes the region at the moment it is asked.
	Region func() Region
	// TrustDomain of the callers' SPIFFE IDs; the one caller admitted is the maintenance
	// workload's ID in it.
	TrustDomain string
	Log         *slog.Logger
	Now         func() time.Time
	// MinSpacing is the least time between two requested rollovers of the same CA
	// (DefaultMinSpacing when 0): a rollover ends by dropping the previous CA, so rollovers in
	// quick succession would cut off certificates handed out under a CA moments before.
	MinSpacing time.Duration
	// Keep is how long a finished rotation is remembered (DefaultKeep when 0), and
	// MaxRemembered how many at most (DefaultMaxRemembered when 0): asking again with a key
	// is idempotent within that bound.
	Keep          time.Duration
	MaxRemembered int
}

// Defaults of ServerConfig.
const (
	DefaultMinSpacing    = time.Hour
	DefaultKeep          = 7 * 24 * time.Hour
	DefaultMaxRemembered = 256
)

// Server is the holder's side of the API. Its rotations live in memory: the holder that runs
// them is the process that would forget them (the launcher; a new launcher is a new region).
type Server struct {
	cfg    ServerConfig
	caller identity.ID
	ctx    context.Context
	stop   context.CancelFunc
	wg     sync.WaitGroup

	mu        sync.Mutex
	rotations map[string]*Rotation
	running   string // the key of the rotation under way, "" when none
	// lastRollover is when each CA's latest rollover was asked for; one entry per CA, kept
	// even when its rotation is forgotten.
	lastRollover map[Scope]time.Time
}

// maxBody bounds a request body: a key and a scope.
const maxBody = 4 << 10

// NewServer returns the API; Close stops a rotation under way.
func NewServer(cfg ServerConfig) (*Server, error) {
	if cfg.Rotate == nil || cfg.Region == nil {
		return nil, errors.New("pkirotation: Rotate and Region are required")
	}
	caller, ok := identity.Of(identity.Maintenance, cfg.TrustDomain)
	if !ok || cfg.TrustDomain == "" {
		return nil, fmt.Errorf("pkirotation: trust domain %q", cfg.TrustDomain)
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.MinSpacing == 0 {
		cfg.MinSpacing = DefaultMinSpacing
	}
	if cfg.Keep == 0 {
		cfg.Keep = DefaultKeep
	}
	if cfg.MaxRemembered <= 0 {
		cfg.MaxRemembered = DefaultMaxRemembered
	}
	ctx, stop := context.WithCancel(context.Background())
	return &Server{cfg: cfg, caller: caller, ctx: ctx, stop: stop, rotations: map[string]*Rotation{}, lastRollover: map[Scope]time.Time{}}, nil
}

// Close cancels a rotation under way and waits for it.
func (s *Server) Close() {
	s.stop()
	s.wg.Wait()
}

// Handler serves the API:
//
//	POST /v1/rotations         {"key","scope"}: 202 with a new rotation, 200 with the one of
//	                           that key; 409 when another runs (busy), the key is another
//	                           scope's, or the same CA was rolled over less than MinSpacing
//	                           ago (too soon; the message and Retry-After say when)
//	GET  /v1/rotations/{key}   the rotation, or 404
//	GET  /v1/region            the region's name and the listeners serving its certificates
//
// Every request must come over mutual TLS from the maintenance workload (its SPIFFE ID, verified
// by the listener's client CA: the service CA alone); any other identity is 403.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/rotations", s.request)
	mux.HandleFunc("GET /v1/rotations/{key}", s.get)
	mux.HandleFunc("GET /v1/region", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, s.cfg.Region())
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := s.authorize(r); err != nil {
			s.cfg.Log.Warn("rotation API refused a caller", "error", err, "method", r.Method, "path", r.URL.Path)
			writeJSON(w, http.StatusForbidden, apiError{Code: "Forbidden", Message: err.Error()})
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// authorize admits the maintenance workload only: a verified chain, still within its validity,
// whose leaf carries its ID.
func (s *Server) authorize(r *http.Request) error {
	if r.TLS == nil {
		return errors.New("not over TLS")
	}
	// The handshake verified the chain once; the caller keeps its connection alive, so the chain
	// must still be valid at this request.
	if err := identity.CheckValidAt(r.TLS.VerifiedChains, time.Now()); err != nil {
		return err
	}
	id, err := identity.FromVerifiedChains(r.TLS.VerifiedChains)
	if err != nil {
		return err
	}
	if id != s.caller {
		return fmt.Errorf("%s may not rotate the region's certificates; only %s may", id, s.caller)
	}
	return nil
}

type apiError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

type rotationRequest struct {
	Key   string `json:"key"`
	Scope Scope  `json:"scope"`
}

func (s *Server) request(w http.ResponseWriter, r *http.Request) {
	var in rotationRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		writeJSON(w, http.StatusBadRequest, apiError{Code: "InvalidRequest", Message: "body: " + err.Error()})
		return
	}
	scope, err := ParseScope(string(in.Scope))
	if err == nil {
		err = ValidKey(in.Key)
	}
	if err != nil {
		writeJSON(w, http.StatusBadRequest, apiError{Code: "InvalidRequest", Message: err.Error()})
		return
	}
	s.mu.Lock()
	now := s.cfg.Now().UTC()
	s.forget(now, 0)
	if got, ok := s.rotations[in.Key]; ok {
		out := *got
		s.mu.Unlock()
		if out.Scope != scope {
			writeJSON(w, http.StatusConflict, apiError{Code: "KeyReused", Message: fmt.Sprintf("rotation %s is of scope %s, not %s", in.Key, out.Scope, scope)})
			return
		}
		writeJSON(w, http.StatusOK, out)
		return
	}
	if s.running != "" {
		busy := s.running
		s.mu.Unlock()
		writeJSON(w, http.StatusConflict, apiError{Code: "Busy", Message: "rotation " + busy + " runs"})
		return
	}
	if last, ok := s.lastRollover[scope]; ok && now.Before(last.Add(s.cfg.MinSpacing)) {
		next := last.Add(s.cfg.MinSpacing)
		s.mu.Unlock()
		w.Header().Set("Retry-After", strconv.Itoa(int(next.Sub(now)/time.Second)+1))
		writeJSON(w, http.StatusConflict, apiError{Code: "TooSoon", Message: fmt.Sprintf(
			"%s was rolled over at %s; rollovers of one CA are at least %s apart, so that certificates handed out under its current CA (an SRE's) are not cut off by rollovers in quick succession: retry at or after %s",
			scope, last.Format(time.RFC3339), s.cfg.MinSpacing, next.Format(time.RFC3339))})
		return
	}
	s.forget(now, 1)
	rot := &Rotation{Key: in.Key, Scope: scope, State: StateRunning, Requested: now}
	s.rotations[in.Key], s.running = rot, in.Key
	if scope != ScopeCertificates {
		s.lastRollover[scope] = now
	}
	out := *rot
	s.wg.Add(1)
	s.mu.Unlock()
	s.cfg.Log.Info("rotation requested", "key", in.Key, "scope", string(scope))
	go s.run(in.Key, scope)
	writeJSON(w, http.StatusAccepted, out)
}

// forget drops finished rotations older than Keep, then the oldest finished ones beyond
// MaxRemembered less room (the rotation about to be added); the one under way stays. s.mu is
// held.
func (s *Server) forget(now time.Time, room int) {
	var finished []*Rotation
	for k, r := range s.rotations {
		switch {
		case k == s.running:
		case now.Sub(r.Finished) > s.cfg.Keep:
			delete(s.rotations, k)
		default:
			finished = append(finished, r)
		}
	}
	extra := len(s.rotations) - (s.cfg.MaxRemembered - room)
	if extra <= 0 {
		return
	}
	slices.SortFunc(finished, func(a, b *Rotation) int { return a.Finished.Compare(b.Finished) })
	for _, r := range finished[:min(extra, len(finished))] {
		delete(s.rotations, r.Key)
	}
}

func (s *Server) run(key string, scope Scope) {
	defer s.wg.Done()
	err := s.cfg.Rotate(s.ctx, scope)
	s.mu.Lock()
	defer s.mu.Unlock()
	rot := s.rotations[key]
	rot.Finished, s.running = s.cfg.Now().UTC(), ""
	if err != nil {
		rot.State, rot.Message = StateFailed, err.Error()
		s.cfg.Log.Warn("rotation failed", "key", key, "scope", string(scope), "error", err)
		return
	}
	rot.State, rot.Message = StateDone, "every holder serves the new files"
	s.cfg.Log.Info("rotation done", "key", key, "scope", string(scope))
}

func (s *Server) get(w http.ResponseWriter, r *http.Request) {
	key := r.PathValue("key")
	s.mu.Lock()
	got, ok := s.rotations[key]
	var out Rotation
	if ok {
		out = *got
	}
	s.mu.Unlock()
	if !ok {
		writeJSON(w, http.StatusNotFound, apiError{Code: "NotFound", Message: fmt.Sprintf("no rotation %.64q", key)})
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
