package core

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/hilodb/hilodb/core/keygen"
	"github.com/hilodb/hilodb/core/loaded"
	"github.com/hilodb/hilodb/core/naming"
	"github.com/hilodb/hilodb/core/revision"
	"github.com/hilodb/hilodb/core/uuid"
	"github.com/tidwall/buntdb"
)

// Options configure a Store.
type Options struct {
	// Node is this replica's node tag, used in revisions and in ids that end
	// in the separator. Empty gives a random local stand-in until
	// Clock().SetNode is called.
	Node string
	// IDs hands out HiLo ids for documents stored without one. Without it,
	// such a put fails with ErrNeedsServer.
	IDs IDSource
	// Numbers hands out HiLo numbers for the traditional, autoincrement and
	// padded key generators. When nil and IDs implements NumberSource
	// (*idgen.Generator does), IDs is used.
	Numbers NumberSource
	// Identities allocates identities for ids ending in "|" and for
	// NextIdentityFor / SeedIdentityFor. Without it they fail with
	// ErrNeedsServer.
	Identities IdentitySource
	// Separator joins an id prefix and a key. Default "/", or the
	// Conventions' IdentityPartsSeparator when that is set.
	Separator string
	// Conventions map entities to documents. Default naming.Default().
	Conventions *naming.Conventions
	// ChangeFeed keeps the local change feed (Changes): every document
	// written gets a local sequence number. It costs a few keys per write,
	// so it is off unless asked for.
	ChangeFeed bool
}

// Store is a JSON document store over buntdb. Documents are addressed by
// _id; ArangoDB-style operations address them by collection and _key, with
// _id = prefix + separator + _key.
//
// A Store is safe for concurrent use. Every single or multi-document write is
// one buntdb transaction.
type Store struct {
	db     *buntdb.DB
	loaded loaded.List // the items of the last load, beside buntdb's tree (items.go)
	clock  *revision.Clock
	ids    IDSource
	nums   NumberSource
	idents IdentitySource
	conv   *naming.Conventions
	sep    string

	colMu sync.RWMutex
	cols  map[string]keygen.Generator // compiled collection definitions, by name

	watchMu  sync.Mutex
	watchers []func() // called after local writes (OnWrite)

	journal Journal // makes writes durable; nil: memory only
	feed    bool    // Options.ChangeFeed

	marks *pendingMarks // documents with writes the server has not acknowledged

	ixs  atomic.Pointer[indexSet] // the secondary indexes (index.go); nil: none
	live liveQueries              // the watched queries (live.go)
}

// Storage layout inside buntdb.
const (
	docPrefix = "doc/" // doc/<id> → the document
	colPrefix = "col/" // col/<name> → the collection's options
	// colPendingPrefix marks definitions made here the server has not
	// confirmed: colpend/<name> → "1".
	colPendingPrefix = "colpend/"
	nodeSeqKey       = "sys/nodeseq" // this node's sequence for ids ending in the separator
)

// Open opens a store in memory: path must be ":memory:". A store is made
// durable by a Journal (package database keeps one in a file, OPFS or
// IndexedDB), or saved and loaded whole with Save and Load. buntdb's own
// file is not offered: the pending marks (pending.go) live beside its
// tree and would not reach it.
func Open(path string, opts Options) (*Store, error) {
	if path != ":memory:" {
		return nil, fmt.Errorf("open store %q: %w: only \":memory:\" (persist with a Journal)", path, ErrBadParameter)
	}
	db, err := buntdb.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	conv, sep := conventions(opts)
	s := &Store{
		db:     db,
		clock:  revision.NewClock(opts.Node),
		ids:    opts.IDs,
		nums:   opts.Numbers,
		idents: opts.Identities,
		conv:   conv,
		sep:    sep,
		cols:   make(map[string]keygen.Generator),
		feed:   opts.ChangeFeed,
		marks:  newPendingMarks(),
	}
	if s.nums == nil {
		s.nums, _ = opts.IDs.(NumberSource)
	}
	return s, nil
}

// conventions are the conventions and the separator opts give a store.
func conventions(opts Options) (*naming.Conventions, string) {
	conv := opts.Conventions
	if conv == nil {
		conv = naming.Default()
	}
	if opts.Separator != "" {
		conv.IdentityPartsSeparator = opts.Separator
	}
	return conv, conv.Separator()
}

// Clock returns the store's revision clock.
func (s *Store) Clock() *revision.Clock { return s.clock }

// Conventions returns the store's conventions.
func (s *Store) Conventions() *naming.Conventions { return s.conv }

// Separator returns the identity parts separator.
func (s *Store) Separator() string { return s.sep }

// Numbers returns the store's source of HiLo numbers (Options.Numbers, or
// Options.IDs when it is one), or nil when it has none.
func (s *Store) Numbers() NumberSource { return s.nums }

// Close closes the store.
func (s *Store) Close() error {
	s.live.closeAll()
	return s.db.Close()
}

// Save writes the whole store to w, for Load to read back: documents,
// collection definitions and the node sequence.
func (s *Store) Save(w io.Writer) error {
	return s.SaveAt(w, nil)
}

// Load reads a store written by Save, adding its documents to this one. The
// node sequence never moves backwards: loading an older snapshot keeps the
// higher value, so no id ending in the separator is made twice.
func (s *Store) Load(r io.Reader) error {
	var before uint64
	_ = s.view(func(tx *txn) error {
		before = readUint(tx, nodeSeqKey)
		return nil
	})
	if err := s.db.Load(r); err != nil {
		return fmt.Errorf("load store: %w", err)
	}
	err := s.update(func(tx *txn) error {
		// buntdb's Load set keys in its tree without looking at the
		// items loaded in place: its values win.
		if err := tx.hideLoaded(); err != nil {
			return err
		}
		if err := adoptDirtyKeys(tx); err != nil {
			return err
		}
		if err := keepNodeSeq(tx, before); err != nil {
			return err
		}
		// The loaded documents have no index entries yet.
		return s.endIndexes(tx, true)
	})
	if err != nil {
		return fmt.Errorf("load store: %w", err)
	}
	s.forgetCollections()
	return nil
}

// adoptDirtyKeys moves the dirty keys buntdb's Load put in its tree into
// the pending marks, where the store keeps them.
func adoptDirtyKeys(tx *txn) error {
	var keys, values []string
	err := ascendPrefix(tx, dirtyPrefix, func(k, v string) bool {
		keys, values = append(keys, k), append(values, v)
		return true
	})
	if err != nil {
		return err
	}
	for i, k := range keys {
		if _, err := tx.deleteItem(k); err != nil {
			return err
		}
		// buntdb's Load made each key a string of its own.
		if err := tx.applyPendingChange(Change{Key: k, Value: values[i]}, false); err != nil {
			return err
		}
	}
	return nil
}

// keepNodeSeq raises the node sequence back to before when a load lowered
// it: no id ending in the separator is made twice.
func keepNodeSeq(tx *txn, before uint64) error {
	if readUint(tx, nodeSeqKey) < before {
		_, _, err := tx.Set(nodeSeqKey, strconv.FormatUint(before, 10), nil)
		return err
	}
	return nil
}

// forgetCollections drops the collections' key generators after a load:
// they are read again from what was loaded.
func (s *Store) forgetCollections() {
	s.colMu.Lock()
	s.cols = make(map[string]keygen.Generator)
	s.colMu.Unlock()
}

func readUint(tx *txn, key string) uint64 {
	v, err := tx.Get(key)
	if err != nil {
		return 0
	}
	n, _ := strconv.ParseUint(v, 10, 64)
	return n
}

// CollectionOptions define a collection.
type CollectionOptions struct {
	// KeyOptions choose how keys are made; see keygen.Options.
	KeyOptions keygen.Options `json:"keyOptions"`
}

// CreateCollection defines collection name with opts. Collections need not
// be created: one that is not has the default options (HiLo ids, user keys
// allowed). It fails with 1208 for an illegal name, 1232 for invalid
// keyOptions and 1207 when name is defined already.
func (s *Store) CreateCollection(name string, opts CollectionOptions) error {
	return s.CreateCollectionContext(context.Background(), name, opts)
}

// CreateCollectionContext is CreateCollection under ctx, which may ask for
// a receipt (WithReceipt): its one item's ID is name. A definition sent
// again after it was made would fail with 1207; the receipt tells it was.
func (s *Store) CreateCollectionContext(ctx context.Context, name string, opts CollectionOptions) error {
	if err := validateCollection(name); err != nil {
		return err
	}
	g, err := compileKeys(opts.KeyOptions)
	if err != nil {
		return err
	}
	b, err := json.Marshal(opts)
	if err != nil {
		return fmt.Errorf("encode collection options: %w", err)
	}
	err = s.updateN(ctx, 3, func(tx *txn) error {
		if _, err := tx.Get(colPrefix + name); err == nil {
			return newError(ErrDuplicateName, name, "", "duplicate name: collection %q exists", name)
		}
		if _, _, err := tx.Set(colPrefix+name, string(b), nil); err != nil {
			return err
		}
		// Until the server has it: see PendingCollections.
		if _, _, err := tx.Set(colPendingPrefix+name, "1", nil); err != nil {
			return err
		}
		return storeReceipt(ctx, tx, []Result{{ID: name}})
	})
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			return e
		}
		return fmt.Errorf("create collection: %w", err)
	}
	s.colMu.Lock()
	s.cols[name] = g
	s.colMu.Unlock()
	s.notifyWrite() // a replicator pushes the definition
	return nil
}

// CollectionInfo returns the options of a created collection; ok is false
// for a collection that was never created (it has the default options).
func (s *Store) CollectionInfo(name string) (opts CollectionOptions, ok bool) {
	var raw string
	err := s.view(func(tx *txn) error {
		var err error
		raw, err = tx.Get(colPrefix + name)
		return err
	})
	if err != nil {
		return CollectionOptions{}, false
	}
	_ = json.Unmarshal([]byte(raw), &opts)
	return opts, true
}

// keyGen returns the compiled key generator of collection name.
func (s *Store) keyGen(name string) (keygen.Generator, error) {
	s.colMu.RLock()
	g, ok := s.cols[name]
	s.colMu.RUnlock()
	if ok {
		return g, nil
	}
	opts, _ := s.CollectionInfo(name)
	g, err := compileKeys(opts.KeyOptions)
	if err != nil {
		return g, err
	}
	s.colMu.Lock()
	s.cols[name] = g
	s.colMu.Unlock()
	return g, nil
}

// validateCollection accepts a legal collection name or EmptyCollection.
func validateCollection(name string) error {
	if name == EmptyCollection {
		return nil
	}
	return ValidateCollectionName(name)
}

// Prefix returns the id prefix of collection under the store's conventions.
func (s *Store) Prefix(collection string) string { return s.conv.IDPrefix(collection) }

// GenerateID makes a new id for a document of collection with the
// collection's key generator: a HiLo id ("orders/1-A") by default, else the
// prefix, the separator and a generated key.
func (s *Store) GenerateID(ctx context.Context, collection string) (string, error) {
	if err := validateCollection(collection); err != nil {
		return "", err
	}
	g, err := s.keyGen(collection)
	if err != nil {
		return "", err
	}
	return s.generateID(ctx, collection, g)
}

func (s *Store) generateID(ctx context.Context, collection string, g keygen.Generator) (string, error) {
	if collection == EmptyCollection {
		return uuid.New(), nil
	}
	prefix := s.conv.IDPrefix(collection)
	if g.Type == keygen.HiLo {
		if s.sep != "/" && s.nums != nil {
			// The sync server's ranges carry "tag/" as their prefix: build
			// the id with this store's separator from the number instead.
			n, tag, err := s.nums.NextNumber(ctx, prefix)
			if err != nil {
				return "", fmt.Errorf("generate id: %w", err)
			}
			return prefix + s.sep + strconv.FormatInt(n, 10) + "-" + tag, nil
		}
		if s.ids == nil {
			return "", newError(ErrNeedsServer, "", "", "no id source to give %q documents HiLo ids", prefix)
		}
		id, err := s.ids.NextID(ctx, prefix)
		if err != nil {
			return "", fmt.Errorf("generate id: %w", err)
		}
		return id, nil
	}
	key, err := g.NextKey(ctx, s.nums, prefix)
	if err != nil {
		return "", keyGenError(err)
	}
	return prefix + s.sep + key, nil
}

// NextIdentityFor returns the next value of the identity for prefix
// ("companies", "companies|" and "companies/" name the same one) from the
// sync server, as RavenDB's nextIdentityFor. Offline it fails with
// needs_server.
func (s *Store) NextIdentityFor(ctx context.Context, prefix string) (int64, error) {
	name := identityName(prefix, s.sep)
	if err := validateIdentityName(name); err != nil {
		return 0, err
	}
	if s.idents == nil {
		return 0, newError(ErrNeedsServer, name, "", "next identity for %q: no identity source (the sync server is needed)", name)
	}
	v, err := s.idents.NextIdentity(ctx, name)
	if err != nil {
		return 0, needsServer(name, "next identity", err)
	}
	return v, nil
}

// SeedIdentityFor sets the identity for prefix to value, as RavenDB's
// seedIdentityFor: without force only upwards (a lower value leaves the
// identity alone and returns its current, higher value); with force exactly,
// which can make later identities repeat ids already in use.
func (s *Store) SeedIdentityFor(ctx context.Context, prefix string, value int64, force bool) (int64, error) {
	name := identityName(prefix, s.sep)
	if err := validateIdentityName(name); err != nil {
		return 0, err
	}
	if value < 0 {
		return 0, newError(ErrBadParameter, name, "", "seed identity for %q: value %d is negative", name, value)
	}
	if s.idents == nil {
		return 0, newError(ErrNeedsServer, name, "", "seed identity for %q: no identity source (the sync server is needed)", name)
	}
	v, err := s.idents.SeedIdentity(ctx, name, value, force)
	if err != nil {
		return 0, needsServer(name, "seed identity", err)
	}
	return v, nil
}

func validateIdentityName(name string) error {
	if name == "" {
		return newError(ErrBadParameter, name, "", "identity name is empty")
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; c < 0x20 || c == 0x7f || c == '|' {
			return newError(ErrBadParameter, name, "", "identity name %q: byte %q is not allowed", name, c)
		}
	}
	return nil
}

// needsServer turns an identity source's failure into a needs_server error
// that still unwraps to the cause.
func needsServer(name, op string, err error) error {
	e := newError(ErrNeedsServer, name, "", "%s for %q needs the sync server: %v", op, name, err)
	return &wrapped{err: e, cause: err}
}

// wrapped is an *Error that also unwraps to its cause, so both
// errors.As(err, **Error) and errors.Is(err, cause) work.
type wrapped struct {
	err   *Error
	cause error
}

func (w *wrapped) Error() string   { return w.err.Error() }
func (w *wrapped) Unwrap() []error { return []error{w.err, w.cause} }

// honourRevs makes a _rev in a document a precondition (WriteOptions).
var honourRevs = false

// putOptions are Put's: never changed, shared by every call.
var putOptions = &WriteOptions{OverwriteMode: OverwriteReplace, ReturnNew: true, IgnoreRevs: &honourRevs}

// Put stores doc, a JSON object, in collection and returns the stored
// document with _id, _key, _rev and @metadata.@collection set, overwriting
// any document with that id (RavenDB's put). The id comes from the
// document's _id (see docs/ids.md: missing or null → the collection's key
// generator, "" → a UUID, "x/" → this node's sequence, "x|" → an identity,
// anything else as given), else from its _key. A _rev in doc is a
// precondition against lost updates: the write is applied only when it is
// the stored document's _rev, and fails with ErrConflict (1200) otherwise.
func (s *Store) Put(ctx context.Context, collection string, doc []byte) ([]byte, error) {
	r, err := s.Insert(ctx, collection, doc, putOptions)
	if err != nil {
		return nil, err
	}
	return r.New, nil
}

// Get returns the document with the given id, or an *Error with number 1202.
func (s *Store) Get(id string) ([]byte, error) {
	out, err := s.GetString(id)
	if err != nil {
		return nil, err
	}
	return []byte(out), nil
}

// GetString is Get returning the document's JSON text as a string, without
// a copy.
func (s *Store) GetString(id string) (string, error) {
	var out string
	err := s.view(func(tx *txn) error {
		var err error
		out, err = tx.Get(docPrefix + id)
		return err
	})
	if errors.Is(err, buntdb.ErrNotFound) {
		return "", notFound(id)
	}
	if err != nil {
		return "", fmt.Errorf("get document: %w", err)
	}
	return out, nil
}

// Delete removes the document with the given id, or returns an *Error with
// number 1202 when there is none.
func (s *Store) Delete(id string) error { return s.DeleteContext(context.Background(), id) }

// DeleteContext is Delete under ctx, which may ask for a receipt
// (WithReceipt).
func (s *Store) DeleteContext(ctx context.Context, id string) error {
	err := s.updateN(ctx, 2, func(tx *txn) error {
		docKey := docPrefix + id
		prev, err := tx.Delete(docKey)
		if err != nil {
			return err
		}
		if err := trackWrite(tx, docKey, readHeader(prev).Rev, s.nextRev(tx), true); err != nil {
			return err
		}
		return storeReceipt(ctx, tx, []Result{{ID: id}})
	})
	if err == nil {
		s.notifyWrite()
	}
	if errors.Is(err, buntdb.ErrNotFound) {
		return notFound(id)
	}
	if err != nil {
		return fmt.Errorf("delete document: %w", err)
	}
	return nil
}

// NodeSequence returns the last number this node used for an id ending in
// the separator.
func (s *Store) NodeSequence() uint64 {
	var n uint64
	_ = s.view(func(tx *txn) error {
		n = readUint(tx, nodeSeqKey)
		return nil
	})
	return n
}

// nextRev returns a new revision for a write in tx. The wall clock is read
// once per transaction: under WebAssembly a reading is two calls into
// JavaScript, which a batch of 10,000 documents made 20,000 times. The
// revisions of one transaction still order after every earlier one and
// after each other (the clock's counter goes on).
func (s *Store) nextRev(tx *txn) string {
	return revision.Encode(s.nextTick(tx), s.clock.Node())
}

// tickBlock is how many clock values a transaction of many writes reserves
// at a time (nextTick).
const tickBlock = 1024

// nextTick returns the clock value of the next revision made in tx. A
// transaction of many writes (a bulk write) reserves its values a block at
// a time, in one atomic step each (Clock.TickN); values it reserves and
// does not use are never used. Such a transaction writes local documents
// only: one that applies remote versions (and moves the clock past theirs,
// Clock.Observe) has no size hint and takes each value as it goes.
func (s *Store) nextTick(tx *txn) uint64 {
	if tx.wallMs == 0 {
		tx.wallMs = s.clock.Now().UnixMilli()
	}
	if tx.sizeHint < 64 {
		return s.clock.TickAt(tx.wallMs)
	}
	if tx.tick == tx.tickEnd {
		n := uint64(min(tx.sizeHint, tickBlock))
		tx.tick = s.clock.TickN(tx.wallMs, n)
		tx.tickEnd = tx.tick + n
	}
	v := tx.tick
	tx.tick++
	return v
}

// revBuf holds a revision while a document is encoded (nextRevIn).
type revBuf [revision.ClockLen + 16]byte

// nextRevIn is nextRev written into b, without an allocation: the string
// it returns shares b's bytes and must not outlive b. A node tag too long
// for b gets an allocated revision.
func (s *Store) nextRevIn(tx *txn, b *revBuf) string {
	v, node := s.nextTick(tx), s.clock.Node()
	if len(node) > len(b)-revision.ClockLen {
		return revision.Encode(v, node)
	}
	revision.EncodeClock(b[:revision.ClockLen], v)
	n := revision.ClockLen + copy(b[revision.ClockLen:], node)
	return unsafe.String(&b[0], n)
}
