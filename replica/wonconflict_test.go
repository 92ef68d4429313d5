package replica_test

import (
	"context"
	"strings"
	"testing"

	"github.com/hilodb/hilodb/core"
)

// TestBothSidesHearOfConflict: two replicas edit one document offline and
// sync; the server takes the first and refuses the second. The loser keeps
// its own write as a conflict (as before); the winner hears of the refused
// write through the change feed, lists the id in ConflictIDs with the
// losing version marked Won, and gets a conflict event saying it won. A
// third replica, which wrote nothing, lists nothing.
func TestBothSidesHearOfConflict(t *testing.T) {
	tests := []struct {
		name      string
		winner    func(t *testing.T, n *node, id string)
		wantLocal string // in the winner's event's Local version
		deleted   bool   // the winning write is a deletion
	}{
		{"edit won over edit", func(t *testing.T, n *node, id string) { n.put(t, `{"_key":"n1","text":"from winner"}`) }, "from winner", false},
		{"deletion won over edit", func(t *testing.T, n *node, id string) {
			if err := n.store.Delete(id); err != nil {
				t.Fatal(err)
			}
		}, "", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := startServer(t)
			win := newNode(t, srv.url(), nil)
			lose := newNode(t, srv.url(), nil)
			id := win.put(t, `{"_key":"n1","text":"v0"}`)
			win.sync(t)
			lose.sync(t)
			tc.winner(t, win, id)
			lose.put(t, `{"_key":"n1","text":"from loser"}`)
			win.sync(t)
			lose.sync(t) // refused: the winner's write is there
			lose.sync(t) // a second round notes nothing twice
			win.sync(t)

			ids, err := lose.store.ConflictIDs()
			if err != nil || len(ids) != 1 || ids[0] != id {
				t.Fatalf("loser's ConflictIDs = %v, %v; want [%s]", ids, err, id)
			}
			lc, _ := lose.store.Conflicts(id)
			if len(lc) != 1 || lc[0].Won || !strings.Contains(string(lc[0].Doc), "from loser") {
				t.Fatalf("loser's conflicts = %+v; want its own write, not won", lc)
			}
			ids, err = win.store.ConflictIDs()
			if err != nil || len(ids) != 1 || ids[0] != id {
				t.Fatalf("winner's ConflictIDs = %v, %v; want [%s]", ids, err, id)
			}
			wc, _ := win.store.Conflicts(id)
			if len(wc) != 1 || !wc[0].Won || wc[0].Rev != lc[0].Rev || !strings.Contains(string(wc[0].Doc), "from loser") {
				t.Fatalf("winner's conflicts = %+v; want the loser's write %s, won", wc, lc[0].Rev)
			}
			win.mu.Lock()
			events := append([]core.Conflict(nil), win.conflicts...)
			win.mu.Unlock()
			if len(events) != 1 || !events[0].Won || events[0].Kept != "local" || events[0].Remote.Rev != lc[0].Rev ||
				events[0].Local.Deleted != tc.deleted || !strings.Contains(string(events[0].Local.Doc), tc.wantLocal) {
				t.Fatalf("winner's conflict events = %+v; want one, won, local kept", events)
			}
			lose.mu.Lock()
			for _, c := range lose.conflicts {
				if c.Won {
					t.Errorf("loser heard of a won conflict: %+v", c)
				}
			}
			lose.mu.Unlock()

			// Cleared, it stays cleared.
			if err := win.store.ClearConflicts(id); err != nil {
				t.Fatal(err)
			}
			win.sync(t)
			if ids, _ := win.store.ConflictIDs(); len(ids) != 0 {
				t.Errorf("winner's ConflictIDs after clearConflicts and a sync = %v", ids)
			}
			// A replica that wrote nothing hears of no conflict.
			third := newNode(t, srv.url(), nil)
			third.sync(t)
			if ids, _ := third.store.ConflictIDs(); len(ids) != 0 {
				t.Errorf("a third replica lists conflicts %v", ids)
			}
		})
	}
}

// TestWinnerHearsOfAWriteSettledBeforeItsPush: the feed brings the
// winning version to the loser before the loser pushed its write, which
// the default policy then settles locally (the server never saw it). The
// loser pushes it once anyway, to be refused, so that the winner hears of
// the conflict too; nothing is left to push after.
func TestWinnerHearsOfAWriteSettledBeforeItsPush(t *testing.T) {
	srv := startServer(t)
	win := newNode(t, srv.url(), nil)
	lose := newNode(t, srv.url(), nil)
	id := win.put(t, `{"_key":"n1","text":"v0"}`)
	win.sync(t)
	lose.sync(t)
	lose.put(t, `{"_key":"n1","text":"from loser"}`)
	win.put(t, `{"_key":"n1","text":"from winner"}`)
	win.sync(t)
	ctx := context.Background()
	if _, err := lose.rep.Pull(ctx); err != nil { // settled here, before any push
		t.Fatal(err)
	}
	if n, _ := lose.store.PendingCount(); n != 0 {
		t.Fatalf("loser's pending writes after the pull: %d; want 0 (the server's version kept)", n)
	}
	lc, _ := lose.store.Conflicts(id)
	if len(lc) != 1 {
		t.Fatalf("loser's conflicts: %+v", lc)
	}
	lose.sync(t)
	win.sync(t)
	wc, _ := win.store.Conflicts(id)
	if len(wc) != 1 || !wc[0].Won || wc[0].Rev != lc[0].Rev || !strings.Contains(string(wc[0].Doc), "from loser") {
		t.Fatalf("winner's conflicts = %+v; want the loser's write %s, won", wc, lc[0].Rev)
	}
	if got := win.get(t, id)["text"]; got != "from winner" {
		t.Errorf("the winner's document: %v", got)
	}
	if left, _ := lose.store.LostWrites(10); len(left) != 0 {
		t.Errorf("lost writes left after a push: %+v", left)
	}
	lose.sync(t)
	if lc2, _ := lose.store.Conflicts(id); len(lc2) != 1 || lose.get(t, id)["text"] != "from winner" {
		t.Errorf("loser after another sync: conflicts %+v, doc %v", lc2, lose.get(t, id))
	}
}
