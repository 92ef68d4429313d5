package syncserver

import (
	"context"
	"errors"
	"time"

	"github.com/tidwall/buntdb"
	"github.com/tidwall/gjson"
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
	var victims []tombstone
	es, onEtcd := s.store.(*etcdStore)
	var err error
	var compacted int64
	if onEtcd {
		compacted, err = es.compactedRev(ctx)
		// Once a pass went through at a compacted revision, the next one
		// waits for etcd to compact further: no write can make a tombstone
		// below it again.
		if err == nil && compacted > 1 && compacted != es.swept.Load() {
			if victims, err = es.tombstonesBefore(ctx, compacted); err == nil && len(victims) == 0 {
				es.swept.Store(compacted)
			}
		}
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
		es.swept.Store(compacted)
	}
	return total, nil
}

// compactChunk is how many tombstones one transaction removes.
const compactChunk = 100

// removeTombstones removes the victims still as they were found, in one
// transaction, and raises their databases' purged marks.
func (s *Server) removeTombstones(ctx context.Context, victims []tombstone, onEtcd bool) (int, error) {
	removed := 0
	err := s.store.update(ctx, func(tx kvTx) error {
		removed = 0
		for _, v := range victims {
			rec, found, err := getRecord(tx, v.db, v.id)
			if err != nil {
				return err
			}
			if !found || !rec.Deleted || rec.Seq != v.seq {
				continue // written again since the scan
			}
			if _, err := tx.Delete(docKey(v.db, v.id)); err != nil {
				return err
			}
			if !onEtcd {
				if _, err := tx.Delete(seqKey(v.db, v.seq)); err != nil && !errors.Is(err, buntdb.ErrNotFound) {
					return err
				}
			}
			purged, err := getInt(tx, purgedKey(v.db))
			if err != nil {
				return err
			}
			if v.seq > purged {
				if err := setInt(tx, purgedKey(v.db), v.seq); err != nil {
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
func (s *Server) expiredTombstones(cutoff int64) ([]tombstone, error) {
	var victims []tombstone
	err := s.store.view(func(tx kvTx) error {
		return tx.AscendKeys("rdoc/*", func(key, val string) bool {
			if !gjson.Get(val, "deleted").Bool() || gjson.Get(val, "at").Int() > cutoff {
				return true
			}
			rest := key[len("rdoc/"):]
			i := indexByte(rest, '/')
			if i < 0 {
				return true
			}
			victims = append(victims, tombstone{db: rest[:i], id: rest[i+1:], seq: gjson.Get(val, "seq").Int()})
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
