package cluster_test

import (
	"bytes"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hilodb/hilodb/internal/etcdtest"
)

// buildServer builds the real server binary into a temporary directory.
func buildServer(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "hilodb-server")
	out, err := exec.Command("go", "build", "-o", bin, "../cmd/hilodb-server").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// startEtcd starts a three-member etcd cluster that the test stops.
func startEtcd(t *testing.T) *etcdtest.Cluster {
	t.Helper()
	ec, err := etcdtest.Start(t.TempDir(), 3)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ec.Stop)
	return ec
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// node is one sync server process of the cluster.
type node struct {
	t    *testing.T
	bin  string
	tag  string
	addr string
	etcd []string
	data string

	cmd  *exec.Cmd
	out  *syncBuffer
	done chan struct{}
}

func newNode(t *testing.T, bin, tag string, etcd []string) *node {
	return &node{t: t, bin: bin, tag: tag, addr: freeAddr(t), etcd: etcd, data: t.TempDir()}
}

func (n *node) url() string { return "ws://" + n.addr + "/v1/sync" }

// launch starts the process without waiting for it.
func (n *node) launch() {
	n.t.Helper()
	n.out = &syncBuffer{}
	n.done = make(chan struct{})
	n.cmd = exec.Command(n.bin, "-addr", n.addr, "-data", n.data, "-node-tag", n.tag,
		"-etcd", strings.Join(n.etcd, ","), "-rate", "-1")
	n.cmd.Stdout, n.cmd.Stderr = n.out, n.out
	n.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := n.cmd.Start(); err != nil {
		n.t.Fatal(err)
	}
	done := n.done
	cmd := n.cmd
	go func() { cmd.Wait(); close(done) }()
	n.t.Cleanup(n.kill)
}

// start launches the server and waits until it serves.
func (n *node) start() {
	n.t.Helper()
	n.launch()
	deadline := time.Now().Add(40 * time.Second)
	for {
		if strings.Contains(n.out.String(), "serving") {
			res, err := http.Get("http://" + n.addr + "/healthz")
			if err == nil {
				res.Body.Close()
				if res.StatusCode == 200 {
					return
				}
			}
		}
		select {
		case <-n.done:
			n.t.Fatalf("server %s exited at start: %s", n.tag, n.out)
		default:
		}
		if time.Now().After(deadline) {
			n.kill()
			n.t.Fatalf("server %s not ready: %s", n.tag, n.out)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// kill sends SIGKILL and waits for the process to end.
func (n *node) kill() {
	if n.cmd == nil {
		return
	}
	select {
	case <-n.done:
		return
	default:
	}
	n.cmd.Process.Signal(syscall.SIGKILL)
	<-n.done
}

// stop sends SIGTERM and waits for a clean exit.
func (n *node) stop() {
	n.t.Helper()
	n.cmd.Process.Signal(syscall.SIGTERM)
	if !n.exited(15 * time.Second) {
		n.kill()
		n.t.Fatalf("server %s did not stop on SIGTERM: %s", n.tag, n.out)
	}
}

// exited waits up to d for the process to end by itself.
func (n *node) exited(d time.Duration) bool {
	select {
	case <-n.done:
		return true
	case <-time.After(d):
		return false
	}
}
