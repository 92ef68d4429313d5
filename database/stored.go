package database

import (
	"fmt"

	"github.com/hilodb/hilodb/core"
)

// readStored hands f the items of snapshot sn (formats 2 to 8: format
// 8's as one table where f takes one) and its saved indexes (formats 4 to
// 8), then the changes of the log's frames that sn does not hold, in order
// (Apply, or Table, then Restore, then Apply): what OpenJournal loads into
// a store, and what Stored reads without loading it. It returns the last
// frame's sequence (sn.seq when the log adds none), the log's size up to
// the end of that frame, and whether the log ends in an unfinished frame,
// which is not read. A damaged frame that whole frames follow is
// ErrDamaged. With f.Restore nil the saved indexes are read (a damaged
// section fails as in a load) and handed to nobody.
func readStored(sn snapshot, log []byte, f core.Fill) (seq uint64, logSize int, torn bool, err error) {
	seq = sn.seq
	if sn.format >= 2 {
		var end int
		indexEnd := len(sn.body)
		if sn.format >= 8 {
			rows, at, ok := itemTable(sn.body, sn.count)
			if !ok {
				return 0, 0, false, fmt.Errorf("snapshot: %w: its table of %d items is not whole", errSnapshot, sn.count)
			}
			indexEnd = at
			if f.Table != nil {
				if err := f.Table(handedOver(sn.body), rows); err != nil {
					return 0, 0, false, err
				}
				if len(rows) > 0 {
					end = int(rows[len(rows)-1].ValEnd)
				}
			}
		}
		if sn.format < 8 || f.Table == nil {
			if end, err = readItems(sn.body[:indexEnd], sn.count, f.Apply); err != nil {
				return 0, 0, false, err
			}
		}
		if sn.format >= 4 {
			saved, err := readIndexes(sn.body[end:indexEnd], sn.format)
			if err != nil {
				return 0, 0, false, err
			}
			if f.Restore != nil {
				f.Restore(saved)
			}
		} else if end != len(sn.body) {
			return 0, 0, false, fmt.Errorf("snapshot: %w: %d bytes after its %d items", errSnapshot, len(sn.body)-end, sn.count)
		}
	}
	text := handedOver(log)
	last := seq // the last frame read, or the snapshot's
	for p := 0; p < len(log); {
		fseq, start, end, next, err := frameAt(log, p)
		if err != nil {
			// Only the last frame may be unfinished: a frame the snapshot
			// does not hold, intact after this one, means damage, and
			// cutting here would drop acknowledged writes.
			if at, n := intactAfter(log, p, max(last, seq)); n > 0 {
				return 0, 0, false, damagedLog(p, len(log), last, at, n)
			}
			return seq, logSize, true, nil
		}
		last = fseq
		if fseq > seq { // else held by the snapshot already
			if err := eachChange(log, text, start, end, f.Apply); err != nil {
				return 0, 0, false, fmt.Errorf("read log at byte %d: %w", p, err)
			}
			seq = fseq
			logSize = next
		}
		p = next
	}
	return seq, logSize, false, nil
}

// Stored is what a Storage held, its snapshot and log as Load returns
// them, read one key at a time without loading it into a store: a
// program that must answer before its store is loaded (an edge worker's
// first read) reads the document from here, and loads the store after.
//
// Get reads the bytes as OpenJournal loads them, checks included: where
// OpenJournal would fail (ErrDamaged, a snapshot that is not one), Get
// fails the same way, and otherwise its value is the one the loaded store
// holds. It reads every item and frame on each call, so it is for a read
// or two, not for serving.
//
// A Stored is safe for concurrent use; the bytes it reads must not change.
type Stored struct {
	sn  snapshot
	log []byte
}

// ReadStored returns snapshot and log (as a Storage's Load returns them)
// to be read by Stored.Get, once it has checked the snapshot's header and
// checksum. A snapshot of format 1 (buntdb's file format, from before
// there was a count of items) is an error: such a store can only be
// loaded.
func ReadStored(snapshot, log []byte) (*Stored, error) {
	s := &Stored{log: log}
	if len(snapshot) > 0 {
		sn, err := readSnapshot(snapshot)
		if err != nil {
			return nil, err
		}
		if sn.format == 1 {
			return nil, fmt.Errorf("read stored: %w: format 1 is read only by loading the store", errSnapshot)
		}
		s.sn = sn
	}
	return s, nil
}

// Get returns the value of key (a core.Change's key, one of the store's)
// as the store loaded from these bytes would hold it; ok is false when it
// would hold none.
func (s *Stored) Get(key string) (value string, ok bool, err error) {
	_, _, _, err = readStored(s.sn, s.log, core.Fill{Apply: func(c core.Change) error {
		if c.Key == key {
			value, ok = c.Value, !c.Deleted
		}
		return nil
	}})
	if err != nil {
		return "", false, fmt.Errorf("read stored: %w", err)
	}
	if !ok {
		value = ""
	}
	return value, ok, nil
}
