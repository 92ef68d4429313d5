package syncserver

import (
	"context"
	"errors"
	"time"

	"github.com/hilodb/hilodb/syncserver/storage"
)

// tagAlphabet spells node tags: the counter n becomes a bijective base-36
// number in these letters (1 → "A", 26 → "Z", 27 → "0", 37 → "AA"…).
const tagAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

func nodeTagFor(n int64) string {
	var b []byte
	for n > 0 {
		n--
		b = append(b, tagAlphabet[n%36])
		n /= 36
	}
	for i, j := 0, len(b)-1; i < j; i, j = i+1, j-1 {
		b[i], b[j] = b[j], b[i]
	}
	return string(b)
}

// assignNode returns the client's node tag: the one it sent back, which is
// kept (and registered if this server has not seen it, so it is never handed
// out to anyone else), or a new one never given before.
func (s *Server) assignNode(ctx context.Context, sent string) (string, error) {
	if sent != "" {
		if !storage.ValidNodeTag(sent) || sent == s.cfg.ServerTag {
			return "", BadRequest("node %s: want 1 to 8 upper-case letters and digits, not the server's tag", Quote(sent))
		}
		known, server := false, false
		_ = s.store.View(func(tx storage.Tx) error {
			_, err := tx.Get(storage.NodePrefix + sent)
			known = err == nil
			_, err = tx.Get(storage.ServerTagPrefix + sent)
			server = err == nil // another server's tag, in a cluster
			return nil
		})
		if server {
			return "", BadRequest("node %s: want 1 to 8 upper-case letters and digits, not the server's tag", Quote(sent))
		}
		if known {
			return sent, nil
		}
		err := s.store.Update(ctx, func(tx storage.Tx) error {
			_, _, err := tx.Set(storage.NodePrefix+sent, time.Now().UTC().Format(time.RFC3339), nil)
			return err
		})
		if err != nil {
			return "", err
		}
		return sent, nil
	}
	var tag string
	err := s.store.Update(ctx, func(tx storage.Tx) error {
		n, err := storage.GetInt(tx, storage.NodeSeqKey)
		if err != nil {
			return err
		}
		for {
			n++
			tag = nodeTagFor(n)
			if len(tag) > 8 {
				return errors.New("node tags exhausted")
			}
			if tag == s.cfg.ServerTag {
				continue
			}
			if _, err := tx.Get(storage.NodePrefix + tag); err == nil {
				continue // registered by a client that brought it along
			}
			break
		}
		if err := storage.SetInt(tx, storage.NodeSeqKey, n); err != nil {
			return err
		}
		_, _, err = tx.Set(storage.NodePrefix+tag, time.Now().UTC().Format(time.RFC3339), nil)
		return err
	})
	if err != nil {
		return "", err
	}
	s.metrics.nodesAssigned.Add(1)
	return tag, nil
}

// touchDB records db as existing, creating it on first use.
func (s *Server) touchDB(ctx context.Context, db string) error {
	exists := false
	_ = s.store.View(func(tx storage.Tx) error {
		_, err := tx.Get(storage.DBPrefix + db)
		exists = err == nil
		return nil
	})
	if exists {
		return nil
	}
	return s.store.Update(ctx, func(tx storage.Tx) error {
		_, _, err := tx.Set(storage.DBPrefix+db, time.Now().UTC().Format(time.RFC3339), nil)
		return err
	})
}
