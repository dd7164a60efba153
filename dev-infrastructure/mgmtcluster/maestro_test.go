package mgmtcluster

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openhcp/openhcp/internal/pgserver/pgservertest"
)

func TestMaestroServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts postgres, mosquitto and maestro")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	bin, err := MaestroBinary(ctx)
	if err != nil {
		t.Fatal(err)
	}

	pg := pgservertest.Start(t)
	dsn := pgservertest.NewDatabase(t, pg)
	dir := t.TempDir()
	logs := filepath.Join(dir, "logs")

	mq, err := StartMosquitto(ctx, MosquittoOptions{Dir: filepath.Join(dir, "mosquitto"), LogDir: logs})
	if err != nil {
		t.Fatalf("start mosquitto: %v", err)
	}
	t.Cleanup(mq.Stop)

	start := time.Now()
	srv, err := StartMaestroServer(ctx, MaestroServerOptions{Binary: bin, DSN: dsn, MQTTAddr: mq.Addr, Dir: filepath.Join(dir, "maestro"), LogDir: logs})
	if err != nil {
		t.Fatalf("start maestro server: %v", err)
	}
	t.Cleanup(srv.Stop)
	t.Logf("maestro server ready in %s: rest=%s grpc=%s", time.Since(start).Round(time.Millisecond), srv.RESTURL, srv.GRPCAddr)

	t.Run("register_consumer_is_listed_and_idempotent", func(t *testing.T) {
		for i := 0; i < 2; i++ {
			if err := srv.REST().RegisterConsumer(ctx, "mgmt-1"); err != nil {
				t.Fatalf("register #%d: %v", i+1, err)
			}
		}
		if err := srv.REST().RegisterConsumer(ctx, "mgmt-2"); err != nil {
			t.Fatalf("register mgmt-2: %v", err)
		}
		cs, err := srv.REST().ListConsumers(ctx)
		if err != nil {
			t.Fatal(err)
		}
		count := map[string]int{}
		for _, c := range cs {
			if c.ID == "" {
				t.Errorf("consumer %q has no id", c.Name)
			}
			count[c.Name]++
		}
		if count["mgmt-1"] != 1 || count["mgmt-2"] != 1 || len(cs) != 2 {
			t.Fatalf("consumers = %+v, want mgmt-1 and mgmt-2 once each", cs)
		}
	})

	t.Run("server_connected_to_the_broker", func(t *testing.T) {
		// The broker logs each client it accepts, by client ID.
		deadline := time.Now().Add(10 * time.Second)
		for !strings.Contains(mq.Proc.LogTail(1<<16), "maestro-server") {
			if time.Now().After(deadline) {
				t.Fatalf("mosquitto never saw client maestro-server; log:\n%s", mq.Proc.LogTail(4000))
			}
			time.Sleep(100 * time.Millisecond)
		}
	})

	// The stuck-delete watchdog's search must parse on the pinned server: a search it cannot
	// parse is a 400, and every scan would fail.
	t.Run("deleting_bundles_search_accepted", func(t *testing.T) {
		bs, err := srv.REST().ListDeletingBundles(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(bs) != 0 {
			t.Fatalf("deleting bundles on a fresh server: %+v", bs)
		}
		if _, err := srv.REST().ListBundles(ctx, "deleted_at is bogus"); err == nil {
			t.Fatal("an unparsable search was accepted, so this check cannot tell a good search from a bad one")
		}
	})

	t.Run("metrics_served", func(t *testing.T) {
		if err := HTTPReady(nil, srv.MetricsURL)(ctx); err != nil {
			t.Fatal(err)
		}
	})
}

func TestMosquittoConfig(t *testing.T) {
	conf, err := mosquittoConfig(MosquittoOptions{Dir: "/d", Port: 1234,
		TLS: &MosquittoTLS{CAFile: "/ca", CertFile: "/crt", KeyFile: "/key", RequireClientCert: true},
		ACL: MaestroACL("maestro-server")}, "/s/mqtt.sock")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"listener 0 /s/mqtt.sock\n", "cafile /ca\n", "require_certificate true\n", "use_identity_as_username true\n", "acl_file /d/acl\n"} {
		if !strings.Contains(conf, want) {
			t.Errorf("config lacks %q:\n%s", want, conf)
		}
	}
	acl := mosquittoACL(MaestroACL("maestro-server"))
	if i, j := strings.Index(acl, "pattern "), strings.Index(acl, "user "); i < 0 || j < 0 || i > j {
		t.Errorf("pattern rules must precede user sections:\n%s", acl)
	}
	if !strings.Contains(acl, "pattern read sources/maestro/consumers/%u/sourceevents\n") {
		t.Errorf("agents are not confined to their own topics:\n%s", acl)
	}
	if _, err := mosquittoConfig(MosquittoOptions{TLS: &MosquittoTLS{CAFile: "/ca"}}, "/s/mqtt.sock"); err == nil {
		t.Error("incomplete TLS settings accepted")
	}
}

func TestMosquittoShareGuardConfig(t *testing.T) {
	for _, tc := range []struct {
		name    string
		guard   *MosquittoShareGuard
		want    string // in the config; "" when there is no guard or it is refused
		refused bool
	}{
		{name: "none", guard: nil},
		{name: "two servers", guard: &MosquittoShareGuard{Plugin: "/p.so", Subscribers: []string{"maestro-server", "maestro-server-2"}},
			want: "plugin /p.so\nplugin_opt_shared_subscribers maestro-server,maestro-server-2\n"},
		{name: "no plugin path", guard: &MosquittoShareGuard{Subscribers: []string{"maestro-server"}}, refused: true},
		{name: "a comma in a name", guard: &MosquittoShareGuard{Plugin: "/p.so", Subscribers: []string{"a,b"}}, refused: true},
		{name: "an empty name", guard: &MosquittoShareGuard{Plugin: "/p.so", Subscribers: []string{""}}, refused: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conf, err := mosquittoConfig(MosquittoOptions{Dir: "/d", Port: 1, ShareGuard: tc.guard}, "/s/mqtt.sock")
			if tc.refused {
				if err == nil {
					t.Fatalf("accepted:\n%s", conf)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == "" && strings.Contains(conf, "plugin") {
				t.Errorf("a plugin without a share guard:\n%s", conf)
			}
			if !strings.Contains(conf, tc.want) {
				t.Errorf("config lacks %q:\n%s", tc.want, conf)
			}
		})
	}
}
