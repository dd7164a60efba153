package server

import "unicode/utf8"

// Bounds on what a caller can make the audit log store. Every call is recorded, refused ones
// included, and a caller without a certificate can call as often as it likes: without these,
// it could grow the table until inserts fail, and then every admin call answers 503. How many
// refused calls are recorded is refusallimit's (the break-glass gateway shares the table and
// the rule).

// maxReason bounds a reason, from the body or the X-Admin-Reason header; a longer one is a
// 400, recorded with the reason cut to this length and marked.
const maxReason = 1024

// maxPath bounds the path recorded (the request line can be far longer).
const maxPath = 2048

// maxMethod bounds the method recorded: a request's method is any token the caller sends (the
// catch-all route takes every method), refused callers' included. HTTP's methods and the
// registered extension methods are all shorter, so they are recorded whole.
const maxMethod = 32

// truncatedMark ends a recorded value that was cut.
const truncatedMark = "…[truncated]"

// cut returns s cut to at most n bytes on a UTF-8 boundary, marked when cut.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + truncatedMark
}
