package syncserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/hilodb/hilodb/syncserver"
)

func results(t *testing.T, m map[string]any) []map[string]any {
	t.Helper()
	rs, ok := m["results"].([]any)
	if !ok {
		t.Fatalf("no results: %v", m)
	}
	out := make([]map[string]any, len(rs))
	for i, r := range rs {
		out[i] = r.(map[string]any)
	}
	return out
}

func TestPushPull(t *testing.T) {
	ts := startServer(t, syncserver.Config{})
	r := dialRaw(t, ts)
	r.call(`{"id":1,"op":"hello","db":"shop","node":""}`)
	push := r.call(`{"id":2,"op":"push","changes":[
		{"id":"orders/1-A","baseRev":"","rev":"_mAAAAAAA-BT","doc":{"total":1}},
		{"id":"orders/2-A","baseRev":"","rev":"_mAAAAAAA-BT","doc":{"total":2}},
		{"id":"orders/3-A","baseRev":"x","rev":"_mAAAAAAA-BT","doc":{"total":3}},
		{"id":"orders/4-A","baseRev":"","rev":"_mAAAAAAA-BT","doc":[1]},
		{"id":"","baseRev":"","rev":"_mAAAAAAA-BT","doc":{}}]}`)
	res := results(t, push)
	// On the single server the sequence counts 1, 2, …; on etcd it is the
	// commit's revision, shared by every document of one push.
	s1, _ := res[0]["seq"].(float64)
	if res[0]["ok"] != true || s1 <= 0 || ts.onEtcd() && res[1]["seq"] != s1 || !ts.onEtcd() && (s1 != 1 || res[1]["seq"] != 2.0) {
		t.Fatalf("push: %v", push)
	}
	if ts.onEtcd() && (push["prevSeq"] != s1 || push["last"] != s1) {
		t.Fatalf("push without since: prevSeq and last must both be the commit's revision: %v", push)
	}
	if errCode(res[2]) != "conflict" || errCode(res[3]) != "bad_document" || errCode(res[4]) != "bad_document" {
		t.Fatalf("push errors: %v", push)
	}
	// A retry of an applied write is ok with its sequence, never a conflict.
	retry := results(t, r.call(`{"id":3,"op":"push","changes":[{"id":"orders/1-A","baseRev":"","rev":"_mAAAAAAA-BT","doc":{"total":1}}]}`))
	if retry[0]["ok"] != true || retry[0]["seq"] != s1 {
		t.Fatalf("retry: %v", retry)
	}
	// An update on the right base, one on a stale base.
	upd := results(t, r.call(`{"id":4,"op":"push","changes":[
		{"id":"orders/1-A","baseRev":"_mAAAAAAA-BT","rev":"_mAAAAAAA-CT","doc":{"total":10}},
		{"id":"orders/2-A","baseRev":"old","rev":"_mAAAAAAA-JT","doc":{"total":20}}]}`))
	s3, _ := upd[0]["seq"].(float64)
	if upd[0]["ok"] != true || s3 <= s1 || !ts.onEtcd() && s3 != 3 {
		t.Fatalf("update: %v", upd)
	}
	cur, _ := upd[1]["current"].(map[string]any)
	if errCode(upd[1]) != "conflict" || cur["_rev"] != "_mAAAAAAA-BT" || cur["_id"] != "orders/2-A" || cur["total"] != 2.0 {
		t.Fatalf("stale update: %v", upd[1])
	}
	// Delete, then the tombstone counts as absent for baseRev "".
	del := results(t, r.call(`{"id":5,"op":"push","changes":[{"id":"orders/2-A","baseRev":"_mAAAAAAA-BT","rev":"_mAAAAAAA-DT","deleted":true}]}`))
	if del[0]["ok"] != true {
		t.Fatalf("delete: %v", del)
	}
	stale := results(t, r.call(`{"id":6,"op":"push","changes":[{"id":"orders/2-A","baseRev":"_mAAAAAAA-BT","rev":"_mAAAAAAA-ET","doc":{}}]}`))
	if cur, _ := stale[0]["current"].(map[string]any); cur["_deleted"] != true || cur["_rev"] != "_mAAAAAAA-DT" {
		t.Fatalf("edit against a delete: %v", stale)
	}
	again := results(t, r.call(`{"id":7,"op":"push","changes":[{"id":"orders/2-A","baseRev":"","rev":"_mAAAAAAA-FT","doc":{"total":5}}]}`))
	s5, _ := again[0]["seq"].(float64)
	// Sequences 4 and 6 went to the versions that refused the stale
	// writes, stored again with the refused write noted (lostwrites.go).
	if again[0]["ok"] != true || s5 <= s3 || !ts.onEtcd() && s5 != 7 {
		t.Fatalf("recreate: %v", again)
	}
	// Pull: the latest version of each document, in sequence order.
	pull := r.call(`{"id":8,"op":"pull","since":0,"limit":1000}`)
	changes := pull["changes"].([]any)
	if len(changes) != 2 || pull["last"] != s5 || pull["more"] != false {
		t.Fatalf("pull: %v", pull)
	}
	c0 := changes[0].(map[string]any)
	c1 := changes[1].(map[string]any)
	if c0["id"] != "orders/1-A" || c0["seq"] != s3 || c0["rev"] != "_mAAAAAAA-CT" || c1["id"] != "orders/2-A" || c1["seq"] != s5 {
		t.Fatalf("pull changes: %v", changes)
	}
	if doc := c0["doc"].(map[string]any); doc["total"] != 10.0 || doc["_rev"] != "_mAAAAAAA-CT" || doc["_id"] != "orders/1-A" {
		t.Fatalf("pulled doc: %v", doc)
	}
	// Batches.
	p1 := r.call(`{"id":9,"op":"pull","since":0,"limit":1}`)
	if len(p1["changes"].([]any)) != 1 || p1["more"] != true || p1["last"] != s3 {
		t.Fatalf("pull limit 1: %v", p1)
	}
	p2 := r.call(fmt.Sprintf(`{"id":10,"op":"pull","since":%d,"limit":1}`, int64(s3)))
	if len(p2["changes"].([]any)) != 1 || p2["last"] != s5 {
		t.Fatalf("pull since 3: %v", p2)
	}
	// Databases do not see each other's documents.
	r2 := dialRaw(t, ts)
	r2.call(`{"id":1,"op":"hello","db":"other","node":""}`)
	if p := r2.call(`{"id":2,"op":"pull","since":0}`); len(p["changes"].([]any)) != 0 {
		t.Fatalf("other db: %v", p)
	}
	// Durable across restart.
	ts.restart()
	r3 := dialRaw(t, ts)
	r3.call(`{"id":1,"op":"hello","db":"shop","node":""}`)
	if p := r3.call(`{"id":2,"op":"pull","since":0}`); len(p["changes"].([]any)) != 2 || p["last"] != s5 {
		t.Fatalf("after restart: %v", p)
	}
}

// A push that asks for a brief reply hears of the items not accepted
// alone, each with its place; hello says whether pushes may be pipelined.
func TestBriefPushReply(t *testing.T) {
	ts := startServer(t, syncserver.Config{})
	r := dialRaw(t, ts)
	hello := r.call(`{"id":1,"op":"hello","db":"shop","node":""}`)
	if pipe, _ := hello["pipeline"].(bool); pipe == ts.onEtcd() {
		t.Fatalf("hello on etcd %v says pipeline %v: %v", ts.onEtcd(), hello["pipeline"], hello)
	}
	push := r.call(`{"id":2,"op":"push","brief":true,"changes":[
		{"id":"orders/1-A","baseRev":"","rev":"_mAAAAAAA-BT","doc":{"total":1}},
		{"id":"orders/2-A","baseRev":"x","rev":"_mAAAAAAA-BT","doc":{"total":2}},
		{"id":"orders/3-A","baseRev":"","rev":"_mAAAAAAA-BT","doc":{"total":3}},
		{"id":"orders/4-A","baseRev":"","rev":"_mAAAAAAA-BT","doc":[1]}]}`)
	if _, full := push["results"]; full || push["brief"] != true || push["ok"] != true {
		t.Fatalf("brief push: %v", push)
	}
	failed, _ := push["failed"].([]any)
	if len(failed) != 2 {
		t.Fatalf("failed: %v", push)
	}
	f0, f1 := failed[0].(map[string]any), failed[1].(map[string]any)
	if f0["i"] != 1.0 || f0["id"] != "orders/2-A" || errCode(f0) != "conflict" || f1["i"] != 3.0 || errCode(f1) != "bad_document" {
		t.Fatalf("failed: %v", failed)
	}
	if last, _ := push["last"].(float64); last <= 0 {
		t.Fatalf("last: %v", push)
	}
	// The accepted items' sequences, 0 for the others: 1 and 2 on the
	// single server, the commit's revision for both on etcd.
	seqs, _ := push["seqs"].([]any)
	if len(seqs) != 4 || seqs[1] != 0.0 || seqs[3] != 0.0 || seqs[0].(float64) <= 0 ||
		!ts.onEtcd() && (seqs[0] != 1.0 || seqs[2] != 2.0) || ts.onEtcd() && seqs[2] != seqs[0] {
		t.Fatalf("seqs: %v", push)
	}
	// With seqsFrom, a single server's accepted items follow one another:
	// the first one's sequence alone. On etcd they share the commit's
	// revision, so every item's is given.
	from := r.call(`{"id":8,"op":"push","brief":true,"seqsFrom":true,"changes":[
		{"id":"orders/7-A","baseRev":"","rev":"_mAAAAAAA-BT","doc":{"total":7}},
		{"id":"orders/2-A","baseRev":"x","rev":"_mAAAAAAA-BT","doc":{"total":2}},
		{"id":"orders/8-A","baseRev":"","rev":"_mAAAAAAA-BT","doc":{"total":8}}]}`)
	if failed, _ := from["failed"].([]any); len(failed) != 1 || failed[0].(map[string]any)["i"] != 1.0 {
		t.Fatalf("seqsFrom push: %v", from)
	}
	if ts.onEtcd() {
		if seqs, _ := from["seqs"].([]any); len(seqs) != 3 || from["seqsFrom"] != nil {
			t.Fatalf("seqsFrom push on etcd: %v", from)
		}
	} else if _, has := from["seqs"]; has || from["seqsFrom"] != 3.0 || from["last"] != 4.0 {
		t.Fatalf("seqsFrom push: %v", from)
	}
	// A retry of a write the server has keeps its old sequence: the
	// accepted items' sequences no longer follow one another, and every
	// item's is given.
	retry := r.call(`{"id":10,"op":"push","brief":true,"seqsFrom":true,"changes":[
		{"id":"orders/9-A","baseRev":"","rev":"_mAAAAAAA-BT","doc":{"total":9}},
		{"id":"orders/7-A","baseRev":"","rev":"_mAAAAAAA-BT","doc":{"total":7}}]}`)
	if seqs, _ := retry["seqs"].([]any); len(seqs) != 2 || retry["seqsFrom"] != nil || seqs[1] != from["seqsFrom"] && !ts.onEtcd() {
		t.Fatalf("push with a retry: %v (the retried write was at %v)", retry, from["seqsFrom"])
	}
	for _, v := range []string{`"yes"`, `1`, `{}`} {
		bad := r.call(`{"id":9,"op":"push","brief":true,"seqsFrom":` + v + `,"changes":[{"id":"orders/9-A","baseRev":"","rev":"_mAAAAAAA-BT","doc":{}}]}`)
		if errCode(bad) != "bad_request" {
			t.Fatalf("seqsFrom %s: %v", v, bad)
		}
	}
	// All accepted: nothing listed.
	ok := r.call(`{"id":3,"op":"push","brief":true,"changes":[{"id":"orders/5-A","baseRev":"","rev":"_mAAAAAAA-BT","doc":{}}]}`)
	if failed, isList := ok["failed"].([]any); !isList || len(failed) != 0 {
		t.Fatalf("all accepted: %v", ok)
	}
	if p := r.call(`{"id":4,"op":"pull","since":0}`); len(p["changes"].([]any)) != 6 {
		t.Fatalf("pull after brief pushes: %v", p)
	}
	// brief is true or false; anything else is refused and writes nothing.
	for _, v := range []string{`"yes"`, `1`, `{}`} {
		bad := r.call(`{"id":5,"op":"push","brief":` + v + `,"changes":[{"id":"orders/9-A","baseRev":"","rev":"_mAAAAAAA-BT","doc":{}}]}`)
		if errCode(bad) != "bad_request" {
			t.Fatalf("brief %s: %v", v, bad)
		}
	}
	if full := r.call(`{"id":6,"op":"push","brief":false,"changes":[{"id":"orders/6-A","baseRev":"","rev":"_mAAAAAAA-BT","doc":{}}]}`); len(results(t, full)) != 1 {
		t.Fatalf("brief false: %v", full)
	}
	if p := r.call(`{"id":7,"op":"pull","since":0}`); len(p["changes"].([]any)) != 7 {
		t.Fatalf("a refused push wrote: %v", p)
	}
}

func TestSubscribe(t *testing.T) {
	ts := startServer(t, syncserver.Config{})
	w := dialRaw(t, ts)
	w.call(`{"id":1,"op":"hello","db":"shop","node":""}`)
	first := w.call(`{"id":2,"op":"push","changes":[{"id":"a","baseRev":"","rev":"_mAAAAAAA-BT","doc":{}}]}`)["last"]
	s := dialRaw(t, ts)
	s.call(`{"id":1,"op":"hello","db":"shop","node":""}`)
	if got := s.call(`{"id":2,"op":"subscribe","since":0}`); got["ok"] != true {
		t.Fatalf("subscribe: %v", got)
	}
	read := func() map[string]any {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, data, err := s.ws.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		json.Unmarshal(data, &m)
		return m
	}
	if m := read(); m["op"] != "changes" || m["last"] != first || m["id"] != nil {
		t.Fatalf("catch-up: %v, want last %v", m, first)
	}
	var want float64
	for i := 2; i <= 4; i++ {
		want = w.call(fmt.Sprintf(`{"id":%d,"op":"push","changes":[{"id":"d%d","baseRev":"","rev":"_mAAAAAAA-BT","doc":{}}]}`, i+1, i))["last"].(float64)
	}
	var last float64
	for last < want {
		m := read()
		if m["op"] != "changes" {
			t.Fatalf("live: %v", m)
		}
		last = m["last"].(float64)
	}
	if last != want {
		t.Fatalf("live last %v, want %v", last, want)
	}
}

func TestTombstoneCompaction(t *testing.T) {
	ts := startServer(t, syncserver.Config{TombstoneTTL: time.Millisecond})
	r := dialRaw(t, ts)
	r.call(`{"id":1,"op":"hello","db":"shop","node":""}`)
	r.call(`{"id":2,"op":"push","changes":[{"id":"a","baseRev":"","rev":"_mAAAAAAA-BT","doc":{}},{"id":"b","baseRev":"","rev":"_mAAAAAAA-BT","doc":{}}]}`)
	del := r.call(`{"id":3,"op":"push","changes":[{"id":"a","baseRev":"_mAAAAAAA-BT","rev":"_mAAAAAAA-CT","deleted":true}]}`)["last"]
	time.Sleep(5 * time.Millisecond)
	if ts.onEtcd() {
		// On etcd a tombstone goes once etcd's history is compacted past
		// it, not after the TTL.
		if n, err := ts.srv.CompactTombstones(context.Background()); err != nil || n != 0 {
			t.Fatalf("compact before etcd compacted: %d, %v", n, err)
		}
		ts.compactEtcd()
	}
	n, err := ts.srv.CompactTombstones(context.Background())
	if err != nil || n != 1 {
		t.Fatalf("compact: %d, %v", n, err)
	}
	p := r.call(`{"id":4,"op":"pull","since":0}`)
	if len(p["changes"].([]any)) != 1 || p["purgedSeq"] != del {
		t.Fatalf("after compaction: %v", p)
	}
}

func TestGet(t *testing.T) {
	ts := startServer(t, syncserver.Config{MaxBatch: 4})
	r := dialRaw(t, ts)
	r.call(`{"id":1,"op":"hello","db":"shop","node":""}`)
	first := r.call(`{"id":2,"op":"push","changes":[{"id":"a","baseRev":"","rev":"_mAAAAAAA-BT","doc":{"x":1}},{"id":"b","baseRev":"","rev":"_mAAAAAAA-BT","doc":{}}]}`)
	r.call(`{"id":3,"op":"push","changes":[{"id":"b","baseRev":"_mAAAAAAA-BT","rev":"_mAAAAAAA-CT","deleted":true}]}`)
	got := r.call(`{"id":4,"op":"get","ids":["a","b","nope"]}`)
	docs, _ := got["docs"].([]any)
	if len(docs) != 3 {
		t.Fatalf("get: %v", got)
	}
	a, b, n := docs[0].(map[string]any), docs[1].(map[string]any), docs[2].(map[string]any)
	if a["rev"] != "_mAAAAAAA-BT" || a["seq"] != results(t, first)[0]["seq"] || a["doc"].(map[string]any)["x"] != 1.0 {
		t.Errorf("a: %v", a)
	}
	if b["rev"] != "_mAAAAAAA-CT" || b["deleted"] != true {
		t.Errorf("b: %v", b)
	}
	if n["id"] != "nope" || n["rev"] != "" && n["rev"] != nil {
		t.Errorf("missing: %v", n)
	}
	if got := r.call(`{"id":5,"op":"get","ids":["1","2","3","4","5"]}`); errCode(got) != "batch_too_big" {
		t.Errorf("too many ids: %v", got)
	}
	if got := r.call(`{"id":6,"op":"get","ids":"a"}`); errCode(got) != "bad_request" {
		t.Errorf("ids not an array: %v", got)
	}
}

// TestDeleteOfUnknownDocument: a deletion with baseRev "" of a document the
// server does not have is a no-op, not a conflict; of one it has (its
// creating push arrived, the reply was lost), a conflict with the current
// version.
func TestDeleteOfUnknownDocument(t *testing.T) {
	ts := startServer(t, syncserver.Config{})
	r := dialRaw(t, ts)
	r.call(`{"id":1,"op":"hello","db":"shop","node":""}`)
	res := results(t, r.call(`{"id":2,"op":"push","changes":[{"id":"never","baseRev":"","rev":"_mAAAAAAA-KT","deleted":true}]}`))
	if res[0]["ok"] != true {
		t.Fatalf("delete of an unknown document: %v", res)
	}
	if p := r.call(`{"id":3,"op":"pull","since":0}`); len(p["changes"].([]any)) != 0 {
		t.Fatalf("the no-op left a change: %v", p)
	}
	r.call(`{"id":4,"op":"push","changes":[{"id":"made","baseRev":"","rev":"_mAAAAAAA-BT","doc":{}}]}`)
	res = results(t, r.call(`{"id":5,"op":"push","changes":[{"id":"made","baseRev":"","rev":"_mAAAAAAA-LT","deleted":true}]}`))
	if errCode(res[0]) != "conflict" || res[0]["current"].(map[string]any)["_rev"] != "_mAAAAAAA-BT" {
		t.Fatalf("delete with base \"\" of a stored document: %v", res)
	}
}

// Pushes sent back to back are checked and queued while the one before
// commits, yet every request still takes effect, and is answered, in the
// order sent: a push builds on the one before it, a get after them sees
// both, a refusal between them comes in its place, and the buffered bytes
// the pushes held are given back once they are answered.
func TestPipelinedPushes(t *testing.T) {
	ts := startServer(t, syncserver.Config{})
	r := dialRaw(t, ts)
	r.call(`{"id":1,"op":"hello","db":"shop","node":""}`)
	var first, second strings.Builder
	first.WriteString(`{"id":2,"op":"push","brief":true,"changes":[`)
	second.WriteString(`{"id":3,"op":"push","changes":[`)
	const n = 300
	for i := range n {
		if i > 0 {
			first.WriteByte(',')
			second.WriteByte(',')
		}
		fmt.Fprintf(&first, `{"id":"orders/%d-A","baseRev":"","rev":"_mAAAAAAA-BT","doc":{"total":%d}}`, i, i)
		// Accepted only once the first push is committed.
		fmt.Fprintf(&second, `{"id":"orders/%d-A","baseRev":"_mAAAAAAA-BT","rev":"_mAAAAAAA-CT","doc":{"total":%d}}`, i, -i)
	}
	first.WriteString(`]}`)
	second.WriteString(`]}`)
	frames := []string{
		first.String(),
		second.String(),
		`{"id":4,"op":"push","brief":"yes","changes":[]}`, // refused in its place
		`{"id":5,"op":"push","changes":[{"id":"orders/0-A","baseRev":"_mAAAAAAA-BT","rev":"_mAAAAAAA-DT","doc":{}}]}`,
		`{"id":6,"op":"get","ids":["orders/0-A","orders/299-A"]}`,
		`{"id":7,"op":"pull","since":0}`,
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, f := range frames {
		if err := r.ws.Write(ctx, websocket.MessageText, []byte(f)); err != nil {
			t.Fatal(err)
		}
	}
	replies := make([]map[string]any, len(frames))
	for i := range replies {
		m, err := r.read()
		if err != nil {
			t.Fatalf("reply %d: %v", i, err)
		}
		if m["id"] != float64(i+2) {
			t.Fatalf("reply %d is to request %v, want %d: %v", i, m["id"], i+2, m)
		}
		replies[i] = m
	}
	if failed, _ := replies[0]["failed"].([]any); replies[0]["ok"] != true || len(failed) != 0 {
		t.Fatalf("first push: %v", replies[0])
	}
	for i, res := range results(t, replies[1]) {
		if res["ok"] != true {
			t.Fatalf("second push, item %d: %v", i, res)
		}
	}
	if errCode(replies[2]) != "bad_request" {
		t.Fatalf("refused push: %v", replies[2])
	}
	// Refused, and noted on the version that won: one more sequence.
	if res := results(t, replies[3]); len(res) != 1 || errCode(res[0]) != "conflict" {
		t.Fatalf("a push on a superseded rev: %v", replies[3])
	}
	docs, _ := replies[4]["docs"].([]any)
	if len(docs) != 2 || !strings.Contains(fmt.Sprint(docs), "_mAAAAAAA-CT") {
		t.Fatalf("get after the pushes: %v", replies[4])
	}
	if changes, _ := replies[5]["changes"].([]any); len(changes) != n || !ts.onEtcd() && replies[5]["last"] != float64(2*n+1) {
		t.Fatalf("pull after the pushes: %d changes, last %v", len(changes), replies[5]["last"])
	}
	waitFor(t, func() bool { return metric(t, mustGet(t, ts.hs.URL+"/metrics"), "hilodb_buffered_bytes") == 0 })
}

// A push queued behind one whose fsync fails is refused too, each in its
// place, and nothing after them is answered out of order.
func TestPipelinedPushesFsyncFailure(t *testing.T) {
	ts := startServer(t, syncserver.Config{})
	r := dialRaw(t, ts)
	r.call(`{"id":1,"op":"hello","db":"shop","node":""}`)
	syncserver.FailFsync(ts.srv, errors.New("EIO"))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i := 2; i <= 4; i++ {
		f := fmt.Sprintf(`{"id":%d,"op":"push","changes":[{"id":"orders/%d-A","baseRev":"","rev":"_mAAAAAAA-BT","doc":{}}]}`, i, i)
		if err := r.ws.Write(ctx, websocket.MessageText, []byte(f)); err != nil {
			t.Fatal(err)
		}
	}
	for i := 2; i <= 4; i++ {
		m, err := r.read()
		if err != nil {
			t.Fatalf("reply to %d: %v", i, err)
		}
		if m["id"] != float64(i) || errCode(m) != "unavailable" {
			t.Fatalf("reply %d: %v, want unavailable", i, m)
		}
	}
}
