package syncserver

import (
	"context"
	"strconv"

	"github.com/hilodb/hilodb/auth"
	"github.com/hilodb/hilodb/errcode"
	"github.com/hilodb/hilodb/internal/wire"
	"github.com/hilodb/hilodb/syncserver/storage"
)

// NextIdentity returns the next value of identity name in db (1 first),
// durable before it returns.
func (s *Server) NextIdentity(ctx context.Context, db, name string) (int64, error) {
	vs, err := s.nextIdentities(ctx, db, []string{name})
	if err != nil {
		return 0, err
	}
	return vs[0], nil
}

// nextIdentities returns the next value of each name in one transaction; a
// name given several times gets successive values. Either every value is
// allocated and durable, or none is.
func (s *Server) nextIdentities(ctx context.Context, db string, names []string) ([]int64, error) {
	if err := NeedRole(ctx, auth.Write, "taking identities"); err != nil {
		return nil, err
	}
	out := make([]int64, len(names))
	err := s.store.Update(ctx, func(tx storage.Tx) error {
		// Check everything before the first write: a transaction in a group
		// commit cannot be rolled back alone.
		cur := make(map[string]int64, len(names))
		for _, name := range names {
			if _, ok := cur[name]; ok {
				continue
			}
			v, err := storage.GetInt(tx, storage.IdentityKey(db, name))
			if err != nil {
				return err
			}
			cur[name] = v
		}
		for i, name := range names {
			// A client makes "name/value" of a value (its "name|" ids):
			// values whose id names a document, or did (a tombstone), are
			// skipped, as the ids the server makes skip them (mint).
			for skip := 0; ; skip++ {
				if cur[name] >= storage.MaxSafeNumber {
					return &protoError{code: wire.CodeOutOfKeys, num: wire.NumOutOfKeys, msg: "identity " + Quote(name) + " has no values left"}
				}
				if skip == maxMintSkip {
					return Refusal(errcode.UniqueConstraint, "the next "+strconv.Itoa(maxMintSkip)+" values of identity "+Quote(name)+" name documents that exist; seed it past them")
				}
				cur[name]++
				_, found, err := storage.GetRecord(tx, db, name+"/"+strconv.FormatInt(cur[name], 10))
				if err != nil {
					return err
				}
				if !found {
					break
				}
			}
			out[i] = cur[name]
		}
		for name, v := range cur {
			if err := storage.SetInt(tx, storage.IdentityKey(db, name), v); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	s.metrics.identities.Add(int64(len(names)))
	return out, nil
}

// maxSeed is the highest value a seed sets: half the numbers a JavaScript
// number holds exactly, so that a seed, whoever sends it, leaves an identity
// at least 2^52 values and never uses it up.
const maxSeed = (storage.MaxSafeNumber + 1) / 2

// SeedIdentity sets identity name to value. Without force it only raises the
// value and returns the (possibly higher) current one; with force it sets it
// exactly, which can make later ids repeat earlier ones, so a forced lowering
// is refused (forbidden) unless Config.AllowIdentityLowering is set.
func (s *Server) SeedIdentity(ctx context.Context, db, name string, value int64, force bool) (int64, error) {
	if err := NeedRole(ctx, auth.Admin, "seeding identities"); err != nil {
		return 0, err
	}
	if value < 0 || value > maxSeed {
		return 0, BadRequest("identity value must be between 0 and %d: a seed leaves at least as many values after it", int64(maxSeed))
	}
	var v int64
	err := s.store.Update(ctx, func(tx storage.Tx) error {
		cur, err := storage.GetInt(tx, storage.IdentityKey(db, name))
		if err != nil {
			return err
		}
		v = value
		if !force && cur > value {
			v = cur
		}
		if force && v < cur && !s.cfg.AllowIdentityLowering {
			return &protoError{code: wire.CodeForbidden, num: wire.NumForbidden,
				msg: "identity " + Quote(name) + " is at " + strconv.FormatInt(cur, 10) + "; lowering it would hand out values again, and this server does not allow it (-allow-identity-lowering)"}
		}
		if force && v < cur {
			s.log.Warn("identity lowered by a forced seed; later values can repeat earlier ones", "db", db, "name", name, "from", cur, "to", v)
		}
		return storage.SetInt(tx, storage.IdentityKey(db, name), v)
	})
	return v, err
}

// Identities reads db's identities, by name, up to max of them.
func (s *Server) Identities(db string, max int) (map[string]int64, error) {
	out := map[string]int64{}
	prefix := storage.IdentPrefix + db + "/"
	err := s.store.View(func(tx storage.Tx) error {
		return tx.AscendRange("", prefix, prefix+"\xff", func(key, val string) bool {
			v, _ := storage.CounterValue(key, val)
			out[key[len(prefix):]] = v
			return len(out) < max
		})
	})
	return out, err
}
