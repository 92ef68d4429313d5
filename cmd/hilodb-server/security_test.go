package main_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/hilodb/hilodb/client"
	"github.com/hilodb/hilodb/idgen"
	"github.com/hilodb/hilodb/internal/servertest"
)

// fetch GETs url with the Host header set to host (when not empty).
func fetch(t *testing.T, url, host string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// TestBinaryRefusesRebinding runs the server as `make run` does (no tokens,
// a static root) and reaches it as a page on a rebound DNS name would.
func TestBinaryRefusesRebinding(t *testing.T) {
	bin := servertest.BuildServer(t)
	web := t.TempDir()
	os.WriteFile(filepath.Join(web, "index.html"), []byte("<p>demo</p>"), 0o644)
	addr := servertest.FreeAddr(t)
	startProc(t, bin, addr, "-data", t.TempDir(), "-static", web)
	port := addr[strings.LastIndex(addr, ":"):]
	evil := "rebind.attacker.example" + port
	for _, path := range []string{"/admin/backup", "/dashboard.json", "/", "/healthz"} {
		if code, body := fetch(t, "http://"+addr+path, evil); code != http.StatusMisdirectedRequest || !strings.Contains(body, "forbidden_host") {
			t.Errorf("GET %s as %s: %d %.100s, want 421 forbidden_host", path, evil, code, body)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, res, err := websocket.Dial(ctx, wsURL(addr), &websocket.DialOptions{Host: evil, HTTPHeader: http.Header{"Origin": {"http://" + evil}}})
	if err == nil || res == nil || res.StatusCode != http.StatusMisdirectedRequest {
		t.Errorf("websocket as %s: %v %v, want 421", evil, res, err)
	}
	if code, body := fetch(t, "http://"+addr+"/", "localhost"+port); code != 200 || !strings.Contains(body, "demo") {
		t.Errorf("GET / as localhost: %d %s", code, body)
	}
}

// TestBinaryAllowedHosts checks -allowed-hosts on the real binary.
func TestBinaryAllowedHosts(t *testing.T) {
	bin := servertest.BuildServer(t)
	addr := servertest.FreeAddr(t)
	startProc(t, bin, addr, "-data", t.TempDir(), "-allowed-hosts", "hilodb.test")
	if code, _ := fetch(t, "http://"+addr+"/healthz", "hilodb.test:8080"); code != 200 {
		t.Errorf("listed host: %d", code)
	}
	if code, _ := fetch(t, "http://"+addr+"/healthz", "other.test"); code != http.StatusMisdirectedRequest {
		t.Errorf("unlisted host: %d", code)
	}
}

// TestStaticServesOnlyTheApp checks that -static refuses symbolic links,
// dotfiles and the data file inside the static root.
func TestStaticServesOnlyTheApp(t *testing.T) {
	bin := servertest.BuildServer(t)
	web := t.TempDir()
	secret := filepath.Join(t.TempDir(), "secret.txt")
	os.WriteFile(secret, []byte("top secret"), 0o600)
	os.WriteFile(filepath.Join(web, "index.html"), []byte("<p>demo</p>"), 0o644)
	os.WriteFile(filepath.Join(web, "app.js"), []byte("console.log(1)"), 0o644)
	os.WriteFile(filepath.Join(web, ".env"), []byte("TOKEN=x"), 0o644)
	os.MkdirAll(filepath.Join(web, ".git"), 0o755)
	os.WriteFile(filepath.Join(web, ".git", "config"), []byte("[core]"), 0o644)
	os.MkdirAll(filepath.Join(web, "assets"), 0o755)
	if err := os.Symlink(secret, filepath.Join(web, "assets", "link.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Dir(secret), filepath.Join(web, "linkdir")); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(web, "data")
	addr := servertest.FreeAddr(t)
	startProc(t, bin, addr, "-data", data, "-static", web)
	c, err := client.Dial(context.Background(), wsURL(addr), client.Options{Database: "shop"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.NextIdentity(context.Background(), "secretname"); err != nil {
		t.Fatal(err)
	}
	c.Close()
	base := "http://" + addr
	for _, path := range []string{"/.env", "/.git/config", "/assets/link.txt", "/linkdir/secret.txt", "/data/hilodb.db", "/data/", "/assets/", "/%2e%2e/secret.txt"} {
		code, body := fetch(t, base+path, "")
		if code != http.StatusNotFound || strings.Contains(body, "secret") || strings.Contains(body, "TOKEN") {
			t.Errorf("GET %s: %d %.100q, want 404", path, code, body)
		}
	}
	for path, want := range map[string]string{"/": "demo", "/index.html": "demo", "/app.js": "console"} {
		if code, body := fetch(t, base+path, ""); code != 200 || !strings.Contains(body, want) {
			t.Errorf("GET %s: %d %q", path, code, body)
		}
	}
}

// TestSetCounterRepairsATag exhausts nothing but raises a tag far, then
// lowers it with set-counter while the server is stopped.
func TestSetCounterRepairsATag(t *testing.T) {
	bin := servertest.BuildServer(t)
	dir := t.TempDir()
	addr := servertest.FreeAddr(t)
	p := startProc(t, bin, addr, "-data", dir)
	ctx := context.Background()
	c, err := client.Dial(ctx, wsURL(addr), client.Options{Database: "shop"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.NextIdentity(ctx, "companies"); err != nil {
		t.Fatal(err)
	}
	c.Close()
	p.stop()
	for _, args := range [][]string{
		{"-data", dir, "-db", "shop", "-hilo", "orders", "-value", "1000"},
		{"-data", dir, "-db", "shop", "-identity", "companies", "-value", "500"},
	} {
		out, err := exec.Command(bin, append([]string{"set-counter"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("set-counter %v: %v %s", args, err, out)
		}
	}
	for _, bad := range [][]string{
		{"-data", dir, "-db", "shop", "-value", "5"},
		{"-data", dir, "-db", "shop", "-hilo", "a/b", "-value", "5"},
		{"-data", dir, "-db", "shop", "-hilo", "orders", "-value", "9007199254740992"},
	} {
		if out, err := exec.Command(bin, append([]string{"set-counter"}, bad...)...).CombinedOutput(); err == nil {
			t.Errorf("set-counter %v succeeded: %s", bad, out)
		}
	}
	addr2 := servertest.FreeAddr(t)
	startProc(t, bin, addr2, "-data", dir)
	c2, err := client.Dial(ctx, wsURL(addr2), client.Options{Database: "shop"})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if v, err := c2.NextIdentity(ctx, "companies"); err != nil || v != 501 {
		t.Errorf("identity after set-counter 500: %d %v, want 501", v, err)
	}
	r, err := c2.NextRange(ctx, "orders", idgen.Range{})
	if err != nil || r.Low != 1001 {
		t.Errorf("HiLo lease after set-counter 1000: %+v %v, want low 1001", r, err)
	}
}

// TestServerThatStopsAnswering freezes the real server with SIGSTOP: its
// sockets stay open but nothing answers, as with a sleeping laptop or a dead
// network. The client notices within its bounds, says so, and carries on
// once the server is back.
func TestServerThatStopsAnswering(t *testing.T) {
	bin := servertest.BuildServer(t)
	addr := servertest.FreeAddr(t)
	p := startProc(t, bin, addr, "-data", t.TempDir())
	status := make(chan bool, 16)
	ctx := context.Background()
	c, err := client.Dial(ctx, wsURL(addr), client.Options{Database: "shop", RequestTimeout: 500 * time.Millisecond,
		Heartbeat: 200 * time.Millisecond, OnStatus: func(up bool) { status <- up }})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if up := <-status; !up {
		t.Fatal("first status: offline")
	}
	if _, err := c.NextIdentity(ctx, "companies"); err != nil {
		t.Fatal(err)
	}
	if err := p.Cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer p.Cmd.Process.Signal(syscall.SIGCONT)
	// With no call under way, the heartbeat notices.
	select {
	case up := <-status:
		if up {
			t.Fatal("status online while the server is frozen")
		}
	case <-time.After(3 * time.Second):
		t.Fatal("no offline status within 3s of the server freezing")
	}
	if c.Connected() {
		t.Error("Connected() is true while the server is frozen")
	}
	// A call fails within its bound instead of waiting forever.
	start := time.Now()
	_, err = c.NextIdentity(ctx, "companies")
	if !errors.Is(err, client.ErrDisconnected) {
		t.Fatalf("call to a frozen server: %v, want ErrDisconnected", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("call to a frozen server took %v, want it bounded by the request timeout", d)
	}
	p.Cmd.Process.Signal(syscall.SIGCONT)
	var v int64
	for deadline := time.Now().Add(10 * time.Second); ; {
		if v, err = c.NextIdentity(ctx, "companies"); err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil || v < 2 {
		t.Fatalf("after the server thawed: %d %v", v, err)
	}
	if !c.Connected() {
		t.Error("Connected() is false after the server thawed")
	}
}
