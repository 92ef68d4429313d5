package syncserver_test

import (
	"fmt"
	"testing"

	"github.com/hilodb/hilodb/syncserver"
)

// TestLostWritesNoted: a push refused as a conflict is noted on the stored
// version that won, which comes again through the feed with "lost"; a
// retry of the refused push notes nothing twice; a version carries at most
// eight notes; a later write starts with none.
func TestLostWritesNoted(t *testing.T) {
	ts := startServer(t, syncserver.Config{})
	r := dialRaw(t, ts)
	r.call(`{"id":1,"op":"hello","db":"shop","node":""}`)
	r.call(`{"id":2,"op":"push","changes":[{"id":"n/1","baseRev":"","rev":"_mAAAAAAA-AA","doc":{"v":0}}]}`)
	won := results(t, r.call(`{"id":3,"op":"push","changes":[{"id":"n/1","baseRev":"_mAAAAAAA-AA","rev":"_mAAAAAAB-AA","doc":{"v":"won"}}]}`))
	wonSeq := won[0]["seq"].(float64)
	lose := `{"id":4,"op":"push","changes":[{"id":"n/1","baseRev":"_mAAAAAAA-AA","rev":"_mAAAAAAC-BB","doc":{"v":"lost"}}]}`
	refused := results(t, r.call(lose))
	if errCode(refused[0]) != "conflict" || refused[0]["seq"].(float64) <= wonSeq {
		t.Fatalf("refused push: %v; want a conflict whose current version has a sequence past %v", refused, wonSeq)
	}
	pull := func(since float64) []any {
		t.Helper()
		m := r.call(fmt.Sprintf(`{"id":5,"op":"pull","since":%d}`, int64(since)))
		return m["changes"].([]any)
	}
	changes := pull(wonSeq)
	if len(changes) != 1 {
		t.Fatalf("pull after the winner's write: %v", changes)
	}
	ch := changes[0].(map[string]any)
	lost, _ := ch["lost"].([]any)
	if ch["rev"] != "_mAAAAAAB-AA" || len(lost) != 1 {
		t.Fatalf("change: %v; want the winning version with one lost write", ch)
	}
	l := lost[0].(map[string]any)
	if l["rev"] != "_mAAAAAAC-BB" || l["doc"].(map[string]any)["v"] != "lost" || l["doc"].(map[string]any)["_rev"] != "_mAAAAAAC-BB" {
		t.Fatalf("lost write: %v", l)
	}
	// get answers with the notes too.
	got := r.call(`{"id":6,"op":"get","ids":["n/1"]}`)["docs"].([]any)[0].(map[string]any)
	if gl, _ := got["lost"].([]any); len(gl) != 1 {
		t.Errorf("get: %v; want the lost write", got)
	}
	// A retry notes nothing again: no new change.
	seq := ch["seq"].(float64)
	if again := results(t, r.call(lose)); errCode(again[0]) != "conflict" || again[0]["seq"] != seq {
		t.Fatalf("retried refused push: %v; want the same sequence %v", again, seq)
	}
	if c := pull(seq); len(c) != 0 {
		t.Fatalf("pull after a retried refused push: %v", c)
	}
	// Eight notes at most.
	for i := range 10 {
		r.call(fmt.Sprintf(`{"id":7,"op":"push","changes":[{"id":"n/1","baseRev":"_mAAAAAAA-AA","rev":"_mAAAAAAD-C%d","deleted":true}]}`, i))
	}
	all := r.call(`{"id":8,"op":"get","ids":["n/1"]}`)["docs"].([]any)[0].(map[string]any)
	if al, _ := all["lost"].([]any); len(al) != 8 || al[1].(map[string]any)["deleted"] != true {
		t.Fatalf("after ten refused pushes: %v; want eight notes", all)
	}
	// A later version starts with none.
	r.call(`{"id":9,"op":"push","changes":[{"id":"n/1","baseRev":"_mAAAAAAB-AA","rev":"_mAAAAAAE-AA","doc":{"v":"next"}}]}`)
	next := r.call(`{"id":10,"op":"get","ids":["n/1"]}`)["docs"].([]any)[0].(map[string]any)
	if _, ok := next["lost"]; ok || next["rev"] != "_mAAAAAAE-AA" {
		t.Fatalf("the next version: %v; want no notes", next)
	}
}
