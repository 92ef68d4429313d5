package database

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"unsafe"

	"github.com/hilodb/hilodb/core"
)

// Storage keeps a store's bytes: a snapshot and a log of frames appended
// after it. Each method returns once what it did is durable (or failed). The
// journal calls one method at a time.
type Storage interface {
	// Load returns the snapshot (nil for none) and the log, and hands them
	// over: the storage never writes to those bytes again, so the store
	// keeps its keys and values as slices of them, without a copy.
	Load() (snapshot, log []byte, err error)
	// Append adds bytes to the end of the log.
	Append(frames []byte) error
	// Compact replaces the snapshot with snap and empties the log, as one
	// step: after a crash, either the old snapshot and log or the new
	// snapshot and an empty log (or the old log, every frame of which the
	// new snapshot holds).
	Compact(snap []byte) error
}

// Flusher is a Storage whose Append returns once the operating system holds
// the frames (which a killed process cannot take back) but before they are
// on the disk (which a power cut could). Flush puts everything appended so
// far on the disk. The journal calls it before the store's writes leave for
// the sync server, so a power cut never leaves the server holding writes,
// and ids, that the store lost.
type Flusher interface {
	Flush() error
}

// NowAppender is a Storage that can also append before it returns, with no
// wait: an OPFS file held by this thread, a file written with write(2). A
// strict write is then durable when its transaction commits, so it can be
// answered at once. The journal calls AppendNow only while no Append or
// Compact is in flight.
type NowAppender interface {
	// CanAppendNow reports whether AppendNow is available; it is asked once,
	// when the journal opens.
	CanAppendNow() bool
	// AppendNow appends frames as Append does, before it returns. ok is
	// false when it cannot at this moment: nothing was written, and the
	// journal appends them with Append instead.
	AppendNow(frames []byte) (ok bool, err error)
}

// Durability says when a write is acknowledged.
type Durability int

const (
	// Strict acknowledges a write once its frame is durable (the default).
	Strict Durability = iota
	// Relaxed acknowledges a write at once and makes it durable moments
	// later; a crash can lose the last writes acknowledged.
	Relaxed
)

// JournalOptions tune a Journal.
type JournalOptions struct {
	Durability Durability
	// CompactAt is the log size in bytes past which the log is compacted
	// into a new snapshot (and at least the last snapshot's size). Default
	// 4 MiB.
	CompactAt int
}

// LoadPauser is a Storage that OpenJournal calls every PauseEvery items
// while it loads the store, in the middle of its one transaction: a
// program on one thread (GOOS=js) can return to its event loop there, so
// that what came meanwhile (a request answered from elsewhere) is not held
// for the whole load. LoadPause must not use the store.
type LoadPauser interface {
	LoadPause()
}

// PauseEvery is how many loaded items LoadPauser.LoadPause is called
// after.
const PauseEvery = 1024

// ErrDamaged is returned by OpenJournal for a store whose bytes were
// changed after they were written: a frame of the log that whole frames
// follow fails its checksum, or the snapshot fails its own. The error
// says where; docs/operations.md ("A damaged persisted store") says how
// to recover.
var ErrDamaged = errors.New("store damaged")

// ErrFailed is returned by every write after the storage failed: the store
// in memory is ahead of what is durable, and is not to be trusted with more
// acknowledgements until it is opened again.
var ErrFailed = errors.New("storage failed; reopen the store")

// Journal is a core.Journal over a Storage with group commit: frames of
// write transactions that arrive while an append is in flight are appended
// together by the next one.
type Journal struct {
	st    Storage
	store *core.Store
	opts  JournalOptions

	mu       sync.Mutex
	seq      uint64 // last frame handed a sequence
	pending  []byte // frames not yet appended
	batch    *batch // the waiters of pending
	flushing bool
	failed   error
	logSize  int // bytes in the log since the last snapshot
	snapSize int
	idle     *sync.Cond  // signalled when a flush round ends
	onDisk   uint64      // last frame a Flusher's Flush covered
	now      NowAppender // st, when it appends at once; nil otherwise
	frame    []byte      // AppendNow's frame buffer, reused
}

// batch is the frames of one append and whoever waits for them.
type batch struct {
	done chan struct{}
	err  error
}

var _ core.Journal = (*Journal)(nil)

// OpenJournal loads what st holds into store (which must be empty and new) and
// returns the journal that keeps store's later writes durable in st; it is
// installed with store.SetJournal. A log that ends in an unfinished frame
// (a write cut off by a crash, never acknowledged) is compacted away at
// once, so new frames never follow a damaged one. A damaged frame that
// whole frames follow, and a snapshot that fails its checksum, are
// ErrDamaged: nothing is loaded and nothing in st is changed.
func OpenJournal(st Storage, store *core.Store, opts JournalOptions) (*Journal, error) {
	if opts.CompactAt <= 0 {
		opts.CompactAt = 4 << 20
	}
	j := &Journal{st: st, store: store, opts: opts, batch: newBatch()}
	j.idle = sync.NewCond(&j.mu)
	snap, log, err := st.Load()
	if err != nil {
		return nil, fmt.Errorf("load store: %w", err)
	}
	var sn snapshot
	if len(snap) > 0 {
		if sn, err = readSnapshot(snap); err != nil {
			return nil, err
		}
		if sn.format == 1 {
			if err := store.Load(bytes.NewReader(sn.body)); err != nil {
				return nil, err
			}
		}
		j.seq, j.snapSize = sn.seq, len(snap)
	}
	// The snapshot's items, then the log's frames after it, in one
	// transaction; keys and values are slices of their bytes, read in place
	// (handedOver).
	torn := false
	hint := sn.count // the room the items take, but for a table's
	if sn.format >= 8 {
		hint = 0
	}
	err = store.LoadSaved(hint, func(f core.Fill) error {
		if p, ok := st.(LoadPauser); ok {
			load, n := f.Apply, 0
			f.Apply = func(c core.Change) error {
				if n++; n%PauseEvery == 0 {
					p.LoadPause()
				}
				return load(c)
			}
		}
		var err error
		j.seq, j.logSize, torn, err = readStored(sn, log, f)
		return err
	})
	if err != nil {
		return nil, err
	}
	if na, ok := st.(NowAppender); ok && opts.Durability == Strict && na.CanAppendNow() {
		j.now = na
	}
	store.SetJournal(j)
	if torn {
		if err := j.compact(); err != nil {
			return nil, fmt.Errorf("cut unfinished write: %w", err)
		}
	}
	return j, nil
}

// handedOver is b as a string without a copy: bytes Storage.Load handed
// over, which nothing writes to again (a copy of a snapshot of 100,000
// documents took about 5% of a browser's reopen, and doubled its memory
// while it lasted).
func handedOver(b []byte) string {
	return unsafe.String(unsafe.SliceData(b), len(b))
}

func newBatch() *batch { return &batch{done: make(chan struct{})} }

// Commit implements core.Journal.
func (j *Journal) Commit(changes []core.Change) func() error {
	j.mu.Lock()
	if j.failed != nil {
		err := j.failed
		j.mu.Unlock()
		return func() error { return err }
	}
	j.seq++
	if j.now != nil && !j.flushing && len(j.pending) == 0 {
		if done, wait := j.appendNow(changes); done {
			return wait
		}
	}
	j.pending = appendFrame(j.pending, j.seq, changes)
	b := j.batch
	if !j.flushing {
		j.flushing = true
		go j.flush()
	}
	j.mu.Unlock()
	if j.opts.Durability == Relaxed {
		return func() error { return nil }
	}
	return func() error {
		<-b.done
		return b.err
	}
}

// appendNow appends the frame of changes (sequence j.seq) at once, with j.mu
// held, which it releases when done. Not done means the storage could not
// append at once: nothing was written, j.mu is still held and the frame
// takes the queue. Done, it returns what Commit returns: nil (nothing to
// wait for) or a wait that reports the failure.
func (j *Journal) appendNow(changes []core.Change) (done bool, wait func() error) {
	j.frame = appendFrame(j.frame[:0], j.seq, changes)
	ok, err := j.now.AppendNow(j.frame)
	n := len(j.frame)
	if n > 1<<20 {
		j.frame = nil // a bulk write's frame is not kept
	}
	if !ok && err == nil {
		return false, nil
	}
	if err != nil {
		j.failed = fmt.Errorf("%w: append to log: %v", ErrFailed, err)
		failed := j.failed
		j.mu.Unlock()
		return true, func() error { return failed }
	}
	j.logSize += n
	if j.logOutgrown() {
		// Compacted in the background; commits meanwhile take the queue.
		j.flushing = true
		go j.compactThenFlush()
	}
	j.mu.Unlock()
	return true, nil
}

// AppendsNow reports whether the journal appends strict writes at once
// (its Storage is a NowAppender that can).
func (j *Journal) AppendsNow() bool { return j.now != nil }

// compactThenFlush compacts the log, then appends what was committed
// meanwhile. flushing is true while it runs.
func (j *Journal) compactThenFlush() {
	j.compactOrFail()
	j.flush()
}

// logOutgrown reports whether the log is due to be compacted: past
// CompactAt and the last snapshot's size. Called with j.mu held.
func (j *Journal) logOutgrown() bool { return j.logSize > max(j.opts.CompactAt, j.snapSize) }

// compactOrFail compacts the log; a failure fails the journal.
func (j *Journal) compactOrFail() {
	if err := j.compact(); err != nil {
		j.mu.Lock()
		if j.failed == nil {
			j.failed = fmt.Errorf("%w: compact log: %v", ErrFailed, err)
		}
		j.mu.Unlock()
	}
}

// flush appends pending frames, a round at a time, until none are left.
func (j *Journal) flush() {
	for {
		j.mu.Lock()
		if len(j.pending) == 0 {
			j.flushing = false
			j.idle.Broadcast()
			j.mu.Unlock()
			return
		}
		frames, b := j.pending, j.batch
		j.pending, j.batch = nil, newBatch()
		j.mu.Unlock()

		err := j.st.Append(frames)
		if err != nil {
			err = fmt.Errorf("%w: append to log: %v", ErrFailed, err)
		}
		j.mu.Lock()
		if err != nil && j.failed == nil {
			j.failed = err
		}
		j.logSize += len(frames)
		compact := err == nil && j.logOutgrown()
		j.mu.Unlock()
		b.err = err
		close(b.done)
		if compact {
			j.compactOrFail()
		}
	}
}

// compact writes a snapshot of the store and empties the log. Frames
// committed while it runs are in the snapshot, appended after it, or both
// (loading skips those the snapshot holds).
func (j *Journal) compact() error {
	j.mu.Lock()
	size := j.snapSize + j.logSize // about the size the snapshot will be
	j.mu.Unlock()
	// The header is filled in once the walk has counted the items.
	snap := make([]byte, snapHeaderLen, size+snapHeaderLen)
	var seq uint64
	count := 0
	var ixs indexWriter
	var table []byte // format 8's rows, written after the indexes
	rows := false    // made only when index entries follow (format 8)
	err := j.store.ItemsAndIndexes(func(indexed bool) {
		rows = indexed
		j.mu.Lock()
		seq = j.seq
		j.mu.Unlock()
	}, func(key, value string) error {
		if rows {
			snap, table = appendItemRow(snap, table, key, value)
		} else {
			snap = appendItem(snap, key, value)
		}
		count++
		return nil
	}, ixs.add)
	if err != nil {
		return fmt.Errorf("save store: %w", err)
	}
	if len(ixs.parts) > 0 {
		snap = ixs.appendTo(snap)
		snap = appendTable(snap, table)
	}
	putSnapHeader(snap, seq, count, len(ixs.parts) > 0)
	if err := j.st.Compact(snap); err != nil {
		return err
	}
	j.mu.Lock()
	j.logSize, j.snapSize = 0, len(snap)
	j.mu.Unlock()
	return nil
}

// Sync waits until every write committed before it is durable (or the
// storage failed), whatever the durability.
func (j *Journal) Sync() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	for j.flushing || len(j.pending) > 0 {
		j.idle.Wait()
	}
	return j.failed
}

// Harden waits as Sync does, then, on a Flusher, puts every frame appended
// so far on the disk. Appends wait meanwhile (frames committed go on
// queueing).
func (j *Journal) Harden() error {
	j.mu.Lock()
	for j.flushing || len(j.pending) > 0 {
		j.idle.Wait()
	}
	f, ok := j.st.(Flusher)
	if j.failed != nil || !ok || j.onDisk == j.seq {
		err := j.failed
		j.mu.Unlock()
		return err
	}
	seq := j.seq
	j.flushing = true // holds the flusher off until Flush returns
	j.mu.Unlock()

	err := f.Flush()
	j.mu.Lock()
	defer j.mu.Unlock()
	if err != nil {
		if j.failed == nil {
			j.failed = fmt.Errorf("%w: flush log: %v", ErrFailed, err)
		}
	} else {
		j.onDisk = seq
	}
	if len(j.pending) > 0 {
		go j.flush() // frames committed meanwhile; flushing stays true
	} else {
		j.flushing = false
		j.idle.Broadcast()
	}
	if err != nil {
		return j.failed
	}
	return nil
}

// Compact writes a snapshot now and empties the log.
func (j *Journal) Compact() error {
	if err := j.Sync(); err != nil {
		return err
	}
	return j.compact()
}
