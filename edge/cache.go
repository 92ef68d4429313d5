package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"

	"github.com/hilodb/hilodb/client"
	"github.com/hilodb/hilodb/core"
	"github.com/tidwall/gjson"
)

// errWriteInFlight refuses to cache a server version over a local write
// whose push is still under way.
var errWriteInFlight = errors.New("a local write of the document is in flight")

// cache is the resident store used as a cache of the sync server. It holds
// documents the server acknowledged (written through this isolate) or sent
// (read through on a miss), and, only while their push is under way, the
// writes of requests in flight. Those are marked pending by the store's
// replication bookkeeping; a lookup does not serve them, and a write the
// server did not acknowledge is evicted.
//
// # Concurrency
//
// A cache is safe for concurrent use. Acknowledgements, evictions, fills
// and lookups are serialised by mu, so a lookup never sees a write between
// its failed push and its eviction, and a fill never puts an older server
// version over a newer acknowledged one. Puts take no lock: a lease may be
// under way inside one. A put that lands in the middle of a fill makes the
// fill give up (errWriteInFlight).
type cache struct {
	store *core.Store
	mu    sync.Mutex
}

// put stores doc in collection, replacing any cached document with that
// id, and returns the stored document (New), its revision and the revision
// it replaced (OldRev, the base of the push).
func (c *cache) put(ctx context.Context, collection string, doc []byte) (core.Result, error) {
	return c.store.Insert(ctx, collection, doc, &core.WriteOptions{OverwriteMode: core.OverwriteReplace, ReturnNew: true})
}

// lookup returns the cached document with id, if there is one the server
// has: a document whose write is in flight is not served.
func (c *cache) lookup(id string) ([]byte, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	doc, err := c.store.Get(id)
	if errors.Is(err, core.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	// Checked after the read: a put between the two makes the document
	// pending, and a document that was pending at the read still is
	// (acknowledgements and evictions wait for mu).
	if pending, err := c.pending(id); err != nil || pending {
		return nil, false, err
	}
	return doc, true, nil
}

// fill caches ch, the server's current version of a document, unless the
// cache has a version of its own: one written through it since (which the
// server acknowledged after ch was read, or whose push is in flight).
func (c *cache) fill(ch client.Change) error {
	if ch.Rev == "" || ch.Deleted {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, err := c.store.Get(ch.ID); !errors.Is(err, core.ErrNotFound) {
		return err
	}
	v := core.RemoteChange{Version: core.Version{ID: ch.ID, Rev: ch.Rev, Doc: ch.Doc}, Seq: ch.Seq}
	_, err := c.store.ApplyRemote([]core.RemoteChange{v}, 0, func(core.Version, core.Version) (core.Version, error) {
		return core.Version{}, errWriteInFlight
	})
	if errors.Is(err, errWriteInFlight) {
		return nil
	}
	return err
}

// ack records that the server accepted revision rev of id.
func (c *cache) ack(id, rev string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.store.Acknowledge(core.Ack{ID: id, Rev: rev})
}

// evict drops revision rev of id, a write the server did not acknowledge.
// A later write of the same id, still in flight, is left to its own
// request.
func (c *cache) evict(id, rev string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	doc, err := c.store.Get(id)
	if errors.Is(err, core.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if docRev(doc) != rev {
		return nil
	}
	return c.forget(id)
}

// forget removes id and its replication state without recording a
// deletion. Called with mu held.
func (c *cache) forget(id string) error {
	if err := c.store.Forget(id); err != nil {
		return fmt.Errorf("evict %q: %w", id, err)
	}
	return nil
}

// pending reports whether a write of id awaits the server. The store lists
// pending writes only all together; in the worker they are the writes of
// requests in flight, a handful.
func (c *cache) pending(id string) (bool, error) {
	n, err := c.store.PendingCount()
	if err != nil || n == 0 {
		return false, err
	}
	ws, err := c.store.PendingWrites(math.MaxInt)
	if err != nil {
		return false, err
	}
	for _, w := range ws {
		if w.ID == id {
			return true, nil
		}
	}
	return false, nil
}

// docRev returns the _rev of a stored document.
func docRev(doc []byte) string { return gjson.GetBytes(doc, "_rev").String() }
