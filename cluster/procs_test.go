package cluster_test

import (
	"strings"
	"testing"
	"time"

	"github.com/hilodb/hilodb/internal/etcdtest"
	"github.com/hilodb/hilodb/internal/servertest"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

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

// etcdClient is a client of the etcd members at endpoints, closed when the
// test ends.
func etcdClient(t *testing.T, endpoints []string) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// node is one sync server process of the cluster.
type node struct {
	t    *testing.T
	bin  string
	tag  string
	addr string
	etcd []string
	data string
	// prefix is the deployment's etcd key prefix; empty: the default.
	prefix string

	p *servertest.Proc // nil before the first launch
}

func newNode(t *testing.T, bin, tag string, etcd []string) *node {
	return &node{t: t, bin: bin, tag: tag, addr: servertest.FreeAddr(t), etcd: etcd, data: t.TempDir()}
}

func (n *node) url() string { return "ws://" + n.addr + "/v1/sync" }

// launch starts the process without waiting for it.
func (n *node) launch() {
	n.t.Helper()
	n.p = servertest.Launch(n.t, n.bin, n.args()...)
}

// args are the server's flags: its address, tag and the etcd cluster.
func (n *node) args() []string {
	args := []string{"-addr", n.addr, "-data", n.data, "-node-tag", n.tag, "-etcd", strings.Join(n.etcd, ","), "-rate", "-1"}
	if n.prefix != "" {
		args = append(args, "-etcd-prefix", n.prefix)
	}
	return args
}

// start launches the server and waits until it serves.
func (n *node) start() {
	n.t.Helper()
	n.p = servertest.StartProc(n.t, n.bin, n.addr, 40*time.Second, n.args()[2:]...)
}

// kill sends SIGKILL and waits for the process to end.
func (n *node) kill() {
	if n.p != nil {
		n.p.Kill()
	}
}

// stop sends SIGTERM and waits for a clean exit.
func (n *node) stop() {
	n.t.Helper()
	n.p.Stop(n.t)
}

// exited waits up to d for the process to end by itself.
func (n *node) exited(d time.Duration) bool { return n.p.Exited(d) }
