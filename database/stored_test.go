package database_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/hilodb/hilodb/core"
	"github.com/hilodb/hilodb/database"
)

// history makes a store's bytes through a journal: 300 writes compacted
// every compactAt bytes, then overwrites, removals and a removed document
// written again, after the last snapshot. It returns the storage and the
// ids it wrote.
func history(t *testing.T, compactAt int) (*database.MemStorage, []string) {
	t.Helper()
	st, _ := core.Open(":memory:", core.Options{Node: "T"})
	defer st.Close()
	mem := &database.MemStorage{}
	j, err := database.OpenJournal(mem, st, database.JournalOptions{CompactAt: compactAt})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i := range 300 {
		id := fmt.Sprintf("orders/%d", i)
		put(t, st, id, i)
		ids = append(ids, id)
	}
	ctx := context.Background()
	for i := 0; i < 300; i += 7 {
		put(t, st, ids[i], 1000+i)
	}
	for i := 3; i < 300; i += 11 {
		if _, err := st.Remove(ctx, "orders", ids[i], nil); err != nil {
			t.Fatal(err)
		}
	}
	put(t, st, ids[14], 2014) // removed above, written again
	if _, err := st.Put(ctx, "customers", []byte(`{"_id":"customers/1","name":"x"}`)); err != nil {
		t.Fatal(err)
	}
	if err := j.Sync(); err != nil {
		t.Fatal(err)
	}
	return mem, append(ids, "customers/1", "orders/never")
}

// loaded opens a store over copies of snap and log, as OpenJournal loads
// them.
func loaded(t *testing.T, snap, log []byte) (*core.Store, error) {
	t.Helper()
	st, _ := core.Open(":memory:", core.Options{Node: "T"})
	t.Cleanup(func() { st.Close() })
	_, err := database.OpenJournal(&database.MemStorage{Snap: bytes.Clone(snap), Log: bytes.Clone(log)}, st, database.JournalOptions{CompactAt: 1 << 30})
	return st, err
}

// TestStoredReadsAsTheLoadedStore reads every document of a history from
// the stored bytes, before any load, and finds what the loaded store
// holds: the same body, or the same error.
func TestStoredReadsAsTheLoadedStore(t *testing.T) {
	for _, tt := range []struct {
		name      string
		compactAt int
		cut       int // bytes cut off the log's end: an unfinished last frame
	}{
		{"log only", 1 << 30, 0},
		{"snapshot and log", 4096, 0},
		{"unfinished last frame", 4096, 3},
	} {
		t.Run(tt.name, func(t *testing.T) {
			mem, ids := history(t, tt.compactAt)
			if tt.compactAt < 1<<30 && mem.Snap == nil {
				t.Fatal("no snapshot was written")
			}
			log := mem.Log[:len(mem.Log)-tt.cut]
			stored, err := database.ReadStored(mem.Snap, log)
			if err != nil {
				t.Fatal(err)
			}
			r := core.NewReader(core.Options{}, stored.Get)
			st, err := loaded(t, mem.Snap, log)
			if err != nil {
				t.Fatal(err)
			}
			differ := 0
			for _, id := range ids {
				want, wantErr := st.Get(id)
				got, gotErr := r.Get(id)
				if !bytes.Equal(got, want) || fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
					t.Errorf("%s: stored %s, %v; loaded %s, %v", id, got, gotErr, want, wantErr)
				}
				if wantErr != nil {
					differ++
				}
			}
			if differ == 0 {
				t.Error("every document was found: the history removes some")
			}
		})
	}
}

// TestStoredFailsAsTheLoad damages the stored bytes: where OpenJournal
// refuses them (ErrDamaged), reading them fails the same way.
func TestStoredFailsAsTheLoad(t *testing.T) {
	mem, _ := history(t, 4096)
	frameLen := len(mem.Log) / 10
	t.Run("damaged frame, whole frames after it", func(t *testing.T) {
		log := bytes.Clone(mem.Log)
		log[frameLen] ^= 0x20
		if _, err := loaded(t, mem.Snap, log); !errors.Is(err, database.ErrDamaged) {
			t.Fatalf("the load: %v, want ErrDamaged", err)
		}
		stored, err := database.ReadStored(mem.Snap, log)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := stored.Get("doc/orders/1"); !errors.Is(err, database.ErrDamaged) {
			t.Errorf("Get: %v, want ErrDamaged", err)
		}
	})
	t.Run("snapshot failing its checksum", func(t *testing.T) {
		snap := bytes.Clone(mem.Snap)
		snap[len(snap)/2] ^= 0x20
		if _, err := loaded(t, snap, mem.Log); !errors.Is(err, database.ErrDamaged) {
			t.Fatalf("the load: %v, want ErrDamaged", err)
		}
		if _, err := database.ReadStored(snap, mem.Log); !errors.Is(err, database.ErrDamaged) {
			t.Errorf("ReadStored: %v, want ErrDamaged", err)
		}
	})
}

// pausing is a Storage that counts its load's pauses.
type pausing struct {
	database.MemStorage
	pauses int
}

func (p *pausing) LoadPause() { p.pauses++ }

var _ database.LoadPauser = (*pausing)(nil)

// TestLoadPauses loads a store of 2,500 documents from a LoadPauser: it is
// called every PauseEvery items, and the store loads whole.
func TestLoadPauses(t *testing.T) {
	st, _ := core.Open(":memory:", core.Options{Node: "T"})
	mem := &database.MemStorage{}
	if _, err := database.OpenJournal(mem, st, database.JournalOptions{CompactAt: 1 << 30}); err != nil {
		t.Fatal(err)
	}
	for i := range 2500 {
		put(t, st, fmt.Sprintf("orders/%d", i), i)
	}
	st.Close()
	loaded, _ := core.Open(":memory:", core.Options{Node: "T"})
	defer loaded.Close()
	st2 := &pausing{MemStorage: database.MemStorage{Log: mem.Log}}
	if _, err := database.OpenJournal(st2, loaded, database.JournalOptions{CompactAt: 1 << 30}); err != nil {
		t.Fatal(err)
	}
	pauses := st2.pauses
	if pauses < 2500/database.PauseEvery {
		t.Errorf("Pause called %d times over 2,500 documents", pauses)
	}
	for _, id := range []string{"orders/0", "orders/1500", "orders/2499"} {
		if _, err := loaded.Get(id); err != nil {
			t.Errorf("%s: %v", id, err)
		}
	}
}
