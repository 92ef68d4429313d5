package storage

import (
	"fmt"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

func put(db, id string, rev int64) *clientv3.Event {
	return &clientv3.Event{Type: mvccpb.PUT, Kv: &mvccpb.KeyValue{Key: []byte("p/rdoc/" + db + "/" + id), ModRevision: rev}}
}

func del(db, id string, rev int64) *clientv3.Event {
	return &clientv3.Event{Type: mvccpb.DELETE, Kv: &mvccpb.KeyValue{Key: []byte("p/rdoc/" + db + "/" + id), ModRevision: rev}}
}

// TestChangeLogOnlyOwn: the proof behind prevSeq on etcd.
func TestChangeLogOnlyOwn(t *testing.T) {
	l := newChangeLog()
	if l.onlyOwn("shop", 10, 10, nil, time.Millisecond) {
		t.Fatal("proved something with no watch running")
	}
	l.reset(10)
	l.record("p/rdoc/", []*clientv3.Event{put("shop", "a", 11), put("other", "x", 12)})
	l.record("p/rdoc/", []*clientv3.Event{put("shop", "b", 13), put("shop", "c", 13)})
	l.record("p/rdoc/", []*clientv3.Event{del("shop", "t", 14)})
	own := func(ids ...string) map[string]bool {
		m := map[string]bool{}
		for _, id := range ids {
			m[id] = true
		}
		return m
	}
	for _, tc := range []struct {
		name       string
		since, rev int64
		own        map[string]bool
		want       bool
	}{
		{"only own writes after since", 12, 13, own("b", "c"), true},
		{"another document after since", 12, 13, own("b"), false},
		{"another database's writes do not count", 11, 13, own("b", "c"), true},
		{"a write before since does not count", 11, 13, own("b", "c"), true},
		{"a's write after since", 10, 13, own("b", "c"), false},
		{"a removed tombstone after since", 12, 14, own("b", "c", "t"), false},
		{"since before the watch started", 9, 13, own("a", "b", "c"), false},
		{"rev not delivered yet", 12, 15, own("b", "c"), false},
		{"a database without writes", 10, 13, own(), true},
	} {
		db := "shop"
		if tc.name == "a database without writes" {
			db = "empty"
		}
		if got := l.onlyOwn(db, tc.since, tc.rev, tc.own, 5*time.Millisecond); got != tc.want {
			t.Errorf("%s: onlyOwn(since %d, rev %d) = %v, want %v", tc.name, tc.since, tc.rev, got, tc.want)
		}
	}
	// Waiting for the watch: the proof comes once rev is delivered.
	done := make(chan bool)
	go func() { done <- l.onlyOwn("shop", 14, 15, own("d"), 5*time.Second) }()
	time.Sleep(10 * time.Millisecond)
	l.record("p/rdoc/", []*clientv3.Event{put("shop", "d", 15)})
	if !<-done {
		t.Error("no proof once the watch delivered the push's own write")
	}
}

// TestChangeLogRecent: the keys a pull from the change log gets, and where
// the log stops reaching back.
func TestChangeLogRecent(t *testing.T) {
	l := newChangeLog()
	l.reset(100)
	l.record("p/rdoc/", []*clientv3.Event{put("shop", "a", 101), put("shop", "b", 101)})
	l.record("p/rdoc/", []*clientv3.Event{put("shop", "a", 102)})
	l.record("p/rdoc/", []*clientv3.Event{put("shop", "c", 103), put("other", "z", 104)})
	entries, upTo, ok := l.recent("shop", 100, 103, time.Millisecond)
	if !ok || upTo != 104 {
		t.Fatalf("recent: ok %v, upTo %d", ok, upTo)
	}
	got := fmt.Sprint(entries)
	if want := "[{101 b false} {102 a false} {103 c false}]"; got != want {
		t.Errorf("recent from 100: %s, want %s (each key once, at its last write, in order)", got, want)
	}
	if entries, _, _ := l.recent("shop", 102, 103, time.Millisecond); fmt.Sprint(entries) != "[{103 c false}]" {
		t.Errorf("recent from 102: %v", entries)
	}
	if _, _, ok := l.recent("shop", 99, 103, time.Millisecond); ok {
		t.Error("served a checkpoint from before the watch started")
	}
	if _, _, ok := l.recent("shop", 100, 105, 5*time.Millisecond); ok {
		t.Error("served a revision the watch has not delivered")
	}
	// Past changeLogSize writes the older half is forgotten.
	for i := range changeLogSize {
		l.record("p/rdoc/", []*clientv3.Event{put("shop", fmt.Sprint("n", i), int64(200+i))})
	}
	if _, _, ok := l.recent("shop", 150, 0, time.Millisecond); ok {
		t.Error("served a checkpoint older than what the log kept")
	}
	if entries, _, ok := l.recent("shop", int64(200+changeLogSize-2), 0, time.Millisecond); !ok || len(entries) != 1 {
		t.Errorf("recent near the end: %v, %v", entries, ok)
	}
	if l.onlyOwn("shop", 150, int64(200+changeLogSize-1), map[string]bool{}, time.Millisecond) {
		t.Error("proved prevSeq for a checkpoint older than what the log kept")
	}
}
