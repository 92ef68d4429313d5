package servertest

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
)

// BuildServer builds the real server command (cmd/hilodb-server) into a
// temporary directory and returns its path.
func BuildServer(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "hilodb-server")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/hilodb/hilodb/cmd/hilodb-server").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// FreeAddr returns a loopback address whose port is free right now.
func FreeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// Output collects what a process writes; it is safe for the process's
// writers and the test to use at once.
type Output struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write implements io.Writer.
func (o *Output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.Write(p)
}

// String returns everything written so far.
func (o *Output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.String()
}

// Proc is a server binary running as a process of its own, as a crash or
// cluster test needs it: killed with SIGKILL, stopped with SIGTERM,
// restarted over the same data.
type Proc struct {
	Cmd  *exec.Cmd
	Out  *Output       // its standard output and error
	Done chan struct{} // closed once it has exited
}

// Launch runs bin with args and returns at once. The process is killed when
// the test ends, and when the test binary dies.
func Launch(t testing.TB, bin string, args ...string) *Proc {
	t.Helper()
	p := &Proc{Out: &Output{}, Done: make(chan struct{})}
	p.Cmd = exec.Command(bin, args...)
	p.Cmd.Stdout, p.Cmd.Stderr = p.Out, p.Out
	p.Cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.Cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.Cmd.Wait(); close(p.Done) }()
	t.Cleanup(p.Kill)
	return p
}

// StartProc launches bin serving on addr (it is given "-addr addr" first)
// and waits up to timeout until this process, not another on a reused
// port, serves /healthz; it fails the test if the process exits first.
func StartProc(t testing.TB, bin, addr string, timeout time.Duration, args ...string) *Proc {
	t.Helper()
	p := Launch(t, bin, append([]string{"-addr", addr}, args...)...)
	deadline := time.Now().Add(timeout)
	for {
		// The server logs "serving" once it listens.
		if strings.Contains(p.Out.String(), "serving") {
			res, err := http.Get("http://" + addr + "/healthz")
			if err == nil {
				res.Body.Close()
				if res.StatusCode == http.StatusOK {
					return p
				}
			}
		}
		select {
		case <-p.Done:
			t.Fatalf("server exited at start: %s", p.Out)
		default:
		}
		if time.Now().After(deadline) {
			p.Kill()
			t.Fatalf("server not ready after %s: %s", timeout, p.Out)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Kill sends SIGKILL and waits for the process to end.
func (p *Proc) Kill() {
	select {
	case <-p.Done:
		return
	default:
	}
	p.Cmd.Process.Signal(syscall.SIGKILL)
	<-p.Done
}

// Stop sends SIGTERM and waits up to 15 s for the process to end, then
// kills it and fails the test.
func (p *Proc) Stop(t testing.TB) {
	t.Helper()
	p.Cmd.Process.Signal(syscall.SIGTERM)
	if !p.Exited(15 * time.Second) {
		p.Kill()
		t.Fatalf("server did not stop on SIGTERM: %s", p.Out)
	}
}

// Exited waits up to d for the process to end by itself.
func (p *Proc) Exited(d time.Duration) bool {
	select {
	case <-p.Done:
		return true
	case <-time.After(d):
		return false
	}
}
