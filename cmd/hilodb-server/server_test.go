package main_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/hilodb/hilodb/client"
	"github.com/hilodb/hilodb/internal/servertest"
)

// proc is the server running as a separate process.
type proc struct {
	*servertest.Proc
	t *testing.T
}

// startProc runs the server binary on addr and waits until /healthz
// answers.
func startProc(t *testing.T, bin, addr string, args ...string) *proc {
	t.Helper()
	if slices.Contains(args, "-tls-cert") {
		return tryStart(t, bin, addr, args...) // the caller checks readiness over TLS
	}
	return &proc{servertest.StartProc(t, bin, addr, 15*time.Second, args...), t}
}

// tryStart runs the server binary on addr without waiting for it.
func tryStart(t *testing.T, bin, addr string, args ...string) *proc {
	t.Helper()
	return &proc{servertest.Launch(t, bin, append([]string{"-addr", addr}, args...)...), t}
}

func (p *proc) kill() { p.Kill() }

// stop sends SIGTERM and waits for a clean exit.
func (p *proc) stop() {
	p.t.Helper()
	p.Stop(p.t)
	if code := p.Cmd.ProcessState.ExitCode(); code != 0 {
		p.t.Errorf("server exit code %d: %s", code, p.Out)
	}
}

func wsURL(addr string) string { return "ws://" + addr + "/v1/sync" }

func TestCorruptDataFileRefusedAndRepaired(t *testing.T) {
	bin := servertest.BuildServer(t)
	dir := t.TempDir()
	addr := servertest.FreeAddr(t)
	p := startProc(t, bin, addr, "-data", dir)
	c := client.New(wsURL(addr), client.Options{Database: "shop"})
	ctx := context.Background()
	var maxIdent int64
	for range 30 {
		v, err := c.NextIdentity(ctx, "companies")
		if err != nil {
			t.Fatal(err)
		}
		maxIdent = v
	}
	c.Close()
	p.stop()

	path := filepath.Join(dir, "hilodb.db")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(b, []byte("ident/shop/companies")) // the first record of it
	copy(b[i-2:], "!!")
	if err := os.WriteFile(path, b, 0o640); err != nil {
		t.Fatal(err)
	}
	p = tryStart(t, bin, addr, "-data", dir)
	select {
	case <-p.Done:
	case <-time.After(15 * time.Second):
		t.Fatal("server started on a damaged data file")
	}
	if p.Cmd.ProcessState.ExitCode() == 0 {
		t.Fatal("server exited 0 on a damaged data file")
	}
	if msg := p.Out.String(); !strings.Contains(msg, path) || !strings.Contains(msg, "hilodb-server repair") || !strings.Contains(msg, "damaged at byte") {
		t.Fatalf("start error should name the file, the offset and the repair command: %s", msg)
	}
	out, err := exec.Command(bin, "repair", "-data", dir, "-bump", "100").CombinedOutput()
	if err != nil {
		t.Fatalf("repair: %v %s", err, out)
	}
	if !strings.Contains(string(out), "could not be read and were dropped") {
		t.Errorf("repair report: %s", out)
	}
	t.Logf("repair: %s", out)
	p = startProc(t, bin, addr, "-data", dir)
	c = client.New(wsURL(addr), client.Options{Database: "shop"})
	defer c.Close()
	v, err := c.NextIdentity(ctx, "companies")
	if err != nil || v <= maxIdent {
		t.Fatalf("after repair: %d %v, want above %d", v, err, maxIdent)
	}
	p.stop()
}

func TestConfigFileAndBackupCommands(t *testing.T) {
	bin := servertest.BuildServer(t)
	dir := t.TempDir()
	addr := servertest.FreeAddr(t)
	cfgFile := filepath.Join(t.TempDir(), "hilodb.json")
	cfg := `{"tokens":{"shop":"s3cret"},"adminToken":"adm","databases":["shop"],"maxBatch":3,"idle":"1m"}`
	if err := os.WriteFile(cfgFile, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startProc(t, bin, addr, "-data", dir, "-config", cfgFile)
	ctx := context.Background()
	if _, err := client.Dial(ctx, wsURL(addr), client.Options{Database: "shop", Token: "wrong"}); err == nil || !strings.Contains(err.Error(), "unauthorized") {
		t.Errorf("wrong token: %v", err)
	}
	if _, err := client.Dial(ctx, wsURL(addr), client.Options{Database: "other", Token: "s3cret"}); err == nil || !strings.Contains(err.Error(), "database_not_found") {
		t.Errorf("unconfigured database: %v", err)
	}
	c, err := client.Dial(ctx, wsURL(addr), client.Options{Database: "shop", Token: "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.NextIdentities(ctx, []string{"a", "b", "c", "d"}); err == nil || !strings.Contains(err.Error(), "batch_too_big") {
		t.Errorf("maxBatch from config: %v", err)
	}
	last, err := c.NextIdentity(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	res, err := http.Get("http://" + addr + "/dashboard")
	if err != nil || res.StatusCode != 401 {
		t.Fatalf("dashboard without admin token: %v %v", res, err)
	}
	res.Body.Close()

	backup := filepath.Join(t.TempDir(), "b.db")
	out, err := exec.Command(bin, "backup", "-url", "http://"+addr+"/admin/backup", "-out", backup, "-admin-token", "adm").CombinedOutput()
	if err != nil {
		t.Fatalf("backup: %v %s", err, out)
	}
	if out, err := exec.Command(bin, "backup", "-url", "http://"+addr+"/admin/backup", "-out", backup+"2").CombinedOutput(); err == nil {
		t.Errorf("backup without admin token succeeded: %s", out)
	}
	p.stop()
	restored := t.TempDir()
	if out, err := exec.Command(bin, "restore", "-from", backup, "-data", restored, "-bump", "10").CombinedOutput(); err != nil {
		t.Fatalf("restore: %v %s", err, out)
	}
	// A new address: another test may have taken the old port meanwhile.
	addr2 := servertest.FreeAddr(t)
	startProc(t, bin, addr2, "-data", restored, "-config", cfgFile)
	c2, err := client.Dial(ctx, wsURL(addr2), client.Options{Database: "shop", Token: "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if v, err := c2.NextIdentity(ctx, "a"); err != nil || v != last+11 {
		t.Errorf("after restore with bump 10: %d %v, want %d", v, err, last+11)
	}
}

func TestTLS(t *testing.T) {
	bin := servertest.BuildServer(t)
	certFile, keyFile, pool := selfSigned(t)
	addr := servertest.FreeAddr(t)
	startProc(t, bin, addr, "-data", t.TempDir(), "-tls-cert", certFile, "-tls-key", keyFile)
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	var res *http.Response
	var err error
	for start := time.Now(); time.Since(start) < 15*time.Second; time.Sleep(20 * time.Millisecond) {
		if res, err = hc.Get("https://" + addr + "/healthz"); err == nil {
			break
		}
	}
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("healthz over TLS: %v %v", res, err)
	}
	res.Body.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "wss://"+addr+"/v1/sync", &websocket.DialOptions{HTTPClient: hc})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	ws.Write(ctx, websocket.MessageText, []byte(`{"id":1,"op":"hello","db":"shop","node":""}`))
	_, data, err := ws.Read(ctx)
	var reply map[string]any
	if err != nil || json.Unmarshal(data, &reply) != nil || reply["ok"] != true {
		t.Fatalf("hello over wss: %s %v", data, err)
	}
	// Plain HTTP on the TLS port is refused.
	if res, err := http.Get("http://" + addr + "/healthz"); err == nil {
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode == 200 {
			t.Errorf("plain HTTP answered on the TLS port: %s", body)
		}
	}
}

// selfSigned writes a certificate for 127.0.0.1 and its key.
func selfSigned(t *testing.T) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "hilodb test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600)
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}
