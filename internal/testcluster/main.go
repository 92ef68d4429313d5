// Command testcluster runs a cluster of sync servers over a real etcd
// cluster on 127.0.0.1, for tests written in other languages than Go (the
// npm package's and the edge worker's failover tests): Debian's etcd-server
// with -members members and -servers hilodb-server processes with node tags
// A, B, C, …, every one on a free port and in a temporary directory.
//
//	testcluster -server-bin build/bin/hilodb-server [-servers 3] [-members 3] [-lifetime 10m]
//
// Once everything answers it writes one line of JSON to standard output:
//
//	{"etcd":["127.0.0.1:…",…],"prefix":"hilodb/","servers":[{"tag":"A","ws":"ws://…/v1/sync","http":"http://…","pid":123},…]}
//
// A test may SIGKILL a server by its pid. Lines on standard input are
// commands, each answered by one line of JSON:
//
//	start TAG   start the server TAG again (after a kill), on its address and data
//	kill TAG    SIGKILL the server TAG and wait until it is gone
//
// It stops everything and exits when its standard input closes (the test
// ended, or died), on SIGINT or SIGTERM, and after -lifetime whatever
// happens: nothing it started outlives it (the children are killed when it
// dies, too).
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hilodb/hilodb/internal/etcdtest"
)

// startTimeout bounds the start of one sync server.
const startTimeout = 40 * time.Second

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "testcluster:", err)
		os.Exit(1)
	}
}

// server is one sync server process.
type server struct {
	Tag  string `json:"tag"`
	WS   string `json:"ws"`
	HTTP string `json:"http"`
	PID  int    `json:"pid"`

	addr string
	args []string
	log  string
	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

// ready is the line written once the cluster answers.
type ready struct {
	Etcd    []string  `json:"etcd"`
	Prefix  string    `json:"prefix"`
	Servers []*server `json:"servers"`
}

func run() error {
	bin := flag.String("server-bin", os.Getenv("HILODB_SERVER_BIN"), "the hilodb-server binary (default $HILODB_SERVER_BIN)")
	n := flag.Int("servers", 3, "sync servers to start (1 to 26), tags A, B, C, …")
	members := flag.Int("members", 3, "etcd members")
	lifetime := flag.Duration("lifetime", 10*time.Minute, "stop everything after this long, whatever happens")
	prefix := flag.String("etcd-prefix", "hilodb/", "the servers' key prefix in etcd")
	flag.Parse()
	if *bin == "" {
		return errors.New("-server-bin is required")
	}
	if *n < 1 || *n > 26 || *members < 1 {
		return errors.New("-servers must be 1 to 26 and -members at least 1")
	}
	dir, err := os.MkdirTemp("", "hilodb-testcluster-")
	if err != nil {
		return fmt.Errorf("create directory: %w", err)
	}
	defer os.RemoveAll(dir)

	ec, err := etcdtest.Start(filepath.Join(dir, "etcd"), *members)
	if err != nil {
		return err
	}
	defer ec.Stop()

	var servers []*server
	defer func() {
		for _, s := range servers {
			s.kill()
		}
	}()
	for i := range *n {
		tag := string(rune('A' + i))
		addr, err := freeAddr()
		if err != nil {
			return err
		}
		s := &server{Tag: tag, addr: addr, WS: "ws://" + addr + "/v1/sync", HTTP: "http://" + addr, log: filepath.Join(dir, tag+".log")}
		s.args = []string{"-addr", addr, "-data", filepath.Join(dir, tag), "-node-tag", tag,
			"-etcd", strings.Join(ec.Endpoints(), ","), "-etcd-prefix", *prefix, "-rate", "-1"}
		servers = append(servers, s)
		if err := s.start(*bin); err != nil {
			return err
		}
	}
	line, err := json.Marshal(ready{Etcd: ec.Endpoints(), Prefix: *prefix, Servers: servers})
	if err != nil {
		return fmt.Errorf("encode addresses: %w", err)
	}
	fmt.Println(string(line))

	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	eof := make(chan struct{})
	go func() {
		defer close(eof)
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			fmt.Println(command(*bin, servers, sc.Text()))
		}
	}()
	select {
	case <-eof:
	case <-stop:
	case <-time.After(*lifetime):
		return fmt.Errorf("stopped after -lifetime %s", *lifetime)
	}
	return nil
}

// command runs one line of standard input and returns its JSON answer.
func command(bin string, servers []*server, line string) string {
	verb, tag, _ := strings.Cut(strings.TrimSpace(line), " ")
	answer := func(err error) string {
		if err != nil {
			b, _ := json.Marshal(map[string]string{"error": err.Error()})
			return string(b)
		}
		b, _ := json.Marshal(map[string]string{"ok": verb + " " + tag})
		return string(b)
	}
	var s *server
	for _, x := range servers {
		if x.Tag == tag {
			s = x
		}
	}
	if s == nil {
		return answer(fmt.Errorf("no server %q", tag))
	}
	switch verb {
	case "kill":
		s.kill()
		return answer(nil)
	case "start":
		if err := s.start(bin); err != nil {
			return answer(err)
		}
		b, _ := json.Marshal(s)
		return string(b)
	}
	return answer(fmt.Errorf("unknown command %q (want kill or start)", verb))
}

// start launches the server and waits until it answers /healthz.
func (s *server) start(bin string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		select {
		case <-s.done:
		default:
			return fmt.Errorf("server %s is running", s.Tag)
		}
	}
	logf, err := os.OpenFile(s.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("open server log: %w", err)
	}
	cmd := exec.Command(bin, s.args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("start server %s: %w", s.Tag, err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); logf.Close(); close(done) }()
	s.cmd, s.done, s.PID = cmd, done, cmd.Process.Pid
	deadline := time.Now().Add(startTimeout)
	cl := http.Client{Timeout: time.Second}
	for {
		select {
		case <-done:
			out, _ := os.ReadFile(s.log)
			return fmt.Errorf("server %s exited at start:\n%s", s.Tag, out)
		default:
		}
		if res, err := cl.Get(s.HTTP + "/healthz"); err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			out, _ := os.ReadFile(s.log)
			return fmt.Errorf("server %s not ready after %s:\n%s", s.Tag, startTimeout, out)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// kill sends SIGKILL and waits until the process is gone.
func (s *server) kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGKILL)
	<-s.done
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("find a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}
