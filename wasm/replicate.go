//go:build js && wasm

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"syscall/js"
	"time"

	"github.com/hilodb/hilodb/client"
	"github.com/hilodb/hilodb/core"
	"github.com/hilodb/hilodb/database"
	"github.com/hilodb/hilodb/errcode"
	"github.com/hilodb/hilodb/internal/jsontext"
	"github.com/hilodb/hilodb/replica"
)

const (
	// pullLimit is the number of changes asked for per pull.
	pullLimit = 10000
	// pingEvery keeps a quiet live connection from the server's idle timeout.
	pingEvery = 30 * time.Second
)

// Codes of errors reported through the 'error' event.
var codeMergeFailed, numMergeFailed = errcode.MergeFailed.Name, errcode.MergeFailed.Num // the app's merge function failed

// mergeError is an app merge function that threw, returned a Promise or
// returned something that is not a document.
type mergeError struct{ id, msg string }

func (e *mergeError) Error() string {
	return fmt.Sprintf("onConflict for %q failed: %s; the server's version was kept and the local one is readable with conflicts()", e.id, e.msg)
}

// syncer replicates one store through replica.Replicator and turns what it
// reports into the store's events.
//
// # Concurrency
//
// A syncer is safe for concurrent use: sync() calls from JavaScript may run
// while run follows the live feed (core.Store.ApplyRemote skips what the
// other one applied already).
type syncer struct {
	rep    *replica.Replicator // set once the store is open
	cli    *client.Client      // likewise
	events *events

	errMu   sync.Mutex
	lastErr string // code of the last error event of the live loop
}

func newSyncer(ev *events) *syncer { return &syncer{events: ev} }

// hook sets cfg's replication hooks to report through the syncer.
func (s *syncer) hook(cfg *database.Config) {
	cfg.OnConflict = s.events.conflict
	cfg.OnApply = s.applied
	cfg.OnConnect = s.connected
	cfg.OnError = s.liveError
}

// applied reports remote changes that changed the store as a 'change' event
// (a write of this store echoed back is not a change).
func (s *syncer) applied(res core.ApplyResult) {
	s.events.changes(res.Changed)
}

// connected forgets the last error: replication works again.
func (s *syncer) connected() {
	s.errMu.Lock()
	s.lastErr = ""
	s.errMu.Unlock()
}

// liveError reports an error of the live loop once per error code until
// replication works again: retries fail alike while offline, with texts that
// differ.
func (s *syncer) liveError(err error) {
	code, _ := describe(err)
	s.errMu.Lock()
	repeat := code == s.lastErr
	s.lastErr = code
	s.errMu.Unlock()
	if !repeat {
		s.events.error(err)
	}
}

// round pushes every pending write, then pulls everything new, and returns
// how many writes the server accepted and how many remote changes changed
// the store.
func (s *syncer) round(ctx context.Context) (pushed, pulled int, err error) {
	s.events.status("syncing")
	defer func() {
		if s.cli.Connected() {
			s.events.status("online")
		}
	}()
	return s.rep.SyncOnce(ctx)
}

// versionJSON is a document version as JavaScript sees it.
type versionJSON struct {
	ID      string          `json:"id"`
	Rev     string          `json:"rev"`
	Doc     json.RawMessage `json:"doc"`
	Deleted bool            `json:"deleted"`
	// Won marks a kept conflict this store's write won (another client's
	// write the server refused).
	Won bool `json:"won,omitempty"`
}

func toVersionJSON(v core.Version) versionJSON {
	out := versionJSON{ID: v.ID, Rev: v.Rev, Doc: v.Doc, Deleted: v.Deleted, Won: v.Won}
	if v.Deleted || len(out.Doc) == 0 {
		out.Doc = json.RawMessage("null")
	}
	return out
}

// resolverFor returns the conflict policy named by onConflict: "server"
// (also for undefined), "local", or a function, which index.js wraps so that
// it takes two versions as JSON text and returns {kind, doc}.
func resolverFor(onConflict js.Value, ev *events) (core.Resolver, error) {
	switch onConflict.Type() {
	case js.TypeUndefined, js.TypeNull:
		return core.ServerWins, nil
	case js.TypeString:
		switch onConflict.String() {
		case "server":
			return core.ServerWins, nil
		case "local":
			return core.LocalWins, nil
		}
	case js.TypeFunction:
		return jsResolver(onConflict, ev), nil
	}
	return nil, &argError{"openStore: onConflict must be 'server', 'local' or a function"}
}

// jsResolver settles conflicts with the app's merge function. It runs inside
// the store's write transaction, so the function must return at once: a
// Promise, an exception or a result that is not a document is reported as an
// 'error' event and the server's version is kept (the local one stays
// readable as a conflict), so replication never stalls on it.
func jsResolver(fn js.Value, ev *events) core.Resolver {
	return func(local, remote core.Version) (core.Version, error) {
		lj, _ := json.Marshal(toVersionJSON(local))
		rj, _ := json.Marshal(toVersionJSON(remote))
		out, err := protect(func() (any, error) { return fn.Invoke(string(lj), string(rj)), nil })
		if err != nil {
			ev.error(&mergeError{id: remote.ID, msg: err.Error()})
			return remote, nil
		}
		res := out.(js.Value)
		switch kind := res.Get("kind").String(); kind {
		case "remote":
			return remote, nil
		case "local":
			return local, nil
		case "delete":
			if remote.Deleted {
				return remote, nil
			}
			return core.Version{ID: remote.ID, Deleted: true}, nil
		case "doc":
			return core.Version{ID: remote.ID, Doc: json.RawMessage(res.Get("doc").String())}, nil
		default:
			ev.error(&mergeError{id: remote.ID, msg: res.Get("message").String()})
			return remote, nil
		}
	}
}

// events delivers a store's events to index.js's emit(type, payload), which
// queues them for the listeners so that no listener runs inside Go.
type events struct {
	emit      js.Value // a function, or undefined for none
	listening js.Value // a function telling whether a type has listeners, or undefined
}

// wants reports whether an event of type typ has anyone to hear it (true
// when the host does not say): a pull of thousands of documents makes a
// 'change' event of their ids, which no one may be listening for.
func (e *events) wants(typ string) bool {
	if e == nil || e.emit.Type() != js.TypeFunction {
		return false
	}
	if e.listening.Type() != js.TypeFunction {
		return true
	}
	w := true
	_, _ = protect(func() (any, error) {
		w = e.listening.Invoke(typ).Truthy()
		return nil, nil
	})
	return w
}

func (e *events) send(typ string, payload any) {
	if e == nil || e.emit.Type() != js.TypeFunction {
		return
	}
	_, _ = protect(func() (any, error) {
		e.emit.Invoke(typ, payload)
		return nil, nil
	})
}

// conflictJSON is the payload of a 'conflict' event.
type conflictJSON struct {
	ID     string      `json:"id"`
	Local  versionJSON `json:"local"`
	Remote versionJSON `json:"remote"`
	Kept   string      `json:"kept"`
	// Won says this store's write won: remote is the other client's write
	// the server refused.
	Won bool `json:"won"`
}

func (e *events) conflict(c core.Conflict) {
	b, _ := json.Marshal(conflictJSON{ID: c.ID, Local: toVersionJSON(c.Local), Remote: toVersionJSON(c.Remote), Kept: c.Kept, Won: c.Won})
	e.send("conflict", string(b))
}

// changes sends a 'change' event: {"changes": [{id, rev, deleted}]}. It is
// written by hand, as a pull of thousands of documents makes one, and
// encoding/json's reflection cost more than applying them.
func (e *events) changes(vs []core.Version) {
	if len(vs) == 0 || !e.wants("change") {
		return
	}
	size := 16
	for _, v := range vs {
		size += len(v.ID) + len(v.Rev) + 40
	}
	b := make([]byte, 0, size)
	b = append(b, `{"changes":[`...)
	for i, v := range vs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"id":`...)
		b = jsontext.AppendString(b, v.ID)
		b = append(b, `,"rev":`...)
		b = jsontext.AppendString(b, v.Rev)
		b = append(b, `,"deleted":`...)
		b = strconv.AppendBool(b, v.Deleted)
		b = append(b, '}')
	}
	e.send("change", string(append(b, "]}"...)))
}

// status reports the connection's state: "online", "offline" or
// "syncing".
func (e *events) status(state string) {
	e.send("status", `{"state":"`+state+`"}`)
}

func (e *events) error(err error) {
	if errors.Is(err, context.Canceled) {
		return
	}
	e.send("error", toJSError(err))
}
