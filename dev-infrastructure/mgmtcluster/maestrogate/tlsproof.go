package maestrogate

// TLS 1.2 record content types (RFC 5246, 6.2.1).
const (
	recordChangeCipherSpec = 20
	recordAlert            = 21
	recordHandshake        = 22
	recordApplicationData  = 23
)

// maxRecordBody is the largest body a TLS 1.2 record may have (2^14 plus expansion, RFC 5246 6.2.3).
const maxRecordBody = 1<<14 + 2048

// TLS12ClientProof is a ForwardLimits.Proof for a TLS pass-through to a server that requires a
// client certificate signed by its CA and speaks TLS 1.2 only (mosquitto as the region runs it).
// It reads the record headers of what the server sends (5 bytes in the clear: type, version,
// length) and proves a connection once the server sends an application_data record after its
// ChangeCipherSpec and the handshake record that follows it (its Finished). Under TLS 1.2 the
// server sends ChangeCipherSpec in a full handshake only after it verified the client's
// Certificate, CertificateVerify and Finished, and in a resumed one only to a client holding a
// session from such a handshake; and it sends application data (mosquitto: a CONNACK) only after
// its handshake completed, the client's Finished verified. A caller with no certificate, or one
// the CA did not sign, gets a handshake alert and the server closes: its connection is never
// proven, whatever it sent and however many times the conversation turned.
//
// A server that negotiates TLS 1.3 (its ServerHello carries supported_versions) proves no
// connection: TLS 1.3 hides the handshake in application_data records, and a server's answer
// to a client's certificate, a session ticket or an alert, looks alike. Nor does anything that
// is not TLS. Such connections stay closable for room, as an unproven one.
func TLS12ClientProof() func(fromServer []byte) bool {
	s := &tls12Scan{}
	return s.feed
}

// tls12Scan follows the records a TLS server sends.
type tls12Scan struct {
	hdr     [5]byte
	nhdr    int
	typ     byte   // the current record's type
	left    int    // bytes of the current record's body still to come
	first   []byte // the first record's body, kept to read the ServerHello
	records int
	prev    byte // the type of the record before the current one
	ccsFin  bool // a ChangeCipherSpec record was followed by a handshake record
	failed  bool // not a TLS 1.2 server: never proven
	proven  bool
}

func (s *tls12Scan) feed(b []byte) bool {
	for len(b) > 0 && !s.failed && !s.proven {
		if s.left > 0 {
			k := min(s.left, len(b))
			if s.records == 1 {
				s.first = append(s.first, b[:k]...)
			}
			s.left -= k
			b = b[k:]
			if s.left == 0 && s.records == 1 && !tls12ServerHello(s.first) {
				s.failed = true
			}
			continue
		}
		k := copy(s.hdr[s.nhdr:], b)
		s.nhdr += k
		b = b[k:]
		if s.nhdr < len(s.hdr) {
			break
		}
		s.nhdr = 0
		s.prev, s.typ = s.typ, s.hdr[0]
		s.left = int(s.hdr[3])<<8 | int(s.hdr[4])
		s.records++
		if s.hdr[1] != 3 || s.left == 0 || s.left > maxRecordBody {
			s.failed = true
			break
		}
		switch {
		case s.records == 1 && s.typ != recordHandshake:
			s.failed = true // a server speaks first with its ServerHello
		case s.typ == recordHandshake && s.prev == recordChangeCipherSpec:
			s.ccsFin = true
		case s.typ == recordApplicationData:
			s.proven = s.ccsFin
			s.failed = !s.ccsFin // TLS 1.3: its encrypted handshake
		case s.typ == recordChangeCipherSpec, s.typ == recordAlert, s.typ == recordHandshake:
		default:
			s.failed = true
		}
	}
	return s.proven
}

// tls12ServerHello reports whether body, a server's first record, begins with a whole
// ServerHello that negotiates TLS 1.2: version 3.3 and no supported_versions extension (which a
// TLS 1.3 ServerHello, or HelloRetryRequest, carries; RFC 8446 4.1.3, 4.2.1).
func tls12ServerHello(body []byte) bool {
	if len(body) < 4 || body[0] != 2 {
		return false
	}
	n := int(body[1])<<16 | int(body[2])<<8 | int(body[3])
	if len(body) < 4+n {
		return false // a ServerHello split over records: none of ours
	}
	m := body[4 : 4+n]
	// version(2) random(32) session_id(1+len) cipher_suite(2) compression(1) [extensions(2+len)]
	if len(m) < 35 || m[0] != 3 || m[1] != 3 {
		return false
	}
	p := 34
	p += 1 + int(m[p])
	p += 3
	if p > len(m) {
		return false
	}
	if p == len(m) {
		return true // no extensions
	}
	if p+2 > len(m) {
		return false
	}
	ext := m[p+2:]
	if int(m[p])<<8|int(m[p+1]) != len(ext) {
		return false
	}
	for len(ext) > 0 {
		if len(ext) < 4 {
			return false
		}
		typ, l := int(ext[0])<<8|int(ext[1]), int(ext[2])<<8|int(ext[3])
		if len(ext) < 4+l {
			return false
		}
		if typ == 43 { // supported_versions
			return false
		}
		ext = ext[4+l:]
	}
	return true
}
