package core_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/hilodb/hilodb/core"
)

func remote(id, rev string, seq int64, doc string) core.RemoteChange {
	v := core.Version{ID: id, Rev: rev}
	if doc == "" {
		v.Deleted = true
	} else {
		v.Doc = json.RawMessage(doc)
	}
	return core.RemoteChange{Version: v, Seq: seq}
}

func TestPendingAndAcknowledge(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	out, err := s.Put(ctx, "notes", []byte(`{"_key":"a","v":1}`))
	if err != nil {
		t.Fatal(err)
	}
	rev1 := decode(t, out)["_rev"].(string)
	p, _ := s.PendingWrites(10)
	if len(p) != 1 || p[0].ID != "notes/a" || p[0].BaseRev != "" || p[0].Rev != rev1 || p[0].Deleted {
		t.Fatalf("pending: %+v", p)
	}
	// Written again before the acknowledgement arrives: still pending, now
	// on top of the acknowledged revision.
	out, _ = s.Put(ctx, "notes", []byte(`{"_key":"a","v":2}`))
	rev2 := decode(t, out)["_rev"].(string)
	if err := s.Acknowledge(core.Ack{ID: "notes/a", Rev: rev1}); err != nil {
		t.Fatal(err)
	}
	p, _ = s.PendingWrites(10)
	if len(p) != 1 || p[0].BaseRev != rev1 || p[0].Rev != rev2 {
		t.Fatalf("pending after a stale ack: %+v", p)
	}
	s.Acknowledge(core.Ack{ID: "notes/a", Rev: rev2})
	if n, _ := s.PendingCount(); n != 0 {
		t.Fatalf("pending after ack: %d", n)
	}
	// A delete of a synced document is a pending tombstone on its base.
	if err := s.Delete("notes/a"); err != nil {
		t.Fatal(err)
	}
	p, _ = s.PendingWrites(10)
	if len(p) != 1 || !p[0].Deleted || p[0].BaseRev != rev2 || p[0].Rev == rev2 {
		t.Fatalf("pending delete: %+v", p)
	}
	// A document never acknowledged is deleted on the server too: its push
	// may have arrived with the reply lost. The deletion goes with base "".
	s.Put(ctx, "notes", []byte(`{"_key":"b"}`))
	s.Delete("notes/b")
	p, _ = s.PendingWrites(10)
	if len(p) != 2 || p[1].ID != "notes/b" || !p[1].Deleted || p[1].BaseRev != "" {
		t.Fatalf("pending after deleting an unsynced doc: %+v", p)
	}
}

func TestApplyRemote(t *testing.T) {
	s := newTestStore(t)
	res, err := s.ApplyRemote([]core.RemoteChange{
		remote("notes/a", "r2", 10, `{"_id":"notes/a","_rev":"r2","v":2}`),
		remote("notes/b", "r1", 11, `{"_id":"notes/b","_rev":"r1"}`),
		remote("notes/c", "r1", 11, ""), // a deletion of something never here
	}, 11, nil)
	if err != nil || len(res.Conflicts) != 0 || len(res.Changed) != 2 {
		t.Fatalf("apply: %+v %v", res, err)
	}
	if ck, _ := s.Checkpoint(); ck != 11 {
		t.Fatalf("checkpoint %d, want 11", ck)
	}
	// An older change arriving late (a pull overlapping the live feed) is
	// skipped, never rolling the document back.
	if res, _ := s.ApplyRemote([]core.RemoteChange{remote("notes/a", "r1", 9, `{"_id":"notes/a","_rev":"r1","v":1}`)}, 9, nil); len(res.Changed) != 0 {
		t.Errorf("stale change reported as a change: %+v", res)
	}
	if got := decode(t, must(s.Get("notes/a")))["v"]; got != 2.0 {
		t.Fatalf("stale change applied: v=%v", got)
	}
	if ck, _ := s.Checkpoint(); ck != 11 {
		t.Fatalf("checkpoint went back to %d", ck)
	}
	// A version that is here already (sent again, as a resync does) is no
	// change, and leaves the stored document as it was (the body differs
	// here only to show which one stayed).
	if res, err := s.ApplyRemote([]core.RemoteChange{remote("notes/a", "r2", 0, `{"_id":"notes/a","_rev":"r2","v":99}`)}, 11, nil); err != nil || len(res.Changed) != 0 {
		t.Errorf("a version here already reported as a change: %+v %v", res, err)
	}
	if got := decode(t, must(s.Get("notes/a")))["v"]; got != 2.0 {
		t.Fatalf("a version here already replaced the stored one: v=%v", got)
	}
	// A remote tombstone deletes; nothing becomes pending.
	if res, _ := s.ApplyRemote([]core.RemoteChange{remote("notes/b", "r2", 12, "")}, 12, nil); len(res.Changed) != 1 {
		t.Errorf("remote delete not reported: %+v", res)
	}
	if _, err := s.Get("notes/b"); err == nil {
		t.Fatal("remote delete not applied")
	}
	if n, _ := s.PendingCount(); n != 0 {
		t.Fatalf("pending after remote changes: %d", n)
	}
}

func TestApplyRemoteConflictPolicies(t *testing.T) {
	tests := []struct {
		name     string
		resolve  core.Resolver
		wantV    float64
		kept     string
		pending  bool
		conflict string // revision kept as a conflict
	}{
		{"server wins", nil, 9, "remote", false, "local"},
		{"local wins", core.LocalWins, 5, "local", true, "r9"},
		{"merge", func(l, r core.Version) (core.Version, error) {
			return core.Version{ID: l.ID, Doc: json.RawMessage(`{"v":14}`)}, nil
		}, 14, "merged", true, "r9"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newTestStore(t)
			s.ApplyRemote([]core.RemoteChange{remote("notes/a", "r1", 1, `{"_id":"notes/a","_rev":"r1","v":1}`)}, 1, nil)
			out, _ := s.Put(context.Background(), "notes", []byte(`{"_key":"a","v":5}`))
			localRev := decode(t, out)["_rev"].(string)
			res, err := s.ApplyRemote([]core.RemoteChange{remote("notes/a", "r9", 2, `{"_id":"notes/a","_rev":"r9","v":9}`)}, 2, tt.resolve)
			cs := res.Conflicts
			if err != nil || len(cs) != 1 || cs[0].Kept != tt.kept {
				t.Fatalf("conflicts %+v, %v; want kept %s", cs, err, tt.kept)
			}
			if wantChanged := tt.kept != "local"; (len(res.Changed) == 1) != wantChanged {
				t.Errorf("changed %+v, want a change: %v", res.Changed, wantChanged)
			}
			doc := decode(t, must(s.Get("notes/a")))
			if doc["v"] != tt.wantV {
				t.Errorf("v=%v, want %v", doc["v"], tt.wantV)
			}
			p, _ := s.PendingWrites(10)
			if (len(p) == 1) != tt.pending {
				t.Fatalf("pending %+v, want pending=%v", p, tt.pending)
			}
			if tt.pending && (p[0].BaseRev != "r9" || p[0].Rev != doc["_rev"]) {
				t.Errorf("pending write %+v not on top of r9", p[0])
			}
			want := tt.conflict
			if want == "local" {
				want = localRev
			}
			kept, _ := s.Conflicts("notes/a")
			if len(kept) != 1 || kept[0].Rev != want {
				t.Errorf("conflicts kept %+v, want rev %s", kept, want)
			}
			if ids, err := s.ConflictIDs(); err != nil || !slices.Equal(ids, []string{"notes/a"}) {
				t.Errorf("ConflictIDs() = %q, %v; want [notes/a]", ids, err)
			}
			s.ClearConflicts("notes/a")
			if kept, _ := s.Conflicts("notes/a"); len(kept) != 0 {
				t.Errorf("after clear: %+v", kept)
			}
			if ids, err := s.ConflictIDs(); err != nil || len(ids) != 0 {
				t.Errorf("ConflictIDs() after clear = %q, %v; want none", ids, err)
			}
		})
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

func TestAsErrorKeepsCause(t *testing.T) {
	cause := &customErr{"server said no"}
	e := core.AsError(cause)
	var got *customErr
	if !errors.As(e, &got) || got != cause || e.Num != core.NumInternal {
		t.Errorf("AsError lost its cause: %+v", e)
	}
}

type customErr struct{ msg string }

func (e *customErr) Error() string { return e.msg }

func TestForget(t *testing.T) {
	s := newTestStore(t)
	s.ApplyRemote([]core.RemoteChange{remote("notes/a", "r1", 1, `{"_id":"notes/a","_rev":"r1"}`)}, 1, nil)
	s.Put(context.Background(), "notes", []byte(`{"_key":"a","v":2}`))
	s.ApplyRemote([]core.RemoteChange{remote("notes/a", "r9", 2, `{"_id":"notes/a","_rev":"r9"}`)}, 2, nil) // a conflict kept
	if err := s.Forget("notes/a"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get("notes/a"); !errors.Is(err, core.ErrNotFound) {
		t.Errorf("document still there: %v", err)
	}
	if n, _ := s.PendingCount(); n != 0 {
		t.Errorf("pending after Forget: %d", n)
	}
	if cs, _ := s.Conflicts("notes/a"); len(cs) != 0 {
		t.Errorf("conflicts after Forget: %v", cs)
	}
}

// TestPendingWritesDocuments: a batch of pending writes carries each
// document as stored, whether the writes are most of the documents in
// their range (read walking them in order) or a few among many (read one
// by one), with deletions among them, from any cursor.
func TestPendingWritesDocuments(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name    string
		synced  int // documents written and acknowledged first, keys s000…
		pending []string
		deleted map[string]bool
	}{
		{"all pending", 0, []string{"a1", "a2", "a3", "a4", "a5"}, nil},
		{"a few among many", 300, []string{"s005x", "s150x", "s299x"}, nil},
		{"deletions among them", 40, []string{"s001x", "s002x", "s003x", "s004x"}, map[string]bool{"s002x": true, "s004x": true}},
		{"deleting synced documents", 20, []string{"s003", "s007", "s010x"}, map[string]bool{"s003": true, "s007": true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newTestStore(t)
			var acks []core.Ack
			for i := range tc.synced {
				out, err := s.Put(ctx, "notes", []byte(fmt.Sprintf(`{"_key":"s%03d"}`, i)))
				if err != nil {
					t.Fatal(err)
				}
				d := decode(t, out)
				acks = append(acks, core.Ack{ID: d["_id"].(string), Rev: d["_rev"].(string)})
			}
			if err := s.Acknowledge(acks...); err != nil {
				t.Fatal(err)
			}
			want := map[string]string{}
			for _, k := range tc.pending {
				if tc.deleted[k] {
					// A synced document, or one made here first.
					if _, err := s.Get("notes/" + k); errors.Is(err, core.ErrNotFound) {
						s.Put(ctx, "notes", []byte(fmt.Sprintf(`{"_key":%q}`, k)))
					}
					if err := s.Delete("notes/" + k); err != nil {
						t.Fatal(err)
					}
					continue
				}
				out, err := s.Put(ctx, "notes", []byte(fmt.Sprintf(`{"_key":%q,"v":%q}`, k, k)))
				if err != nil {
					t.Fatal(err)
				}
				want["notes/"+k] = string(out)
			}
			for _, after := range []string{"", "notes/" + tc.pending[0]} {
				p, err := s.PendingWritesAfter(after, 100)
				if err != nil {
					t.Fatal(err)
				}
				n := len(tc.pending)
				if after != "" {
					n--
				}
				if len(p) != n {
					t.Fatalf("after %q: %d pending, want %d: %+v", after, len(p), n, p)
				}
				for _, w := range p {
					if w.ID <= after {
						t.Errorf("after %q: %s", after, w.ID)
					}
					k := strings.TrimPrefix(w.ID, "notes/")
					if w.Deleted != tc.deleted[k] || w.Deleted != (w.Doc == nil) {
						t.Errorf("%s: deleted %v, doc %s", w.ID, w.Deleted, w.Doc)
					}
					if !w.Deleted && string(w.Doc) != want[w.ID] {
						t.Errorf("%s: doc %s, want %s", w.ID, w.Doc, want[w.ID])
					}
				}
			}
		})
	}
}

// TestPushConflictPastCheckpoint is the sequence behind a push that was
// refused forever: a write is pushed; before its acknowledgement is
// recorded, another client's deletion arrives through the feed (the
// checkpoint moves past it) and this client writes the document again;
// the late acknowledgement then sets the new write on top of the pushed
// revision, which the server no longer has. The push's conflict names the
// deletion, at a sequence the checkpoint is past: as an old change it would
// be skipped and the write refused on every push. Marked PushConflict, it
// sets the write on top of the deletion, which the server then takes.
func TestPushConflictPastCheckpoint(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	rev1 := decode(t, must(s.Put(ctx, "notes", []byte(`{"_key":"a","v":1}`))))["_rev"].(string)
	// The push of rev1 is under way; another client deletes on top of it.
	if _, err := s.ApplyRemote([]core.RemoteChange{remote("notes/a", "t1", 7, "")}, 7, nil); err != nil {
		t.Fatal(err)
	}
	rev2 := decode(t, must(s.Put(ctx, "notes", []byte(`{"_key":"a","v":2}`))))["_rev"].(string)
	if err := s.Acknowledge(core.Ack{ID: "notes/a", Rev: rev1}); err != nil {
		t.Fatal(err)
	}
	p, _ := s.PendingWrites(10)
	if len(p) != 1 || p[0].Rev != rev2 || p[0].BaseRev != rev1 {
		t.Fatalf("pending after the late acknowledgement: %+v", p)
	}
	// The conflict's current version, as an old change: skipped, nothing
	// moves (what a pull overlapping the feed needs).
	stale := remote("notes/a", "t1", 7, "")
	if _, err := s.ApplyRemote([]core.RemoteChange{stale}, 0, nil); err != nil {
		t.Fatal(err)
	}
	if p, _ = s.PendingWrites(10); len(p) != 1 || p[0].BaseRev != rev1 {
		t.Fatalf("pending after an old change: %+v", p)
	}
	// As a push's conflict: the write now builds on the deletion.
	stale.PushConflict = true
	if _, err := s.ApplyRemote([]core.RemoteChange{stale}, 0, nil); err != nil {
		t.Fatal(err)
	}
	if p, _ = s.PendingWrites(10); len(p) != 1 || p[0].Rev != rev2 || p[0].BaseRev != "t1" || p[0].Deleted {
		t.Fatalf("pending after the push's conflict: %+v", p)
	}
	if got := decode(t, must(s.Get("notes/a")))["v"]; got != 2.0 {
		t.Fatalf("the local write is gone: v=%v", got)
	}
	// Once in sync, a conflict past the checkpoint changes nothing.
	if err := s.Acknowledge(core.Ack{ID: "notes/a", Rev: rev2}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ApplyRemote([]core.RemoteChange{stale}, 0, nil); err != nil {
		t.Fatal(err)
	}
	if n, _ := s.PendingCount(); n != 0 {
		t.Fatalf("pending after a conflict on a document in sync: %d", n)
	}
}

// TestOwnEarlierWriteIsNoConflict: a write of this node that reached the
// server while its acknowledgement was lost (a crash) comes back in a pull
// after a later local write of the document; the later write builds on it
// and stays, with it as its base, and nothing is a conflict.
func TestOwnEarlierWriteIsNoConflict(t *testing.T) {
	s := newTestStore(t)
	ctx := context.Background()
	out, err := s.Put(ctx, "notes", []byte(`{"_key":"a","v":1}`))
	if err != nil {
		t.Fatal(err)
	}
	rev1 := decode(t, out)["_rev"].(string)
	out, _ = s.Put(ctx, "notes", []byte(`{"_key":"a","v":2}`))
	rev2 := decode(t, out)["_rev"].(string)
	res, err := s.ApplyRemote([]core.RemoteChange{remote("notes/a", rev1, 1, `{"_id":"notes/a","_rev":"`+rev1+`","v":1}`)}, 1, nil)
	if err != nil || len(res.Conflicts) != 0 {
		t.Fatalf("ApplyRemote of our own earlier write: conflicts %+v, %v; want none", res.Conflicts, err)
	}
	if doc := decode(t, must(s.Get("notes/a"))); doc["v"] != float64(2) || doc["_rev"] != rev2 {
		t.Errorf("document after the pull: %v, want v 2 at %s", doc, rev2)
	}
	p, _ := s.PendingWrites(10)
	if len(p) != 1 || p[0].Rev != rev2 || p[0].BaseRev != rev1 {
		t.Errorf("pending %+v, want %s on top of %s", p, rev2, rev1)
	}
	if ids, _ := s.ConflictIDs(); len(ids) != 0 {
		t.Errorf("conflicts kept: %q", ids)
	}

	// Another node's write is still a conflict.
	other := "_zzzzzzzzzzzZZ"
	res, err = s.ApplyRemote([]core.RemoteChange{remote("notes/a", other, 2, `{"_id":"notes/a","_rev":"`+other+`","v":9}`)}, 2, nil)
	if err != nil || len(res.Conflicts) != 1 {
		t.Fatalf("ApplyRemote of another node's write: conflicts %+v, %v; want one", res.Conflicts, err)
	}
}
