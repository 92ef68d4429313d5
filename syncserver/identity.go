package syncserver

import (
	"context"

	"github.com/tidwall/buntdb"
)

func identityKey(db, name string) string { return "ident/" + db + "/" + name }

// nextIdentity returns the next value of identity name in db (1 first),
// durable before it returns.
func (s *Server) nextIdentity(ctx context.Context, db, name string) (int64, error) {
	var v int64
	err := s.store.update(ctx, func(tx *buntdb.Tx) error {
		cur, err := getInt(tx, identityKey(db, name))
		if err != nil {
			return err
		}
		if cur >= maxSafeNumber {
			return &protoError{code: "out_of_keys", num: 1225, msg: "identity " + quote(name) + " has no values left"}
		}
		v = cur + 1
		return setInt(tx, identityKey(db, name), v)
	})
	if err != nil {
		return 0, err
	}
	s.metrics.identities.Add(1)
	return v, nil
}

// seedIdentity sets identity name to value. Without force it only raises the
// value and returns the (possibly higher) current one; with force it sets it
// exactly, which can make later ids repeat earlier ones.
func (s *Server) seedIdentity(ctx context.Context, db, name string, value int64, force bool) (int64, error) {
	if value < 0 || value > maxSafeNumber {
		return 0, badRequest("identity value must be between 0 and %d", int64(maxSafeNumber))
	}
	var v int64
	err := s.store.update(ctx, func(tx *buntdb.Tx) error {
		cur, err := getInt(tx, identityKey(db, name))
		if err != nil {
			return err
		}
		v = value
		if !force && cur > value {
			v = cur
		}
		return setInt(tx, identityKey(db, name), v)
	})
	return v, err
}
