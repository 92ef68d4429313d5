package database

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"slices"

	"github.com/hilodb/hilodb/core"
)

// A frame is one write transaction in the log:
//
//	'F' | uvarint seq | uvarint len | payload (len bytes) | crc32c (4 bytes, little endian)
//
// The checksum covers seq, len and payload. The payload is a uvarint count
// of changes, then per change a byte (0 set, 1 delete), the key and, for a
// set, the value, each as a uvarint length and its bytes.
const frameMark = 'F'

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// errTorn marks a log that ends in the middle of a frame, or in bytes that
// are not a frame: a write cut off by a crash, never acknowledged.
var errTorn = errors.New("log ends in an unfinished frame")

// appendFrame encodes changes as frame seq at the end of b. It measures
// the payload first and writes it in place: a bulk write's frame is
// megabytes, and building it apart and copying it cost as much again.
func appendFrame(b []byte, seq uint64, changes []core.Change) []byte {
	size := uvarintLen(uint64(len(changes)))
	for _, c := range changes {
		size += 1 + uvarintLen(uint64(len(c.Key))) + len(c.Key)
		if !c.Deleted {
			size += uvarintLen(uint64(len(c.Value))) + len(c.Value)
		}
	}
	b = slices.Grow(b, 1+2*binary.MaxVarintLen64+size+4)
	b = append(b, frameMark)
	start := len(b)
	b = binary.AppendUvarint(b, seq)
	b = binary.AppendUvarint(b, uint64(size))
	b = binary.AppendUvarint(b, uint64(len(changes)))
	for _, c := range changes {
		if c.Deleted {
			b = append(b, 1)
			b = binary.AppendUvarint(b, uint64(len(c.Key)))
			b = append(b, c.Key...)
			continue
		}
		b = append(b, 0)
		b = binary.AppendUvarint(b, uint64(len(c.Key)))
		b = append(b, c.Key...)
		b = binary.AppendUvarint(b, uint64(len(c.Value)))
		b = append(b, c.Value...)
	}
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b[start:], crcTable))
}

// uvarintLen is the length of x encoded by binary.AppendUvarint.
func uvarintLen(x uint64) int {
	n := 1
	for ; x >= 0x80; x >>= 7 {
		n++
	}
	return n
}

// frameAt checks the frame that starts at b[p:] and returns its sequence,
// where its payload starts and ends in b, and where the next frame starts.
// A frame that is cut off or fails its checksum is errTorn.
func frameAt(b []byte, p int) (seq uint64, start, end, next int, err error) {
	if p >= len(b) || b[p] != frameMark {
		return 0, 0, 0, 0, errTorn
	}
	q := p + 1
	seq, k := binary.Uvarint(b[q:])
	if k <= 0 {
		return 0, 0, 0, 0, errTorn
	}
	q += k
	size, k := binary.Uvarint(b[q:])
	if k <= 0 || size > uint64(len(b)-q-k) {
		return 0, 0, 0, 0, errTorn
	}
	start = q + k
	end = start + int(size)
	if end+4 > len(b) || crc32.Checksum(b[p+1:end], crcTable) != binary.LittleEndian.Uint32(b[end:]) {
		return 0, 0, 0, 0, errTorn
	}
	return seq, start, end, end + 4, nil
}

// eachChange hands apply each change of the payload b[start:end], its key
// and value slices of text, which holds the same bytes as b.
func eachChange(b []byte, text string, start, end int, apply func(core.Change) error) error {
	p := start
	count, k := binary.Uvarint(b[p:end])
	if k <= 0 || count > uint64(end-p) {
		return errors.New("log frame: bad change count")
	}
	p += k
	str := func() (string, bool) {
		n, k := binary.Uvarint(b[p:end])
		if k <= 0 || n > uint64(end-p-k) {
			return "", false
		}
		from := p + k
		p = from + int(n)
		return text[from:p], true
	}
	for range count {
		if p >= end {
			return errors.New("log frame: cut short")
		}
		op := b[p]
		p++
		key, ok := str()
		if !ok || op > 1 {
			return errors.New("log frame: bad change")
		}
		c := core.Change{Key: key, Deleted: op == 1}
		if op == 0 {
			if c.Value, ok = str(); !ok {
				return errors.New("log frame: bad value")
			}
		}
		if err := apply(c); err != nil {
			return err
		}
	}
	return nil
}

// intactAfter looks for whole frames after a damaged one at b[p:] whose
// sequences are past floor (frames the snapshot and the log before p do
// not hold). It returns where the first starts and how many follow one
// another from there; n is 0 when none does, and the damage is an
// unfinished last frame. Only a mark followed by a sequence just past floor
// has its checksum computed, so bytes after a tear cost one pass.
func intactAfter(b []byte, p int, floor uint64) (at, n int) {
	for q := p + 1; q < len(b); q++ {
		if b[q] != frameMark {
			continue
		}
		if seq, k := binary.Uvarint(b[q+1:]); k <= 0 || seq <= floor || seq-floor > 1<<20 {
			continue
		}
		seq, _, _, next, err := frameAt(b, q)
		if err != nil || seq <= floor {
			continue
		}
		at = q
		for n = 1; next < len(b); n++ {
			if _, _, _, next, err = frameAt(b, next); err != nil {
				break
			}
		}
		return at, n
	}
	return 0, 0
}

// damagedLog is the error for a log damaged at byte p of size, after the
// frame of sequence last, with n whole frames from byte at.
func damagedLog(p, size int, last uint64, at, n int) error {
	return fmt.Errorf("%w: the log is damaged at byte %d of %d (the frame after number %d), and %d whole frames follow from byte %d: "+
		"not a write cut off by a crash. Nothing was loaded or changed. Keep a copy of the files; cutting the log to %d bytes opens the store "+
		"without the writes from the damage on (see docs/operations.md, \"A damaged persisted store\")", ErrDamaged, p, size, last, n, at, p)
}
