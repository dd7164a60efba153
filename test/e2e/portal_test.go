package e2e

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"golang.org/x/net/websocket"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
)

// browser is a headless Chromium driven over the DevTools protocol (one page).
type browser struct {
	t  *testing.T
	ws *websocket.Conn
	id int
}

// startBrowser starts Debian's chromium (installed by make deps) headless on a free port.
func startBrowser(t *testing.T) *browser {
	t.Helper()
	bin, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("no chromium on PATH (make deps installs it): %v", err)
	}
	// Not t.TempDir: chromium's helper processes can still write into its profile after the
	// main process is gone, and TempDir's cleanup then fails the test. The whole process group
	// is killed and the profile removed once they have stopped.
	dir, err := os.MkdirTemp("", "portal-browser-")
	if err != nil {
		t.Fatal(err)
	}
	// Chromium also makes its own temporary directories (org.chromium.Chromium.*) and leaves
	// them behind when killed: they go under dir too, so the clean-up below takes them.
	profile, tmp := filepath.Join(dir, "profile"), filepath.Join(dir, "tmp")
	for _, d := range []string{profile, tmp} {
		if err := os.Mkdir(d, 0o700); err != nil {
			os.RemoveAll(dir)
			t.Fatal(err)
		}
	}
	cmd := exec.Command(bin, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--user-data-dir="+profile,
		"--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0", "--remote-allow-origins=http://127.0.0.1",
		"--window-size=1280,900", "about:blank")
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
		var err error
		for range 50 {
			if err = os.RemoveAll(dir); err == nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Logf("remove the browser profile %s: %v", dir, err)
	})
	var port string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if b, err := os.ReadFile(filepath.Join(profile, "DevToolsActivePort")); err == nil && strings.Contains(string(b), "\n") {
			port = strings.SplitN(string(b), "\n", 2)[0]
			break
		}
	}
	if port == "" {
		t.Fatal("chromium did not write DevToolsActivePort")
	}
	resp, err := http.Get("http://127.0.0.1:" + port + "/json/list")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var targets []struct{ Type, WebSocketDebuggerURL string }
	if err := json.NewDecoder(resp.Body).Decode(&targets); err != nil {
		t.Fatal(err)
	}
	for _, tg := range targets {
		if tg.Type == "page" {
			ws, err := websocket.Dial(tg.WebSocketDebuggerURL, "", "http://127.0.0.1")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { ws.Close() })
			return &browser{t: t, ws: ws}
		}
	}
	t.Fatal("chromium has no page target")
	return nil
}

// call sends one DevTools command and returns its result, skipping events.
func (b *browser) call(method string, params map[string]any) map[string]any {
	b.t.Helper()
	b.id++
	if err := websocket.JSON.Send(b.ws, map[string]any{"id": b.id, "method": method, "params": params}); err != nil {
		b.t.Fatalf("%s: %v", method, err)
	}
	b.ws.SetReadDeadline(time.Now().Add(60 * time.Second))
	for {
		var msg struct {
			ID     int            `json:"id"`
			Result map[string]any `json:"result"`
			Error  map[string]any `json:"error"`
		}
		if err := websocket.JSON.Receive(b.ws, &msg); err != nil {
			b.t.Fatalf("%s: %v", method, err)
		}
		if msg.ID != b.id {
			continue
		}
		if msg.Error != nil {
			b.t.Fatalf("%s: %v", method, msg.Error)
		}
		return msg.Result
	}
}

// eval evaluates a JavaScript expression in the page and returns its value.
func (b *browser) eval(expr string) any {
	b.t.Helper()
	r := b.call("Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true, "awaitPromise": true})
	if ex, ok := r["exceptionDetails"]; ok {
		b.t.Fatalf("evaluate %s: %v", expr, ex)
	}
	v, _ := r["result"].(map[string]any)
	return v["value"]
}

// waitFor polls a JavaScript condition until it is true.
func (b *browser) waitFor(cond string) {
	b.t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if v, _ := b.eval(cond).(bool); v {
			return
		}
	}
	b.t.Fatalf("page never satisfied %s; it shows:\n%v", cond, b.eval("document.body ? document.body.innerText : ''"))
}

// open navigates and waits until the page at url has loaded; it returns the page's text.
func (b *browser) open(url string) string {
	b.t.Helper()
	return b.openLanding(url, url)
}

// openLanding navigates to url, which sends the browser on to landing, and returns the text of
// the page there.
func (b *browser) openLanding(url, landing string) string {
	b.t.Helper()
	b.call("Page.navigate", map[string]any{"url": url})
	b.waitFor(fmt.Sprintf("document.readyState === 'complete' && location.href === %q", landing))
	return b.eval("document.body.innerText").(string)
}

// screenshot writes the page as PNG to $OPENHCP_PORTAL_SCREENSHOTS/name, when that is set.
func (b *browser) screenshot(name string) {
	dir := os.Getenv("OPENHCP_PORTAL_SCREENSHOTS")
	if dir == "" {
		return
	}
	r := b.call("Page.captureScreenshot", map[string]any{"format": "png"})
	png, err := base64.StdEncoding.DecodeString(r["data"].(string))
	if err != nil {
		b.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
		b.t.Fatal(err)
	}
}

// startPortal runs `hcpctl portal` as the region's sre-admin and returns its base URL and the
// address it printed (which holds the proxy's key).
func startPortal(t *testing.T) (base, printed string) {
	t.Helper()
	cmd := exec.Command(hcpctlBinary(t), "--region-file", region.RegionFile(), "--as", "sre-admin", "portal", "--listen", "127.0.0.1:0")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("hcpctl portal: %v", err)
	}
	go io.Copy(io.Discard, stdout)
	// "portal: http://127.0.0.1:PORT/portal/?hcpctl-portal-key=KEY (...)"
	f := strings.Fields(line)
	if len(f) < 2 || !strings.HasPrefix(f[1], "http://127.0.0.1:") {
		t.Fatalf("hcpctl portal printed %q", line)
	}
	base, _, ok := strings.Cut(f[1], "/portal/")
	if !ok {
		t.Fatalf("hcpctl portal printed %q", line)
	}
	return base, f[1]
}

// TestPortalInABrowser drives the SRE portal in headless Chromium through hcpctl portal (which
// presents the SRE's certificate, as the admin API demands): the fleet overview, a cluster's
// page, a cordon through the shards page's form, and the audit log that records it.
func TestPortalInABrowser(t *testing.T) {
	base, printed := startPortal(t)
	b := startBrowser(t)

	sub := uuid.NewString()
	registerSubscription(t, sub)
	path := clusterPath(sub, "rg-portal", "portal1")
	c, _ := createCluster(t, path, clusterBody(sub, "rg-portal"))

	// The address hcpctl printed: the browser keeps the proxy's key as a cookie, and is sent on
	// to the fleet page.
	text := b.openLanding(printed, base+"/portal/")
	for _, want := range []string{"alice (sre-admin)", "Clusters by state and shard", "Shard capacity", "mgmt-1", "mgmt-2", "portal1"} {
		if !strings.Contains(text, want) {
			t.Errorf("fleet page lacks %q:\n%s", want, text)
		}
	}
	b.screenshot("sre-portal-fleet.png")

	text = b.open(base + "/portal/clusters/" + c.GetId())
	for _, want := range []string{"Where it is, stage by stage", "Available=True", "Operation timeline", "cluster-" + c.GetId()} {
		if !strings.Contains(text, want) {
			t.Errorf("cluster page lacks %q:\n%s", want, text)
		}
	}
	b.screenshot("sre-portal-cluster.png")

	reason := "portal e2e " + uuid.NewString()[:8]
	b.open(base + "/portal/shards")
	t.Cleanup(func() {
		adminCall(t, adminInfo(t), "sre-admin", "POST", "/admin/v1/shards/mgmt-2/uncordon", `{"reason":"portal e2e cleanup"}`, "portal-cleanup", nil)
	})
	b.eval(fmt.Sprintf(`(() => { const f = document.querySelector('#shard-mgmt-2 form');
		f.querySelector('input[name=reason]').value = %q; f.querySelector('button').click(); return true })()`, reason))
	b.waitFor(`document.querySelector('#message') !== null`)
	if msg := b.eval(`document.querySelector('#message').innerText`); msg != "Shard mgmt-2 is now maintenance." {
		t.Fatalf("after the cordon form the page says %v", msg)
	}
	if got := b.eval(`document.querySelector('#shard-mgmt-2 .health-healthy') !== null`); got != true {
		t.Errorf("the shards page does not show mgmt-2's apiserver healthy")
	}
	b.screenshot("sre-portal-shards.png")
	if csShardStatus(t, "mgmt-2") != csv1.ShardStatus_SHARD_STATUS_MAINTENANCE {
		t.Fatal("the portal's cordon did not reach Cluster Service")
	}

	text = b.open(base + "/portal/audit?person=alice&target=mgmt-2")
	if !strings.Contains(text, "POST /portal/shards/{name}/cordon") || !strings.Contains(text, reason) {
		t.Fatalf("the audit page does not show the cordon with its reason:\n%s", text)
	}
	b.screenshot("sre-portal-audit.png")

	// Break-glass: open a read-only session on the cluster through the page's form (admin
	// access waits for a second sre-admin's approval), see where to use it (the gateway; no
	// credential is ever shown) and the session listed, then revoke it through its row's form.
	b.open(base + "/portal/breakglass")
	b.eval(fmt.Sprintf(`(() => { const f = document.querySelector('#request');
		f.querySelector('input[name=cluster]').value = %q; f.querySelector('select[name=access]').value = 'read-only';
		f.querySelector('input[name=ttl]').value = '30m'; f.querySelector('input[name=reason]').value = %q;
		f.querySelector('button').click(); return true })()`, c.GetId(), reason))
	b.waitFor(`document.querySelector('#opened') !== null || document.querySelector('#error') !== null`)
	if e := b.eval(`document.querySelector('#error') ? document.querySelector('#error').innerText : ''`); e != "" {
		t.Fatalf("the break-glass open form failed: %v", e)
	}
	opened := b.eval(`document.querySelector('#opened').innerText`).(string)
	page := b.eval("document.body.innerText").(string)
	if !strings.Contains(opened, "/sessions/") || !strings.Contains(opened, "openhcp:sre:read-only") || strings.Contains(page, "client-certificate-data") ||
		strings.Contains(page, "BEGIN CERTIFICATE") {
		t.Fatalf("the opened session shows %q", opened)
	}
	row := fmt.Sprintf(`[...document.querySelectorAll('#sessions tr')].find(r => r.innerText.includes(%q))`, c.GetId())
	if got := b.eval(row + ` !== undefined`); got != true {
		t.Fatalf("the session is not listed:\n%v", b.eval("document.body.innerText"))
	}
	b.screenshot("sre-portal-breakglass.png")
	b.eval(fmt.Sprintf(`(() => { const f = %s.querySelector('form');
		f.querySelector('input[name=reason]').value = %q; f.querySelector('button').click(); return true })()`, row, reason))
	b.waitFor(`document.querySelector('#message') !== null && document.querySelector('#message').innerText.startsWith('Session')`)
	if got := b.eval(row + ` === undefined`); got != true {
		t.Fatalf("the revoked session is still listed as live:\n%v", b.eval("document.body.innerText"))
	}
	// The forms name what they acted on in the audit log (their paths do not): the request the
	// cluster it asked for.
	if text := b.open(base + "/portal/audit?person=alice&target=" + c.GetId()); !strings.Contains(text, "POST /portal/breakglass/request") {
		t.Fatalf("the audit page has no break-glass request targeting the cluster:\n%s", text)
	}
}
