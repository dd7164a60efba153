package frontend

import (
	"crypto/rand"
	"encoding/base32"
	"fmt"
	"math"
	"strings"
	"time"
)

// newUUID returns a random (version 4) UUID.
func newUUID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

var csIDEncoding = base32.HexEncoding.WithPadding(base32.NoPadding)

// newClusterServiceID returns a Cluster Service cluster ID: 160 random bits as 32 characters of
// lowercase base32hex ([0-9a-v]).
func newClusterServiceID() string {
	var b [20]byte
	rand.Read(b[:])
	return strings.ToLower(csIDEncoding.EncodeToString(b[:]))
}

// seconds rounds a duration up to whole seconds, as Retry-After wants.
func seconds(d time.Duration) int {
	if d <= 0 {
		return 0
	}
	return int(math.Ceil(d.Seconds()))
}

func (s *Server) retryAfterSeconds() int { return max(seconds(s.cfg.RetryAfter), 1) }

func itoa(n int) string { return fmt.Sprint(n) }
