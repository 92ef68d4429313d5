package syncserver

import (
	"context"
	"errors"
	"time"

	"github.com/tidwall/buntdb"
	"github.com/tidwall/gjson"

	"github.com/hilodb/hilodb/syncserver/storage"
)

// compactLoop removes expired tombstones every interval until ctx ends.
func (s *Server) compactLoop(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if n, err := s.CompactTombstones(ctx); err != nil {
				s.log.Error("compact tombstones", "err", err)
			} else if n > 0 {
				s.log.Info("compacted tombstones", "removed", n)
			}
		}
	}
}

// CompactTombstones removes the tombstones older than Config.TombstoneTTL
// now (on etcd: older than etcd's compacted revision) and returns how many
// it removed.
func (s *Server) CompactTombstones(ctx context.Context) (int, error) {
	return s.compactTombstones(ctx, s.now())
}

// compactTombstones removes tombstones older than the configured time and
// raises each database's purged sequence, so clients behind it resync.
//
// On etcd the age that counts is etcd's own compaction: a tombstone whose
// revision is below etcd's compacted revision goes (whatever its time), and
// none goes before. Compacting etcd's history is the operator's choice
// (etcd's --auto-compaction-retention, or etcdctl compact); the server finds
// the compacted revision at each pass and follows it.
func (s *Server) compactTombstones(ctx context.Context, now time.Time) (int, error) {
	var victims []storage.Tombstone
	es, onEtcd := s.store.(*storage.Etcd)
	var err error
	var compacted int64
	if onEtcd {
		victims, compacted, err = es.DueTombstones(ctx)
	} else {
		victims, err = s.expiredTombstones(now.Add(-s.tombstoneTTL()).UnixMilli())
	}
	if err != nil || len(victims) == 0 {
		return 0, err
	}
	total := 0
	// A few at a time: one etcd Txn holds at most --max-txn-ops operations.
	for len(victims) > 0 {
		chunk := victims[:min(len(victims), compactChunk)]
		victims = victims[len(chunk):]
		n, err := s.removeTombstones(ctx, chunk, onEtcd)
		total += n
		if err != nil {
			return total, err
		}
	}
	if onEtcd {
		es.MarkSwept(compacted)
	}
	return total, nil
}

// compactChunk is how many tombstones one transaction removes.
const compactChunk = 100

// removeTombstones removes the victims still as they were found, in one
// transaction, and raises their databases' purged marks.
func (s *Server) removeTombstones(ctx context.Context, victims []storage.Tombstone, onEtcd bool) (int, error) {
	removed := 0
	err := s.store.Update(ctx, func(tx storage.Tx) error {
		removed = 0
		for _, v := range victims {
			rec, found, err := storage.GetRecord(tx, v.DB, v.ID)
			if err != nil {
				return err
			}
			if !found || !rec.Deleted || rec.Seq != v.Seq {
				continue // written again since the scan
			}
			if _, err := tx.Delete(storage.DocKey(v.DB, v.ID)); err != nil {
				return err
			}
			if !onEtcd {
				if _, err := tx.Delete(storage.SeqKey(v.DB, v.Seq)); err != nil && !errors.Is(err, buntdb.ErrNotFound) {
					return err
				}
			}
			purged, err := storage.GetInt(tx, storage.PurgedKey(v.DB))
			if err != nil {
				return err
			}
			if v.Seq > purged {
				if err := storage.SetInt(tx, storage.PurgedKey(v.DB), v.Seq); err != nil {
					return err
				}
			}
			removed++
		}
		return nil
	})
	return removed, err
}

// expiredTombstones lists the tombstones dated before cutoff (Unix
// milliseconds).
func (s *Server) expiredTombstones(cutoff int64) ([]storage.Tombstone, error) {
	var victims []storage.Tombstone
	err := s.store.View(func(tx storage.Tx) error {
		return tx.AscendKeys("rdoc/*", func(key, val string) bool {
			if !gjson.Get(val, "deleted").Bool() || gjson.Get(val, "at").Int() > cutoff {
				return true
			}
			rest := key[len("rdoc/"):]
			i := indexByte(rest, '/')
			if i < 0 {
				return true
			}
			victims = append(victims, storage.Tombstone{DB: rest[:i], ID: rest[i+1:], Seq: gjson.Get(val, "seq").Int()})
			return true
		})
	})
	return victims, err
}

func indexByte(s string, c byte) int {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return i
		}
	}
	return -1
}

func (s *Server) tombstoneTTL() time.Duration {
	if s.cfg.TombstoneTTL > 0 {
		return s.cfg.TombstoneTTL
	}
	return defaultTombstoneTTL
}
