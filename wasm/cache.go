//go:build js && wasm

package main

import (
	"strings"
	"syscall/js"

	"github.com/hilodb/hilodb/core"
)

// newInvalidator returns the database.Config.Observe function that tells
// index.js's read cache which documents a write transaction changed. It is
// called before the write returns and while the store still holds its write
// lock: JavaScript runs only between Go's steps, so a get answered from the
// cache never sees a document older than the last write that returned.
func newInvalidator(invalidate js.Value) func([]core.Change) {
	return func(changes []core.Change) {
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
			invalidate.Invoke(ids.String())
		}
	}
}
