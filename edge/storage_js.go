//go:build js && wasm

package main

import (
	"syscall/js"

	"github.com/hilodb/hilodb/database"
)

// doStorage is the database.Storage and database.Meta of a replica, over the
// Durable Object's storage through the adapter worker.mjs makes:
//
//	append(bytes)        → Promise, settled once the frames are stored
//	compact(bytes)       → Promise, settled once bytes are the snapshot and the log is empty
//	saveNode(node)       → Promise
//	saveRange(tag, text) → Promise
//
// What the storage held when the object started (found: snapshot, log,
// node, ranges) is read by the glue before the program opens the replica.
//
// # Concurrency
//
// A doStorage is safe for concurrent use; its methods wait for Promises and
// so run in goroutines, never on the event loop.
type doStorage struct {
	adapter  js.Value
	snapshot []byte
	log      []byte
	node     string
	ranges   map[string][]byte
}

var (
	_ database.Storage = (*doStorage)(nil)
	_ database.Meta    = (*doStorage)(nil)
)

func newDOStorage(adapter, found js.Value) *doStorage {
	s := &doStorage{adapter: adapter, ranges: map[string][]byte{}}
	if found.Type() != js.TypeObject {
		return s
	}
	s.snapshot = bytesOf(found.Get("snapshot"))
	s.log = bytesOf(found.Get("log"))
	s.node = str(found.Get("node"))
	if r := found.Get("ranges"); r.Type() == js.TypeObject {
		keys := jsObject.Call("keys", r)
		for i := range keys.Length() {
			tag := keys.Index(i).String()
			s.ranges[tag] = []byte(r.Get(tag).String())
		}
	}
	return s
}

func bytesOf(v js.Value) []byte {
	if v.Type() != js.TypeObject {
		return nil
	}
	b := make([]byte, v.Get("length").Int())
	js.CopyBytesToGo(b, v)
	return b
}

func bytesToJS(b []byte) js.Value {
	u8 := jsUint8Array.New(len(b))
	js.CopyBytesToJS(u8, b)
	return u8
}

// Load implements database.Storage.
func (s *doStorage) Load() ([]byte, []byte, error) {
	snap, log := s.snapshot, s.log
	s.snapshot, s.log = nil, nil
	return snap, log, nil
}

// Append implements database.Storage.
func (s *doStorage) Append(frames []byte) error {
	return await(s.adapter.Call("append", bytesToJS(frames)))
}

// Compact implements database.Storage.
func (s *doStorage) Compact(snap []byte) error {
	return await(s.adapter.Call("compact", bytesToJS(snap)))
}

// LoadMeta implements database.Meta.
func (s *doStorage) LoadMeta() (string, map[string][]byte, error) {
	return s.node, s.ranges, nil
}

// SaveNode implements database.Meta.
func (s *doStorage) SaveNode(node string) error {
	return await(s.adapter.Call("saveNode", node))
}

// SaveRange implements database.Meta.
func (s *doStorage) SaveRange(tag string, entry []byte) error {
	return await(s.adapter.Call("saveRange", tag, string(entry)))
}

// storageError is a rejected storage call.
type storageError struct{ msg string }

func (e *storageError) Error() string { return "durable object storage: " + e.msg }

// await waits for p, a Promise, to settle.
func await(p js.Value) error {
	ch := make(chan error, 1)
	var ok, fail js.Func
	ok = js.FuncOf(func(js.Value, []js.Value) any { ch <- nil; return nil })
	fail = js.FuncOf(func(_ js.Value, args []js.Value) any {
		msg := "rejected"
		if len(args) > 0 {
			msg = args[0].Call("toString").String()
		}
		ch <- &storageError{msg}
		return nil
	})
	defer ok.Release()
	defer fail.Release()
	p.Call("then", ok, fail)
	return <-ch
}
