package tlsconfig

import (
	"crypto/tls"

	"github.com/prometheus/client_golang/prometheus"
)

// HandshakeMetric counts a service's server-side TLS handshakes by listener and by whether they
// resumed a session: a burst of resumed="false" is the storm of full handshakes that session
// resumption exists to avoid (docs/performance.md, "TLS handshakes: full against resumed").
type HandshakeMetric struct {
	total *prometheus.CounterVec
}

// NewHandshakeMetric registers <service>_tls_handshakes_total{listener,resumed} with reg.
func NewHandshakeMetric(reg prometheus.Registerer, service string) (*HandshakeMetric, error) {
	total := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: service + "_tls_handshakes_total",
		Help: "TLS handshakes whose certificates verified, by listener and whether a session was resumed.",
	}, []string{"listener", "resumed"})
	if err := reg.Register(total); err != nil {
		return nil, err
	}
	return &HandshakeMetric{total: total}, nil
}

// Count makes cfg (a server config of Files.Server or Files.ServerClientAuth; nil for
// plaintext is ignored) count its handshakes as listener. Call it before the config is handed
// to a server or cloned (gRPC's credentials.NewTLS clones).
func (m *HandshakeMetric) Count(cfg *tls.Config, listener string) {
	if cfg == nil {
		return
	}
	full, resumed := m.total.WithLabelValues(listener, "false"), m.total.WithLabelValues(listener, "true")
	CountHandshakes(cfg, func(r bool) {
		if r {
			resumed.Inc()
		} else {
			full.Inc()
		}
	})
}
