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
// now and returns how many it removed.
func (s *Server) CompactTombstones(ctx context.Context) (int, error) {
	return s.compactTombstones(ctx, s.now())
}

// compactTombstones removes tombstones older than the configured time and
// raises each database's purged sequence, so clients behind it resync.
func (s *Server) compactTombstones(ctx context.Context, now time.Time) (int, error) {
	cutoff := now.Add(-s.tombstoneTTL()).UnixMilli()
	type victim struct {
		db, id string
		seq    int64
	}
	var victims []victim
	err := s.store.view(func(tx kvTx) error {
		var err error
		tx.AscendKeys("rdoc/*", func(key, val string) bool {
			if !gjson.Get(val, "deleted").Bool() || gjson.Get(val, "at").Int() > cutoff {
				return true
			}
			rest := key[len("rdoc/"):]
			i := indexByte(rest, '/')
			if i < 0 {
				return true
			}
			victims = append(victims, victim{db: rest[:i], id: rest[i+1:], seq: gjson.Get(val, "seq").Int()})
			return true
		})
		return err
	})
	if err != nil || len(victims) == 0 {
		return 0, err
	}
	removed := 0
	err = s.store.update(ctx, func(tx kvTx) error {
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
			if _, err := tx.Delete(seqKey(v.db, v.seq)); err != nil && !errors.Is(err, buntdb.ErrNotFound) {
				return err
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
