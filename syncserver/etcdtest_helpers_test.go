package syncserver_test

import (
	"context"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// onEtcd reports whether the test server keeps its state in etcd (the
// suite run by cluster/ with HILODB_TEST_ETCD set).
func (ts *testServer) onEtcd() bool { return len(ts.cfg.Etcd) > 0 }

// compactEtcd compacts the etcd cluster's history up to its current
// revision, as etcd's auto-compaction does, after one unrelated write so
// that every key written before is below the compacted revision.
func (ts *testServer) compactEtcd() {
	ts.t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: ts.cfg.Etcd, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		ts.t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	put, err := cli.Put(ctx, ts.cfg.EtcdPrefix+"test/bump", "1")
	if err != nil {
		ts.t.Fatal(err)
	}
	if _, err := cli.Compact(ctx, put.Header.Revision, clientv3.WithCompactPhysical()); err != nil {
		ts.t.Fatal(err)
	}
}
