package localregion

import (
	"context"
	"crypto/tls"
	"fmt"
	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster"
	"path/filepath"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/packets"
	"github.com/eclipse/paho.golang/paho"

	"github.com/openhcp/openhcp/internal/pki"
	"github.com/openhcp/openhcp/internal/tlsconfig"
)

// mqttTestClient is a real MQTT v5 client (paho) that records what it receives.
type mqttTestClient struct {
	c    *paho.Client
	got  chan *paho.Publish
	seen []string // "<topic> <payload>" of every message receives read
}

// ever reports whether m got a message on topic with payload: one receives already read on its
// way to another (a wait for a control after a forgery reads past the forgery), or one within
// wait.
func (m *mqttTestClient) ever(topic, payload string, wait time.Duration) bool {
	for _, s := range m.seen {
		if s == topic+" "+payload {
			return true
		}
	}
	return m.receives(topic, payload, wait)
}

func (m *mqttTestClient) Close() { _ = m.c.Disconnect(&paho.Disconnect{}) }

// dialMQTT connects to addr over TLS with cfg and asks for clientID.
func dialMQTT(ctx context.Context, addr string, cfg *tls.Config, clientID string) (*mqttTestClient, error) {
	d := tls.Dialer{Config: cfg}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	m := &mqttTestClient{got: make(chan *paho.Publish, 100)}
	m.c = paho.NewClient(paho.ClientConfig{
		Conn: packets.NewThreadSafeConn(conn),
		OnPublishReceived: []func(paho.PublishReceived) (bool, error){func(p paho.PublishReceived) (bool, error) {
			m.got <- p.Packet
			return true, nil
		}},
		PacketTimeout: 5 * time.Second,
	})
	ca, err := m.c.Connect(ctx, &paho.Connect{ClientID: clientID, CleanStart: true, KeepAlive: 30})
	if err != nil {
		conn.Close()
		return nil, err
	}
	if ca.ReasonCode != 0 {
		conn.Close()
		return nil, &connackError{ca.ReasonCode}
	}
	return m, nil
}

// statusEvent is a status event as an agent sends it (a binary-mode CloudEvent: its clustername
// extension the user property ce-clustername), with payload for data.
func statusEvent(topic, clustername, payload string) *paho.Publish {
	return &paho.Publish{Topic: topic, QoS: 1, Payload: []byte(payload), Properties: &paho.PublishProperties{
		User: paho.UserProperties{{Key: "ce-clustername", Value: clustername}}}}
}

type connackError struct{ code byte }

func (e *connackError) Error() string { return fmt.Sprintf("CONNACK reason %#x", e.code) }

// receives reports whether m gets a message on topic with payload within wait. Every message
// it reads on the way is kept in seen, for ever.
func (m *mqttTestClient) receives(topic, payload string, wait time.Duration) bool {
	deadline := time.After(wait)
	for {
		select {
		case p := <-m.got:
			m.seen = append(m.seen, p.Topic+" "+string(p.Payload))
			if p.Topic == topic && string(p.Payload) == payload {
				return true
			}
		case <-deadline:
			return false
		}
	}
}

func (m *mqttTestClient) disconnectedWithin(wait time.Duration) bool {
	select {
	case <-m.c.Done():
		return true
	case <-time.After(wait):
		return false
	}
}

// TestRegionBrokerRefusesAndIsolates runs the region's broker (SecureBrokerOptions: the real
// mosquitto, TLS, client certificates, MaestroACL) with identities made exactly as Up makes them,
// and checks every refusal with a real MQTT client: plaintext, no certificate and a certificate
// from another CA are refused; the agent of mgmt-2 can neither read nor write mgmt-1's topics
// while mgmt-1's own agent and the server (the controls) can; only the server instances may join
// the share group of the agents' status; and a session can be taken over only by its own
// identity.
func TestRegionBrokerRefusesAndIsolates(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	p, err := pki.Create(filepath.Join(dir, "pki"), pki.Options{MaestroConsumers: []string{"mgmt-1", "mgmt-2"}})
	if err != nil {
		t.Fatal(err)
	}
	stranger, err := pki.Create(filepath.Join(dir, "stranger-pki"), pki.Options{MaestroConsumers: []string{"mgmt-1"}})
	if err != nil {
		t.Fatal(err)
	}
	// A second Maestro server instance, as Up makes it for Config.MaestroServers = 2.
	second := maestroServerNames(2)[1]
	if err := p.Add(second, pki.Spec{CommonName: second, Usage: pki.Client}, pki.ServiceCA); err != nil {
		t.Fatal(err)
	}
	plugin, err := mgmtcluster.MosquittoShareGuardPlugin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	opts, err := mgmtcluster.SecureBrokerOptions(p, filepath.Join(dir, "mosquitto"), filepath.Join(dir, "logs"), plugin, second)
	if err != nil {
		t.Fatal(err)
	}
	mq, err := mgmtcluster.StartMosquitto(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(mq.Stop)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("mosquitto.log:\n%s", mq.Proc.LogTail(8000))
		}
	})
	as := func(identity string) *tls.Config {
		t.Helper()
		f := p.MustFiles(identity)
		cfg, err := tlsconfig.Files{CA: p.CAFile, Cert: f.Cert, Key: f.Key}.Client(mq.Addr)
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	dial := func(identity, clientID string) *mqttTestClient {
		t.Helper()
		c, err := dialMQTT(ctx, mq.Addr, as(identity), clientID)
		if err != nil {
			t.Fatalf("%s cannot connect: %v", identity, err)
		}
		t.Cleanup(c.Close)
		return c
	}
	const topics = "sources/maestro/consumers/"
	mgmt1Spec, mgmt1Status := topics+"mgmt-1/sourceevents", topics+"mgmt-1/agentevents"
	mgmt2Status := topics + "mgmt-2/agentevents"

	t.Run("refused_connections", func(t *testing.T) {
		serverOnly, err := tlsconfig.Files{CA: p.CAFile}.Client(mq.Addr)
		if err != nil {
			t.Fatal(err)
		}
		f := stranger.MustFiles(pki.MaestroAgent("mgmt-1"))
		strangerCert, err := tlsconfig.Files{CA: p.CAFile, Cert: f.Cert, Key: f.Key}.Client(mq.Addr)
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			name string
			cfg  *tls.Config // nil: plaintext
		}{
			{"plaintext", nil},
			{"tls_without_a_client_certificate", serverOnly},
			{"client_certificate_from_an_unknown_ca", strangerCert},
		} {
			t.Run(tc.name, func(t *testing.T) {
				if err := mgmtcluster.KickMQTTClient(ctx, mq.Addr, "mgmt-1", tc.cfg); err == nil {
					t.Fatal("the broker accepted the connection")
				}
			})
		}
		t.Run("own_certificate_accepted", func(t *testing.T) {
			if err := mgmtcluster.KickMQTTClient(ctx, mq.Addr, "x", as(pki.MaestroAgent("mgmt-2"))); err != nil {
				t.Fatalf("the right identity was refused: %v", err)
			}
		})
	})

	// A client may hold only the subscriptions its role uses: every other SUBSCRIBE is refused,
	// so one certificate cannot make the broker hold tens of thousands of filters (a probe:
	// 60,000 took 200 MB of its memory; delivery was still ACL-checked).
	t.Run("a_client_holds_only_the_filters_its_role_uses", func(t *testing.T) {
		agent2 := dial(pki.MaestroAgent("mgmt-2"), "mgmt-2-filters")
		granted := func(c *mqttTestClient, topic string) bool {
			t.Helper()
			sa, err := c.c.Subscribe(ctx, &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{{Topic: topic, QoS: 1}}})
			if sa == nil || len(sa.Reasons) != 1 {
				t.Fatalf("subscribe %s: no SUBACK (%v)", topic, err)
			}
			return sa.Reasons[0] < 0x80
		}
		if !granted(agent2, topics+"mgmt-2/sourceevents") {
			t.Fatal("control: mgmt-2 may not subscribe to its own spec topic")
		}
		for i := range 50 {
			if topic := fmt.Sprintf("%sfiller-%d/sourceevents", topics, i); granted(agent2, topic) {
				t.Fatalf("mgmt-2 was granted %s, a filter no agent uses", topic)
			}
		}
		for _, topic := range []string{"#", topics + "+/sourceevents", mgmt1Spec} {
			if granted(agent2, topic) {
				t.Errorf("mgmt-2 was granted %s", topic)
			}
		}
		server := dial(pki.MaestroServer, "maestro-server-filters")
		if !granted(server, topics+"+/agentevents") {
			t.Fatal("control: the server may not subscribe to the agents' status")
		}
		if granted(server, "#") {
			t.Error("the server was granted #, a filter it does not use")
		}
	})

	// %u in a filter stands for one topic level: a certificate whose name holds a wildcard would
	// make every consumer's topic its own filter (the region's PKI issues no such name; the
	// plugin refuses it whoever signed it).
	t.Run("a_username_holding_a_wildcard_matches_no_filter", func(t *testing.T) {
		const wild = "+"
		if err := p.Add("wildcard-name", pki.Spec{CommonName: wild, Usage: pki.Client}, pki.ServiceCA); err != nil {
			t.Fatal(err)
		}
		c := dial("wildcard-name", "wildcard-name")
		sa, err := c.c.Subscribe(ctx, &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{{Topic: topics + wild + "/sourceevents", QoS: 1}}})
		if sa == nil || len(sa.Reasons) != 1 {
			t.Fatalf("no SUBACK (%v)", err)
		}
		if sa.Reasons[0] < 0x80 {
			t.Fatalf("a client named %q was granted %s/sourceevents: every consumer's specs", wild, topics+wild)
		}
	})

	// Maestro's server takes the management cluster a status event speaks for from its
	// clustername extension, not from the topic: on a status topic the broker lets through only
	// binary-mode events whose clustername is the publisher's own name. Before, mgmt-2's agent
	// (or any workload certificate, on its own topic) spoke for mgmt-1, and a probe saw ARM show
	// the api.url it forged.
	t.Run("a_status_event_speaks_only_for_its_publisher", func(t *testing.T) {
		server := dial(pki.MaestroServer, "maestro-server-clustername")
		if _, err := server.c.Subscribe(ctx, &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{{Topic: topics + "+/agentevents", QoS: 1}}}); err != nil {
			t.Fatalf("server subscribe: %v", err)
		}
		event := func(payload string, props ...paho.UserProperty) *paho.Publish {
			return &paho.Publish{QoS: 1, Payload: []byte(payload), Properties: &paho.PublishProperties{User: props}}
		}
		// The forged events carry the clustername as the test says; the control is as an agent
		// sends it (statusEvent).
		clustername := func(v string) paho.UserProperty { return paho.UserProperty{Key: "ce-clustername", Value: v} }
		structured := func(payload string) *paho.Publish {
			p := event(payload)
			p.Properties.ContentType = "application/cloudevents+json"
			return p
		}
		for _, tc := range []struct {
			identity, consumer string
			forged             []*paho.Publish
		}{
			{identity: pki.MaestroAgent("mgmt-2"), consumer: "mgmt-2", forged: []*paho.Publish{
				event("mgmt-2 as mgmt-1", clustername("mgmt-1")),
				event("mgmt-2 as itself and mgmt-1", clustername("mgmt-2"), clustername("mgmt-1")),
				event("mgmt-2 as MGMT-2", paho.UserProperty{Key: "CE-ClusterName", Value: "mgmt-1"}, clustername("mgmt-2")),
				event("mgmt-2 as nobody"),
				structured(`{"specversion":"1.0","clustername":"mgmt-1"}`),
			}},
			{identity: pki.Frontend, consumer: pki.Frontend, forged: []*paho.Publish{
				event("frontend as mgmt-1", clustername("mgmt-1")),
				structured(`{"specversion":"1.0","clustername":"mgmt-1","source":"frontend"}`),
			}},
		} {
			c := dial(tc.identity, tc.identity+"-clustername")
			topic := topics + tc.consumer + "/agentevents"
			forged := map[string]bool{}
			for _, p := range tc.forged {
				p.Topic = topic
				forged[string(p.Payload)] = true
				pr, err := c.c.Publish(ctx, p)
				t.Logf("%s publishes %q: %+v, err %v", tc.identity, p.Payload, pr, err)
			}
			// The control, after the forged ones on the same topic (the broker keeps one
			// publisher's order): the publisher's own clustername arrives.
			control := statusEvent(topic, tc.consumer, tc.identity+" as itself")
			if _, err := c.c.Publish(ctx, control); err != nil {
				t.Fatalf("%s publishes as itself: %v", tc.identity, err)
			}
			deadline := time.After(10 * time.Second)
			for got := false; !got; {
				select {
				case p := <-server.got:
					if forged[string(p.Payload)] {
						t.Errorf("the server received %q from %s on %s", p.Payload, tc.identity, p.Topic)
					}
					got = string(p.Payload) == string(control.Payload)
				case <-deadline:
					t.Fatalf("control: the server did not receive %s's event as itself", tc.identity)
				}
			}
		}
	})

	t.Run("agent_of_mgmt_2_cannot_read_or_write_mgmt_1", func(t *testing.T) {
		server := dial(pki.MaestroServer, "maestro-server")
		agent1 := dial(pki.MaestroAgent("mgmt-1"), "mgmt-1-work-agent-client")
		agent2 := dial(pki.MaestroAgent("mgmt-2"), "mgmt-2-work-agent-client")
		if _, err := server.c.Subscribe(ctx, &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{{Topic: topics + "+/agentevents", QoS: 1}}}); err != nil {
			t.Fatalf("server subscribe: %v", err)
		}
		if _, err := agent1.c.Subscribe(ctx, &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{{Topic: mgmt1Spec, QoS: 1}}}); err != nil {
			t.Fatalf("mgmt-1 subscribe to its own topic: %v", err)
		}
		// mgmt-2 asks for mgmt-1's specs directly, through a wildcard and through everything.
		for _, topic := range []string{mgmt1Spec, topics + "+/sourceevents", "#"} {
			sa, err := agent2.c.Subscribe(ctx, &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{{Topic: topic, QoS: 1}}})
			t.Logf("mgmt-2 subscribes to %s: suback %+v, err %v", topic, sa, err)
		}

		// The server sends mgmt-1 a spec: mgmt-1 gets it (the control), mgmt-2 does not.
		if _, err := server.c.Publish(ctx, &paho.Publish{Topic: mgmt1Spec, QoS: 1, Payload: []byte("spec for mgmt-1")}); err != nil {
			t.Fatalf("server publish: %v", err)
		}
		if !agent1.receives(mgmt1Spec, "spec for mgmt-1", 5*time.Second) {
			t.Fatal("control: mgmt-1 did not receive its own spec")
		}
		if agent2.ever(mgmt1Spec, "spec for mgmt-1", 2*time.Second) {
			t.Fatal("mgmt-2 received mgmt-1's spec")
		}

		// mgmt-2 forges a status of mgmt-1, and a spec for it: neither arrives.
		forged := func(topic, payload string) {
			pr, err := agent2.c.Publish(ctx, &paho.Publish{Topic: topic, QoS: 1, Payload: []byte(payload)})
			t.Logf("mgmt-2 publishes on %s: %+v, err %v", topic, pr, err)
		}
		forged(mgmt1Status, "forged status")
		forged(mgmt1Spec, "forged spec")
		// The controls: mgmt-1's and mgmt-2's own statuses reach the server.
		if _, err := agent1.c.Publish(ctx, statusEvent(mgmt1Status, "mgmt-1", "status of mgmt-1")); err != nil {
			t.Fatalf("mgmt-1 publish on its own topic: %v", err)
		}
		if !server.receives(mgmt1Status, "status of mgmt-1", 5*time.Second) {
			t.Fatal("control: the server did not receive mgmt-1's status")
		}
		if _, err := agent2.c.Publish(ctx, statusEvent(mgmt2Status, "mgmt-2", "status of mgmt-2")); err != nil {
			t.Fatalf("mgmt-2 publish on its own topic: %v", err)
		}
		if !server.receives(mgmt2Status, "status of mgmt-2", 5*time.Second) {
			t.Fatal("control: the server did not receive mgmt-2's status")
		}
		if server.ever(mgmt1Status, "forged status", 2*time.Second) {
			t.Fatal("the server received a status of mgmt-1 forged by mgmt-2")
		}
		if agent1.ever(mgmt1Spec, "forged spec", time.Second) {
			t.Fatal("mgmt-1 received a spec forged by mgmt-2")
		}
		// An agent cannot publish specs even for itself: only the server writes sourceevents.
		pr, err := agent1.c.Publish(ctx, &paho.Publish{Topic: mgmt1Spec, QoS: 1, Payload: []byte("self spec")})
		t.Logf("mgmt-1 publishes on its own sourceevents: %+v, err %v", pr, err)
		if agent1.ever(mgmt1Spec, "self spec", 2*time.Second) {
			t.Fatal("an agent could publish a spec")
		}
	})

	// The server instances share the agents' status (each event to one of them). mosquitto alone
	// would grant the share group to an agent too and then drop the events it hands that agent
	// (it checks the ACL only on delivery); the share_guard plugin refuses the agent's SUBSCRIBE,
	// so the instances still receive every event between them.
	t.Run("only_server_instances_share_the_agents_status", func(t *testing.T) {
		const shared = "$share/statussubscribers/" + topics + "+/agentevents"
		servers := []*mqttTestClient{dial(pki.MaestroServer, "maestro-server"), dial(second, second)}
		for i, s := range servers {
			if _, err := s.c.Subscribe(ctx, &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{{Topic: shared, QoS: 1}}}); err != nil {
				t.Fatalf("server instance %d subscribe: %v", i+1, err)
			}
		}
		intruder := dial(pki.MaestroAgent("mgmt-2"), "mgmt-2-work-agent-client")
		sa, err := intruder.c.Subscribe(ctx, &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{{Topic: shared, QoS: 1}}})
		if err == nil || sa == nil || len(sa.Reasons) != 1 || sa.Reasons[0] != packets.SubackNotauthorized {
			t.Fatalf("mgmt-2's agent joining the servers' share group: SUBACK %+v, err %v; want reason %#x (not authorized)",
				sa, err, packets.SubackNotauthorized)
		}
		agent1 := dial(pki.MaestroAgent("mgmt-1"), "mgmt-1-work-agent-client")
		const n = 20
		for i := range n {
			if _, err := agent1.c.Publish(ctx, statusEvent(mgmt1Status, "mgmt-1", fmt.Sprintf("status %d", i))); err != nil {
				t.Fatalf("mgmt-1 publish: %v", err)
			}
		}
		count := func(c *mqttTestClient, wait time.Duration) int {
			got := 0
			for deadline := time.After(wait); ; {
				select {
				case pb := <-c.got:
					if pb.Topic == mgmt1Status {
						got++
					}
				case <-deadline:
					return got
				}
			}
		}
		first, secondGot := count(servers[0], 3*time.Second), count(servers[1], time.Second)
		if first+secondGot != n || first == 0 || secondGot == 0 {
			t.Fatalf("the server instances received %d and %d of %d statuses; want each status once, some to each", first, secondGot, n)
		}
	})

	t.Run("a_packet_over_the_limit_is_refused_at_its_header", func(t *testing.T) {
		// A client that announces a packet over the limit is cut at once: mosquitto would
		// otherwise read (and hold) up to 256 MiB of it before its ACL refuses the topic.
		conn, err := tls.Dial("tcp", mq.Addr, as(pki.MaestroAgent("mgmt-2")))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
		// CONNECT, MQTT v5, clean start, keep-alive 60 s, no properties, empty client ID.
		connect := []byte{0x10, 13, 0, 4, 'M', 'Q', 'T', 'T', 5, 0x02, 0, 60, 0, 0, 0}
		if _, err := conn.Write(connect); err != nil {
			t.Fatal(err)
		}
		var connack [64]byte
		if n, err := conn.Read(connack[:]); err != nil || n < 4 || connack[0] != 0x20 || connack[3] != 0 {
			t.Fatalf("CONNACK: % x, %v", connack[:n], err)
		}
		// PUBLISH, QoS 0, to the agent's own status topic, one byte over the limit; no body follows.
		header := append([]byte{0x30}, mqttVarint(mgmtcluster.MaxMQTTPacket+1)...)
		if _, err := conn.Write(header); err != nil {
			t.Fatal(err)
		}
		if n, err := conn.Read(connack[:]); err == nil && connack[0]&0xf0 != 0xe0 {
			t.Fatalf("the broker answered % x and kept reading a packet of %d bytes", connack[:n], mgmtcluster.MaxMQTTPacket+1)
		} else if ne, ok := err.(interface{ Timeout() bool }); ok && ne.Timeout() {
			t.Fatalf("the broker still waits for the body of a packet of %d bytes: %v", mgmtcluster.MaxMQTTPacket+1, err)
		}
		// A work of Maestro's largest size still passes (the control).
		server := dial(pki.MaestroServer, "maestro-server")
		agent1 := dial(pki.MaestroAgent("mgmt-1"), "mgmt-1-work-agent-client")
		if _, err := agent1.c.Subscribe(ctx, &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{{Topic: mgmt1Spec, QoS: 1}}}); err != nil {
			t.Fatal(err)
		}
		big := string(make([]byte, 4<<20))
		if _, err := server.c.Publish(ctx, &paho.Publish{Topic: mgmt1Spec, QoS: 1, Payload: []byte(big)}); err != nil {
			t.Fatal(err)
		}
		if !agent1.receives(mgmt1Spec, big, 10*time.Second) {
			t.Fatal("a 4 MiB spec did not reach the agent")
		}
	})

	t.Run("a_session_is_taken_over_only_by_its_own_identity", func(t *testing.T) {
		agent1 := dial(pki.MaestroAgent("mgmt-1"), "mgmt-1-work-agent-client")
		// mgmt-2 asks for the ID mgmt-1 asked for, and for the one the broker gave it.
		for _, id := range []string{"mgmt-1-work-agent-client", "mgmt-1"} {
			if err := mgmtcluster.KickMQTTClient(ctx, mq.Addr, id, as(pki.MaestroAgent("mgmt-2"))); err != nil {
				t.Fatalf("mgmt-2 connect: %v", err)
			}
		}
		if agent1.disconnectedWithin(2 * time.Second) {
			t.Fatal("mgmt-2 took mgmt-1's session over")
		}
		// What the stuck-delete watchdog does: the agent's own identity takes it over.
		if err := mgmtcluster.KickMQTTClient(ctx, mq.Addr, "anything", as(pki.MaestroAgent("mgmt-1"))); err != nil {
			t.Fatal(err)
		}
		if !agent1.disconnectedWithin(5 * time.Second) {
			t.Fatal("the agent's own identity did not take its session over")
		}
	})
}

// mqttVarint is n as MQTT's variable byte integer (a packet's remaining length).
func mqttVarint(n int) []byte {
	var b []byte
	for {
		d := byte(n % 128)
		n /= 128
		if n > 0 {
			d |= 0x80
		}
		b = append(b, d)
		if n == 0 {
			return b
		}
	}
}
