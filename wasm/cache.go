//go:build js && wasm

package main

import (
	"strings"
	"syscall/js"

	"github.com/hilodb/hilodb/core"
	"github.com/hilodb/hilodb/wasm/mirror"
)

// observeBoth returns the database.Config.Observe function that keeps the
// fast path's mirror in step with every write transaction, then tells
// index.js's read cache. The mirror changes first: JavaScript the
// invalidation runs may read through the fast path, and must see the write.
func observeBoth(docs *mirror.Docs, invalidate func([]core.Change)) func([]core.Change) {
	return func(changes []core.Change) {
		docs.Apply(changes)
		invalidate(changes)
	}
}

// newInvalidator returns the database.Config.Observe function that tells
// index.js's read cache which documents a write transaction changed, and
// its live change feeds how far the local change feed has moved. It is
// called before the write returns and while the store still holds its write
// lock: JavaScript runs only between Go's steps, so a get answered from the
// cache never sees a document older than the last write that returned.
func newInvalidator(invalidate js.Value) func([]core.Change) {
	return func(changes []core.Change) {
		// One call per transaction (a call into JavaScript costs more than
		// the ids): the ids joined by NUL, which no id holds, and the feed's
		// new head (-1: not moved, or no feed).
		var ids strings.Builder
		for _, ch := range changes {
			if id, ok := core.DocIDOf(ch); ok {
				if ids.Len() > 0 {
					ids.WriteByte(0)
				}
				ids.WriteString(id)
			}
		}
		head, moved := core.FeedHeadOf(changes)
		if !moved {
			head = -1
		}
		if ids.Len() > 0 || moved {
			invalidate.Invoke(ids.String(), head)
		}
	}
}
