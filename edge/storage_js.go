//go:build js && wasm

package main

import (
	"sync"
	"syscall/js"

	"github.com/hilodb/hilodb/database"
)

// doStorage is the database.Storage and database.Meta of a replica, over the
// Durable Object's storage through the adapter worker.mjs makes. Each call
// takes a number last and, once what it did is stored (or failed), the
// adapter calls settled(number, error message or null), which Go set on it:
//
//	append(bytes, n)        the frames are stored at the end of the log
//	compact(bytes, n)       bytes are the snapshot and the log is empty
//	saveNode(node, n)
//	saveRange(tag, text, n)
//
// One settled function for every call, rather than two callbacks made and
// released per call, keeps a write's storage call cheap. What the storage
// held when the object started (found: snapshot, log, node, ranges) is read
// by the glue before the program opens the replica.
//
// # Concurrency
//
// A doStorage is safe for concurrent use; its methods wait for the adapter
// and so run in goroutines, never on the event loop.
type doStorage struct {
	adapter  js.Value
	snapshot []byte
	log      []byte
	node     string
	ranges   map[string][]byte

	mu      sync.Mutex
	next    int
	waiting map[int]chan error
}

var (
	_ database.Storage    = (*doStorage)(nil)
	_ database.Meta       = (*doStorage)(nil)
	_ database.LoadPauser = (*doStorage)(nil)
)

func newDOStorage(adapter, found js.Value) *doStorage {
	s := &doStorage{adapter: adapter, ranges: map[string][]byte{}, waiting: map[int]chan error{}}
	adapter.Set("settled", js.FuncOf(s.settled))
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

// LoadPause implements database.LoadPauser: it returns once the event loop
// has taken a turn (a timeout), in which workerd hands the program what
// came meanwhile, and a read among it is answered from the stored bytes
// (starter).
func (s *doStorage) LoadPause() {
	turned := make(chan struct{})
	afterAnswer(func() { close(turned) })
	<-turned
}

// Load implements database.Storage.
func (s *doStorage) Load() ([]byte, []byte, error) {
	snap, log := s.snapshot, s.log
	s.snapshot, s.log = nil, nil
	return snap, log, nil
}

// Append implements database.Storage.
func (s *doStorage) Append(frames []byte) error {
	return s.call("append", bytesToJS(frames))
}

// Compact implements database.Storage.
func (s *doStorage) Compact(snap []byte) error {
	return s.call("compact", bytesToJS(snap))
}

// LoadMeta implements database.Meta.
func (s *doStorage) LoadMeta() (string, map[string][]byte, error) {
	return s.node, s.ranges, nil
}

// SaveNode implements database.Meta.
func (s *doStorage) SaveNode(node string) error {
	return s.call("saveNode", node)
}

// SaveRange implements database.Meta.
func (s *doStorage) SaveRange(tag string, entry []byte) error {
	return s.call("saveRange", tag, string(entry))
}

// storageError is a rejected storage call.
type storageError struct{ msg string }

func (e *storageError) Error() string { return "durable object storage: " + e.msg }

// call calls the adapter's method with args and a call number, and waits
// until the adapter settles that number.
func (s *doStorage) call(method string, args ...any) error {
	ch := make(chan error, 1)
	s.mu.Lock()
	s.next++
	n := s.next
	s.waiting[n] = ch
	s.mu.Unlock()
	s.adapter.Call(method, append(args, n)...)
	return <-ch
}

// settled is the adapter's settled(n, message): it never blocks, as it
// runs on the event loop.
func (s *doStorage) settled(_ js.Value, args []js.Value) any {
	if len(args) < 2 {
		return nil
	}
	n := args[0].Int()
	var err error
	if args[1].Type() == js.TypeString {
		err = &storageError{args[1].String()}
	}
	s.mu.Lock()
	ch := s.waiting[n]
	delete(s.waiting, n)
	s.mu.Unlock()
	if ch != nil {
		ch <- err
	}
	return nil
}
