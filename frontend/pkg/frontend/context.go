package frontend

import (
	"context"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/openhcp/openhcp/frontend/pkg/api"
	"github.com/openhcp/openhcp/internal/armdoc"
	"github.com/openhcp/openhcp/internal/logattr"
)

// middleware is one step of the request pipeline; it calls next to continue.
type middleware func(w http.ResponseWriter, r *http.Request, next http.HandlerFunc)

// chain wraps h in mws; the first middleware runs first.
func chain(h http.HandlerFunc, mws ...middleware) http.HandlerFunc {
	for i := len(mws) - 1; i >= 0; i-- {
		mw, next := mws[i], h
		h = func(w http.ResponseWriter, r *http.Request) { mw(w, r, next) }
	}
	return h
}

// requestInfo is what the middlewares learn about a request. It is one mutable value in the
// context, set up by the first middleware, so later steps (and the ServeMux, which copies
// nothing back) all see the same record.
type requestInfo struct {
	start           time.Time
	requestID       string
	clientRequestID string
	correlationID   string
	// base is the server's logger, and log the request's (logger), made from it on first use.
	base *slog.Logger
	log  atomic.Pointer[slog.Logger]
	// originalPath is the path as the client sent it; the routed path is lowercased.
	originalPath string
	// route is the matched pattern, for metrics and logs.
	route string
	// apiVersion and version are set on resource routes.
	apiVersion string
	version    api.Version
	// subscription is the registration record, when the route checks it (nil if unknown).
	subscription *armdoc.SubscriptionDocument
	body         []byte
}

// logger is the request's logger: the server's with the request's IDs (idAttrs). It is made on
// first use, because most requests log only their request line, which carries the IDs itself
// (middlewareLogging), and a logger With attributes formats them at once.
func (ri *requestInfo) logger() *slog.Logger {
	if l := ri.log.Load(); l != nil {
		return l
	}
	l := ri.base.With(ri.idAttrs()...)
	if !ri.log.CompareAndSwap(nil, l) {
		return ri.log.Load()
	}
	return l
}

// idAttrs are the request's IDs as every line of its log carries them.
func (ri *requestInfo) idAttrs() []any {
	return []any{
		logattr.RequestID(ri.requestID),
		logattr.ClientRequestID(ri.clientRequestID),
		logattr.CorrelationRequestID(ri.correlationID),
	}
}

type infoKey struct{}

// info returns the request's record; requests that skipped the middlewares (tests calling a
// handler directly) get a fresh one.
func info(r *http.Request) *requestInfo {
	if ri, ok := r.Context().Value(infoKey{}).(*requestInfo); ok {
		return ri
	}
	ri := &requestInfo{start: time.Now(), base: slog.Default(), originalPath: r.URL.Path}
	ri.log.Store(slog.Default())
	return ri
}

func withInfo(ctx context.Context, ri *requestInfo) context.Context {
	return context.WithValue(ctx, infoKey{}, ri)
}
