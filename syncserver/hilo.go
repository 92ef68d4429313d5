package syncserver

import (
	"encoding/json"
	"sync"

	"github.com/hilodb/hilodb/auth"
	"github.com/hilodb/hilodb/syncserver/storage"

	"context"
	"fmt"
	"time"

	"github.com/hilodb/hilodb/internal/wire"
)

// Range sizing, as RavenDB's server does it.
const (
	minRange    = 32
	maxRange    = storage.DefaultBump // a repair raises counters past one whole lease
	growWithin  = 30 * time.Second
	shrinkAfter = 60 * time.Second
)

// capacity returns the size of the next range given the size of the last one
// and when it was leased: ranges double while a client uses them up within 30
// seconds, halve after a minute, and stay between 32 and 1,048,576.
func capacity(lastSize int64, lastRangeAt time.Time, now time.Time) int64 {
	if lastSize < 0 {
		lastSize = 0
	}
	if lastRangeAt.IsZero() {
		return max(minRange, min(lastSize, maxRange))
	}
	switch age := now.Sub(lastRangeAt); {
	case age < growWithin:
		return min(max(minRange, 2*lastSize), maxRange)
	case age > shrinkAfter:
		return max(minRange, min(lastSize/2, maxRange))
	default:
		return max(minRange, min(lastSize, maxRange))
	}
}

// LeasedRange is one range handed out.
type LeasedRange struct {
	Low, High, Size int64
	At              time.Time
}

// LastLease is what a client says of its previous range of a tag when it
// asks for the next: its size, its high end, when it was leased (zero for
// none), and how many numbers the client is about to take (0: no more than
// usual).
type LastLease struct {
	Size, Max int64
	At        time.Time
	Want      int64
}

// NextRange leases the next range for tag in db to node and returns it once
// durable. last.Max, the end of the client's previous range, can raise the
// start but can be no higher than what the server ever handed out: a client
// only reports numbers it was given, and a higher one would use up the tag.
// The range holds at least last.Want numbers, up to maxRange.
func (s *Server) NextRange(ctx context.Context, db, tag, node string, last LastLease) (LeasedRange, error) {
	if err := NeedRole(ctx, auth.Write, "leasing ids"); err != nil {
		return LeasedRange{}, err
	}
	lastSize, lastMax, lastRangeAt := last.Size, last.Max, last.At
	if lastSize < 0 || lastMax < 0 || lastMax > storage.MaxSafeNumber || last.Want < 0 {
		return LeasedRange{}, BadRequest("lastSize and lastMax must be between 0 and %d", int64(storage.MaxSafeNumber))
	}
	var out LeasedRange
	err := s.store.Update(ctx, func(tx storage.Tx) error {
		var doc storage.HiloDoc
		if _, err := storage.GetJSON(tx, storage.HiloKey(db, tag), &doc); err != nil {
			return err
		}
		if lastMax > doc.Highest() {
			return BadRequest("lastMax %d is above the highest number handed out for HiLo tag %s (%d); a client reports only the end of a range it leased", lastMax, Quote(tag), doc.Highest())
		}
		now := s.now().UTC()
		size := max(capacity(lastSize, lastRangeAt, now), min(last.Want, maxRange))
		oldMax := max(doc.Max, lastMax)
		if oldMax > storage.MaxSafeNumber-size {
			return &protoError{code: wire.CodeOutOfKeys, num: wire.NumOutOfKeys, msg: fmt.Sprintf("HiLo tag %q has no numbers left", tag)}
		}
		out = LeasedRange{Low: oldMax + 1, High: oldMax + size, Size: size, At: now}
		return storage.SetJSON(tx, storage.HiloKey(db, tag), storage.HiloDoc{Max: out.High, Low: out.Low, Top: max(out.High, doc.Highest()), Node: node, Meta: doc.Meta})
	})
	if err != nil {
		return LeasedRange{}, err
	}
	s.metrics.rangesLeased.Add(1)
	return out, nil
}

// returnRange takes back the unused end of a range leased to node: accepted
// only when the range is still the latest lease of its tag (Max == end),
// that lease was node's, and last lies within it; otherwise it is ignored,
// as RavenDB does. It reports whether the numbers were taken back. The
// caller checks that its connection leased the range (node tags can be
// claimed by anyone who knows them).
func (s *Server) returnRange(ctx context.Context, db, tag, node string, end, last int64) (bool, error) {
	if err := NeedRole(ctx, auth.Write, "returning ids"); err != nil {
		return false, err
	}
	if end < 1 || last < 0 || last > end {
		return false, BadRequest("need 0 <= last <= end and end >= 1")
	}
	accepted := false
	err := s.store.Update(ctx, func(tx storage.Tx) error {
		accepted = false
		var doc storage.HiloDoc
		found, err := storage.GetJSON(tx, storage.HiloKey(db, tag), &doc)
		if err != nil || !found {
			return err
		}
		// Never below the start of the latest lease: numbers before it may
		// belong to other clients' ranges.
		if doc.Max != end || doc.Low == 0 || last < doc.Low-1 || doc.Node != node {
			return nil
		}
		accepted = true
		// Low moves past last, so a second return cannot reach lower.
		return storage.SetJSON(tx, storage.HiloKey(db, tag), storage.HiloDoc{Max: last, Low: last + 1, Top: doc.Highest(), Node: node, Meta: doc.Meta})
	})
	return accepted, err
}

// serverNumbers hands out HiLo numbers the server leases for itself, for
// the keys it makes; unused ones are skipped after a restart.
type serverNumbers struct {
	mu     sync.Mutex
	ranges map[string]*serverRange // db/tag → range at hand
}

type serverRange struct {
	next, high, size int64
	at               time.Time
}

const serverLeaseNode = "@server"

// NextNumber returns the next number of db's HiLo tag for the server. want
// is how many numbers the caller may still take (the rest of a batch): a
// lease it needs holds at least that many, so a batch leases once instead
// of growing the range a lease and an fsync at a time.
func (s *Server) NextNumber(ctx context.Context, db, tag string, want int) (int64, error) {
	s.numbers.mu.Lock()
	defer s.numbers.mu.Unlock()
	if s.numbers.ranges == nil {
		s.numbers.ranges = map[string]*serverRange{}
	}
	r := s.numbers.ranges[db+"/"+tag]
	if r == nil || r.next > r.high {
		var lastSize int64
		var at time.Time
		if r != nil {
			lastSize, at = r.size, r.at
		}
		got, err := s.NextRange(ctx, db, tag, serverLeaseNode, LastLease{Size: lastSize, At: at, Want: int64(want)})
		if err != nil {
			return 0, err
		}
		r = &serverRange{next: got.Low, high: got.High, size: got.Size, at: got.At}
		s.numbers.ranges[db+"/"+tag] = r
	}
	n := r.next
	r.next++
	return n, nil
}

// RaiseHilo raises the state of tag to want (kept when it is higher),
// with meta as its Raven/Hilo document's @metadata (nil keeps it), and
// returns the state's Max. Leases made before it are no longer the latest,
// so no return reaches below it.
func (s *Server) RaiseHilo(ctx context.Context, db, tag string, want int64, meta json.RawMessage) (int64, error) {
	// Like a seed, a raise can use a tag's numbers up: an admin's act.
	if err := NeedRole(ctx, auth.Admin, "storing a HiLo state (Raven/Hilo)"); err != nil {
		return 0, err
	}
	var out int64
	err := s.store.Update(ctx, func(tx storage.Tx) error {
		var st storage.HiloDoc
		if _, err := storage.GetJSON(tx, storage.HiloKey(db, tag), &st); err != nil {
			return err
		}
		out = max(st.Max, want)
		if meta == nil {
			meta = st.Meta
		}
		if out == st.Max {
			st.Meta = meta // the same numbers: a return may still come back
			return storage.SetJSON(tx, storage.HiloKey(db, tag), st)
		}
		return storage.SetJSON(tx, storage.HiloKey(db, tag), storage.HiloDoc{Max: out, Top: max(st.Highest(), out), Meta: meta})
	})
	return out, err
}

// HiloState reads the state of db's HiLo tag: the highest number taken and
// the @metadata a RavenDB client stored with it; found is false for a tag
// that never leased.
func (s *Server) HiloState(db, tag string) (hiMax int64, meta json.RawMessage, found bool, err error) {
	var st storage.HiloDoc
	err = s.store.View(func(tx storage.Tx) error {
		var err error
		found, err = storage.GetJSON(tx, storage.HiloKey(db, tag), &st)
		return err
	})
	return st.Max, st.Meta, found, err
}
