package maestrogate

import "sync"

// TLS record content types (RFC 8446 5.1, RFC 5246 6.2.1).
const (
	recordChangeCipherSpec = 20
	recordAlert            = 21
	recordHandshake        = 22
	recordApplicationData  = 23
)

// maxRecordBody is the largest body a TLS record may have (2^14 plus expansion).
const maxRecordBody = 1<<14 + 2048

// Proof follows one forwarded connection and tells when it is proven (ForwardLimits.Proof). The
// forward calls FromCaller with what the caller sent before it writes it to the target, and
// FromTarget with what the target sent, from two goroutines.
type Proof interface {
	FromCaller(b []byte)
	// FromTarget reports whether the connection is proven now.
	FromTarget(b []byte) bool
}

// ClientCertProof is a ForwardLimits.Proof for a TLS pass-through to a server that requires a
// client certificate signed by its CA and closes a connection whose handshake failed (mosquitto
// as the region runs it; TLS 1.2 or 1.3). It reads the record headers of what the server sends
// (5 bytes in the clear: type, version, length) and proves a connection once the server has
// answered two of the caller's turns with application data: a burst of the server's that begins,
// on a record boundary, with an application_data record, after the caller sent something since
// the server's last burst.
//
// Why that is a proof, and a plain count of the conversation's turns is not (seen with the real
// broker and openssl s_client -msg): a caller with no certificate, or one another CA signed, gets
// an answer to its second flight too, a fatal alert, after which the server closes. Before the
// server has verified the client's certificate (and, for the handshake to finish, its
// CertificateVerify and Finished) all it sends is its first flight (a ServerHello record first;
// before it, under TLS 1.3, a HelloRetryRequest, also a plaintext handshake record) and one
// alert: at most one application_data burst (TLS 1.3 encrypts the alert; TLS 1.2 sends it as an
// alert record), and then the server closes, which closes the forwarded connection at once. A
// verified client gets session tickets (TLS 1.3) and then its MQTT answers (CONNACK, SUBACK,
// PUBACK): two. The count relies on the server writing a flight at once (OpenSSL buffers one and
// writes it whole), so that one flight is not read as two bursts with a caller's bytes between.
//
// It holds the same for Maestro's gRPC server (grpc-go, Go's TLS 1.3 with a client certificate
// required; seen with the real server, TestClientCertProofGRPC and mgmtcluster
// TestMaestroGRPCOutlastsAFlood). Go's server buffers its first flight and writes it whole (17 KB
// with the region's certificate, read by the forward at once), and an HTTP/2 server speaks first
// only after the handshake: its SETTINGS come after it verified the client's certificate. A
// caller without one, or with another CA's, gets one encrypted alert after its second flight and
// the server closes. A verified client gets a session ticket (when it offers resumption) and
// the server's SETTINGS after its second flight, one answer, and the answer to its first call,
// or a SETTINGS or PING acknowledgement after bytes of its own, the second: a gRPC connection
// that never calls stays unproven.
func ClientCertProof() Proof {
	return &clientCertProof{}
}

type clientCertProof struct {
	mu       sync.Mutex
	hdr      [5]byte
	nhdr     int
	left     int  // bytes of the server's current record still to come
	heard    bool // the caller sent something since the server's last burst
	answers  int  // server bursts that began with application data after the caller's turn
	notTLS   bool // the server sent something that is not TLS records: never proven
	provenAt bool
}

func (p *clientCertProof) FromCaller(b []byte) {
	if len(b) == 0 {
		return
	}
	p.mu.Lock()
	p.heard = true
	p.mu.Unlock()
}

func (p *clientCertProof) FromTarget(b []byte) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(b) == 0 || p.provenAt || p.notTLS {
		return p.provenAt
	}
	// A burst begins a turn only on a record boundary (the rest of a record is its own
	// record's) and after the caller spoke.
	turn := p.heard && p.left == 0 && p.nhdr == 0
	p.heard = false
	first := true
	for len(b) > 0 {
		if p.left > 0 {
			k := min(p.left, len(b))
			p.left -= k
			b = b[k:]
			continue
		}
		k := copy(p.hdr[p.nhdr:], b)
		p.nhdr += k
		b = b[k:]
		if p.nhdr < len(p.hdr) {
			break
		}
		p.nhdr = 0
		p.left = int(p.hdr[3])<<8 | int(p.hdr[4])
		if p.hdr[1] != 3 || p.left == 0 || p.left > maxRecordBody || p.hdr[0] < recordChangeCipherSpec || p.hdr[0] > recordApplicationData {
			p.notTLS = true
			return false
		}
		if first && turn && p.hdr[0] == recordApplicationData {
			p.answers++
		}
		first = false
	}
	p.provenAt = p.answers >= 2
	return p.provenAt
}
