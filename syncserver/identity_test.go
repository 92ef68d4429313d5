package syncserver_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/hilodb/hilodb/client"
	"github.com/hilodb/hilodb/syncserver"
)

func TestIdentityNextBatchProtocol(t *testing.T) {
	ts := startServer(t, syncserver.Config{MaxBatch: 4})
	r := dialRaw(t, ts)
	r.call(`{"id":1,"op":"hello","db":"shop","node":""}`)
	got := r.call(`{"id":9,"op":"identity.nextBatch","names":["companies","companies","orders"]}`)
	if got["id"] != 9.0 || got["ok"] != true || fmt.Sprint(got["values"]) != "[1 2 1]" {
		t.Fatalf("nextBatch: got %v, want values [1 2 1]", got)
	}
	if got := r.call(`{"id":10,"op":"identity.next","name":"companies"}`); got["value"] != 3.0 {
		t.Errorf("identity.next after batch: got %v, want 3", got)
	}
	tests := []struct{ msg, code string }{
		{`{"id":11,"op":"identity.nextBatch","names":["a","a","a","a","a"]}`, "batch_too_big"},
		{`{"id":12,"op":"identity.nextBatch","names":[]}`, "bad_request"},
		{`{"id":13,"op":"identity.nextBatch"}`, "bad_request"},
		{`{"id":14,"op":"identity.nextBatch","names":"companies"}`, "bad_request"},
		{`{"id":15,"op":"identity.nextBatch","names":["companies",7]}`, "bad_request"},
		// One bad name fails the whole batch: companies is not advanced.
		{`{"id":16,"op":"identity.nextBatch","names":["companies","bad|name"]}`, "bad_request"},
	}
	for _, tt := range tests {
		if got := r.call(tt.msg); errCode(got) != tt.code {
			t.Errorf("%s: got %v, want %s", tt.msg, got, tt.code)
		}
	}
	if got := r.call(`{"id":17,"op":"identity.next","name":"companies"}`); got["value"] != 4.0 {
		t.Errorf("after refused batches: got %v, want 4 (nothing allocated by them)", got)
	}
	// Databases keep separate identities.
	r2 := dialRaw(t, ts)
	r2.call(`{"id":1,"op":"hello","db":"other","node":""}`)
	if got := r2.call(`{"id":2,"op":"identity.nextBatch","names":["companies"]}`); fmt.Sprint(got["values"]) != "[1]" {
		t.Errorf("other database: got %v, want [1]", got)
	}
}

// TestIdentitiesConcurrent mixes identity.next and identity.nextBatch from
// many clients and finds every value exactly once, across a restart.
func TestIdentitiesConcurrent(t *testing.T) {
	ts := startServer(t, syncserver.Config{})
	const clients, rounds = 8, 60
	var mu sync.Mutex
	seen := map[string]map[int64]bool{"a": {}, "b": {}}
	record := func(name string, v int64) {
		mu.Lock()
		defer mu.Unlock()
		if seen[name][v] {
			t.Errorf("identity %s value %d handed out twice", name, v)
		}
		seen[name][v] = true
	}
	run := func() {
		var wg sync.WaitGroup
		for i := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c := client.New(ts.url(), client.Options{Database: "shop"})
				defer c.Close()
				ctx := context.Background()
				for j := range rounds {
					if (i+j)%2 == 0 {
						v, err := c.NextIdentity(ctx, "a")
						if err != nil {
							t.Error(err)
							return
						}
						record("a", v)
						continue
					}
					names := []string{"a", "b", "a", "b", "b"}
					vs, err := c.NextIdentities(ctx, names)
					if err != nil {
						t.Error(err)
						return
					}
					for k, v := range vs {
						record(names[k], v)
					}
				}
			}()
		}
		wg.Wait()
	}
	run()
	ts.restart()
	run()
	// Every value from 1 to the count was handed out: no gaps without crashes.
	for name, vs := range seen {
		for v := int64(1); v <= int64(len(vs)); v++ {
			if !vs[v] {
				t.Errorf("identity %s: value %d missing among %d values", name, v, len(vs))
				break
			}
		}
	}
}

func TestClientNextIdentitiesErrors(t *testing.T) {
	ts := startServer(t, syncserver.Config{MaxBatch: 2})
	c := client.New(ts.url(), client.Options{Database: "shop"})
	defer c.Close()
	_, err := c.NextIdentities(context.Background(), []string{"a", "b", "c"})
	var e *client.Error
	if !errors.As(err, &e) || e.Code != "batch_too_big" || e.Num != 1905 {
		t.Fatalf("got %v, want batch_too_big 1905", err)
	}
	if !strings.Contains(err.Error(), "identity.nextBatch") {
		t.Errorf("error %q does not name the op", err)
	}
	vs, err := c.NextIdentities(context.Background(), []string{"a", "a"})
	if err != nil || len(vs) != 2 || vs[0] != 1 || vs[1] != 2 {
		t.Fatalf("got %v, %v; want [1 2]", vs, err)
	}
	if err := c.Ping(context.Background()); err != nil {
		t.Errorf("ping: %v", err)
	}
}
