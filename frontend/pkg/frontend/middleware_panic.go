package frontend

import (
	"fmt"
	"net/http"
	"runtime/debug"
)

// middlewarePanic turns a panic in a handler into a 500 with an ARM body, and logs the stack.
func (s *Server) middlewarePanic(w http.ResponseWriter, r *http.Request, next http.HandlerFunc) {
	defer func() {
		v := recover()
		if v == nil {
			return
		}
		if v == http.ErrAbortHandler {
			panic(v)
		}
		info(r).logger().Error("panic in handler", "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
		if rec, ok := w.(*statusRecorder); ok && rec.status != 0 {
			return // the response has started; nothing sensible can be added
		}
		s.report(w, r, fmt.Errorf("panic: %v", v))
	}()
	next(w, r)
}
