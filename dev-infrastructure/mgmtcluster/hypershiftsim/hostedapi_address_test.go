package hypershiftsim_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	hyperv1 "github.com/openshift/hypershift/api/hypershift/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster/hypershiftsim"
)

// TestHostedAPIServerOnTheConfiguredAddress runs the sim with HostedAPIOptions.Address set (a
// pod IP under make deploy; a second loopback address here, which only this test uses): the
// hosted kube-apiserver binds and advertises there, its serving certificate names it, the slot
// annotation and the endpoint record it, and an anonymous caller is refused. A sim restarted on
// another address (a new pod IP after a rollout) moves the cluster there, keeping its port.
func TestHostedAPIServerOnTheConfiguredAddress(t *testing.T) {
	const first, second = "127.0.0.2", "127.0.0.3"
	e := startHostedEnv(t, 1, func(o *hypershiftsim.HostedAPIOptions) { o.Address = first })
	ctx := context.Background()
	ns := "hosted-address"
	if err := e.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	key := types.NamespacedName{Namespace: ns, Name: "addressed"}
	if err := e.c.Create(ctx, hypershiftsim.ExampleHostedCluster(ns, key.Name, image4197)); err != nil {
		t.Fatal(err)
	}
	hcpNS := hypershiftsim.ControlPlaneNamespace(key)
	running := func(hc *hyperv1.HostedCluster) error {
		return condIs(hc, hypershiftsim.HostedAPIServerCondition, metav1.ConditionTrue, hypershiftsim.ReasonHostedAPIServerRunning)
	}
	// answersAt checks the apiserver at ep: the customer's certificate lists namespaces, trusting
	// only the cluster's root CA (so the serving certificate names ep.Host), and a caller
	// without a certificate gets 401 on every path, the health paths included.
	answersAt := func(t *testing.T, ep hyperv1.APIEndpoint) {
		t.Helper()
		customer := e.secret(t, hcpNS, hypershiftsim.CustomerSignerSecret)
		cert := signedBy(t, customer.Data[corev1.TLSCertKey], customer.Data[corev1.TLSPrivateKeyKey], "system:customer-break-glass:alice", "system:masters")
		poll(t, time.Minute, "customer lists namespaces at "+ep.Host, func() error {
			return listNamespaces(e.hostedClient(t, hcpNS, ep, cert, ""))
		})
		cm := &corev1.ConfigMap{}
		if err := e.c.Get(ctx, types.NamespacedName{Namespace: hcpNS, Name: hypershiftsim.RootCAConfigMap}, cm); err != nil {
			t.Fatal(err)
		}
		roots := x509.NewCertPool()
		roots.AppendCertsFromPEM([]byte(cm.Data[hypershiftsim.CABundleKey]))
		anon := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}}}
		base := "https://" + net.JoinHostPort(ep.Host, strconv.Itoa(int(ep.Port)))
		for _, path := range []string{"/readyz", "/livez", "/healthz", "/version", "/api/v1/namespaces"} {
			resp, err := anon.Get(base + path)
			if err != nil {
				t.Fatalf("anonymous GET %s%s: %v", base, path, err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("anonymous GET %s%s: %s, want 401 Unauthorized", base, path, resp.Status)
			}
		}
	}
	notListening := func(t *testing.T, host string, port int32) {
		t.Helper()
		c, err := net.DialTimeout("tcp", net.JoinHostPort(host, strconv.Itoa(int(port))), 2*time.Second)
		if err == nil {
			c.Close()
			t.Errorf("something listens on %s:%d; the hosted apiserver must bind only its address", host, port)
		}
	}

	var ep hyperv1.APIEndpoint
	if !t.Run("apiserver_binds_certifies_and_records_the_configured_address", func(t *testing.T) {
		hc := e.hostedCluster(t, key, running)
		ep = hc.Status.ControlPlaneEndpoint
		if ep.Host != first || ep.Port <= 0 {
			t.Fatalf("controlPlaneEndpoint %+v, want %s and a port", ep, first)
		}
		if got, want := hc.Annotations[hypershiftsim.HostedAPIServerAnnotation], net.JoinHostPort(first, strconv.Itoa(int(ep.Port))); got != want {
			t.Errorf("slot annotation %q, want %q", got, want)
		}
		answersAt(t, ep)
		notListening(t, "127.0.0.1", ep.Port)
	}) {
		return
	}

	t.Run("sim_restarted_on_a_new_address_moves_the_cluster_there_on_the_same_port", func(t *testing.T) {
		e.stop()
		poll(t, time.Minute, "apiserver stopped with the sim", func() error {
			c, err := net.DialTimeout("tcp", net.JoinHostPort(ep.Host, strconv.Itoa(int(ep.Port))), time.Second)
			if err == nil {
				c.Close()
				return errors.New("still listening")
			}
			return nil
		})
		e.opts.HostedAPI.Address = second
		e.startSim(t)
		hc := e.hostedCluster(t, key, func(hc *hyperv1.HostedCluster) error {
			if err := running(hc); err != nil {
				return err
			}
			if got := hc.Status.ControlPlaneEndpoint; got.Host != second {
				return fmt.Errorf("endpoint %+v, want host %s", got, second)
			}
			return nil
		})
		moved := hc.Status.ControlPlaneEndpoint
		if moved.Port != ep.Port {
			t.Errorf("port after the move %d, want %d", moved.Port, ep.Port)
		}
		if got, want := hc.Annotations[hypershiftsim.HostedAPIServerAnnotation], net.JoinHostPort(second, strconv.Itoa(int(moved.Port))); got != want {
			t.Errorf("slot annotation %q, want %q", got, want)
		}
		answersAt(t, moved)
		notListening(t, first, ep.Port)
	})
}
