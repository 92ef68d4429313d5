package database

import (
	"context"
	"errors"

	"github.com/hilodb/hilodb/client"
	"github.com/hilodb/hilodb/core"
	"github.com/hilodb/hilodb/core/uuid"
	"github.com/hilodb/hilodb/idgen"
)

// provisionalID is the HiLo id a store makes for a document of tag when it
// needs one, cannot lease a range (err: the server cannot be reached), and
// has never held a range for tag: tag, "/" and a time-ordered UUID
// (uuid.NewV7), so that a device's first writes offline are listed in
// their collection, sync later and never collide. A store that holds or
// held a range goes on failing with needs_server once it is spent, as
// before: its reserve is the bound it was given (docs/ids.md).
func (s sources) provisionalID(ctx context.Context, tag string, err error) (string, bool) {
	if err == nil || idgen.IsNoWait(ctx) || !offline(err) {
		return "", false
	}
	h := s.gen.For(tag)
	if _, _, ok := h.Current(); ok || len(h.Reserved()) > 0 {
		return "", false
	}
	return tag + "/" + uuid.NewV7(), true
}

// offline reports whether err says the sync server cannot be reached (as
// opposed to a server that refused).
func offline(err error) bool {
	return errors.Is(err, client.ErrDisconnected) || errors.Is(err, core.ErrNeedsServer) || errors.Is(err, context.DeadlineExceeded)
}
