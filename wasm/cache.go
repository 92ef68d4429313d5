//go:build js && wasm

package main

import (
	"strings"
	"syscall/js"

	"github.com/hilodb/hilodb/core"
)

// cacheJournal tells index.js's read cache which documents a write
// transaction changed, before the write returns and while the store still
// holds its write lock: JavaScript runs only between Go's steps, so a get
// answered from the cache never sees a document older than the last write
// that returned. It hands the changes on to next (the durable journal), if
// any.
type cacheJournal struct {
	invalidate js.Value // a function (ids joined by NUL), or undefined
	next       core.Journal
}

var _ core.Journal = (*cacheJournal)(nil)

func noWait() error { return nil }

// Commit implements core.Journal.
func (c *cacheJournal) Commit(changes []core.Change) func() error {
	if c.invalidate.Type() == js.TypeFunction {
		// One call per transaction (a call into JavaScript costs more than
		// the ids): the ids joined by NUL, which no id holds.
		var ids strings.Builder
		for _, ch := range changes {
			if id, ok := strings.CutPrefix(ch.Key, "doc/"); ok {
				if ids.Len() > 0 {
					ids.WriteByte(0)
				}
				ids.WriteString(id)
			}
		}
		if ids.Len() > 0 {
			c.invalidate.Invoke(ids.String())
		}
	}
	if c.next == nil {
		return noWait
	}
	return c.next.Commit(changes)
}
