// Package etcdtest runs a real etcd cluster of Debian's etcd-server binary
// on 127.0.0.1, on free ports and in a temporary directory, for the cluster
// tests and the cluster benchmark. Members can be killed and started again.
package etcdtest

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// ErrNoEtcd is returned when the etcd binary is not installed.
var ErrNoEtcd = errors.New("etcd binary not found; install Debian's etcd-server (make deps-apt) or set HILODB_ETCD_BIN")

// Binary returns the etcd binary: $HILODB_ETCD_BIN, else /usr/bin/etcd,
// else etcd on the PATH.
func Binary() (string, error) {
	if b := os.Getenv("HILODB_ETCD_BIN"); b != "" {
		return b, nil
	}
	if _, err := os.Stat("/usr/bin/etcd"); err == nil {
		return "/usr/bin/etcd", nil
	}
	if p, err := exec.LookPath("etcd"); err == nil {
		return p, nil
	}
	return "", ErrNoEtcd
}

// Member is one etcd process of a Cluster.
type Member struct {
	Name      string
	ClientURL string // http://127.0.0.1:port
	PeerURL   string
	Dir       string
	args      []string
	cmd       *exec.Cmd
	exited    chan struct{}
}

// Cluster is a running etcd cluster.
type Cluster struct {
	Members []*Member
	bin     string
	logDir  string
}

// Start starts an n-member cluster with its data under dir and waits until
// every member answers.
func Start(dir string, n int) (*Cluster, error) {
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("create etcd directory: %w", err)
	}
	c := &Cluster{bin: bin, logDir: dir}
	ports, err := freePorts(2 * n)
	if err != nil {
		return nil, err
	}
	var initial []string
	for i := 0; i < n; i++ {
		m := &Member{
			Name:      fmt.Sprintf("m%d", i),
			ClientURL: fmt.Sprintf("http://127.0.0.1:%d", ports[2*i]),
			PeerURL:   fmt.Sprintf("http://127.0.0.1:%d", ports[2*i+1]),
			Dir:       filepath.Join(dir, fmt.Sprintf("m%d", i)),
		}
		initial = append(initial, m.Name+"="+m.PeerURL)
		c.Members = append(c.Members, m)
	}
	token := fmt.Sprintf("hilodb-test-%d", time.Now().UnixNano())
	for _, m := range c.Members {
		m.args = []string{
			"--name", m.Name, "--data-dir", m.Dir,
			"--listen-client-urls", m.ClientURL, "--advertise-client-urls", m.ClientURL,
			"--listen-peer-urls", m.PeerURL, "--initial-advertise-peer-urls", m.PeerURL,
			"--initial-cluster", strings.Join(initial, ","), "--initial-cluster-state", "new",
			"--initial-cluster-token", token,
			// A push of a whole batch is one transaction: room for it.
			"--max-txn-ops", "100000", "--max-request-bytes", "33554432",
			"--heartbeat-interval", "50", "--election-timeout", "500",
			"--auto-compaction-mode", "periodic", "--auto-compaction-retention", "1h",
			"--logger", "zap", "--log-level", "error",
		}
		if err := c.start(m); err != nil {
			c.Stop()
			return nil, err
		}
	}
	if err := c.WaitHealthy(30 * time.Second); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

func (c *Cluster) start(m *Member) error {
	logf, err := os.OpenFile(filepath.Join(c.logDir, m.Name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("open etcd log: %w", err)
	}
	cmd := exec.Command(c.bin, m.args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("start etcd %s: %w", m.Name, err)
	}
	m.cmd = cmd
	m.exited = make(chan struct{})
	go func() { cmd.Wait(); logf.Close(); close(m.exited) }()
	return nil
}

// Endpoints are the members' client addresses (host:port).
func (c *Cluster) Endpoints() []string {
	var out []string
	for _, m := range c.Members {
		out = append(out, strings.TrimPrefix(m.ClientURL, "http://"))
	}
	return out
}

// Kill stops member i with SIGKILL.
func (c *Cluster) Kill(i int) {
	m := c.Members[i]
	if m.cmd == nil {
		return
	}
	_ = m.cmd.Process.Kill()
	<-m.exited
	m.cmd = nil
}

// Restart starts member i again on its data directory.
func (c *Cluster) Restart(i int) error {
	m := c.Members[i]
	if m.cmd != nil {
		return nil
	}
	args := append([]string(nil), m.args...)
	for j := range args {
		if args[j] == "new" && args[j-1] == "--initial-cluster-state" {
			args[j] = "existing"
		}
	}
	m.args = args
	return c.start(m)
}

// WaitHealthy waits until every running member answers /health.
func (c *Cluster) WaitHealthy(d time.Duration) error {
	deadline := time.Now().Add(d)
	for _, m := range c.Members {
		if m.cmd == nil {
			continue
		}
		for {
			if healthy(m.ClientURL) {
				break
			}
			select {
			case <-m.exited:
				return fmt.Errorf("etcd %s exited; see %s", m.Name, filepath.Join(c.logDir, m.Name+".log"))
			default:
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("etcd %s not healthy after %s; see %s", m.Name, d, filepath.Join(c.logDir, m.Name+".log"))
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return nil
}

// Stop kills every member.
func (c *Cluster) Stop() {
	for i := range c.Members {
		c.Kill(i)
	}
}

func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("find a free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func healthy(clientURL string) bool {
	cl := http.Client{Timeout: time.Second}
	resp, err := cl.Get(clientURL + "/health")
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode == 200 && strings.Contains(string(b), `"true"`)
}
