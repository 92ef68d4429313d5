package database

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"slices"
	"strconv"
	"strings"

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

// readFrame decodes the frame at the start of b and returns its sequence,
// changes and length. A frame that is cut off or fails its checksum is
// errTorn.
func readFrame(b []byte) (seq uint64, changes []core.Change, n int, err error) {
	if len(b) == 0 || b[0] != frameMark {
		return 0, nil, 0, errTorn
	}
	p := 1
	seq, k := binary.Uvarint(b[p:])
	if k <= 0 {
		return 0, nil, 0, errTorn
	}
	p += k
	size, k := binary.Uvarint(b[p:])
	if k <= 0 || size > uint64(len(b)) {
		return 0, nil, 0, errTorn
	}
	p += k
	end := p + int(size)
	if end+4 > len(b) || crc32.Checksum(b[1:end], crcTable) != binary.LittleEndian.Uint32(b[end:]) {
		return 0, nil, 0, errTorn
	}
	changes, err = decodeChanges(b[p:end])
	if err != nil {
		return 0, nil, 0, err
	}
	return seq, changes, end + 4, nil
}

func decodeChanges(b []byte) ([]core.Change, error) {
	count, k := binary.Uvarint(b)
	if k <= 0 || count > uint64(len(b)) {
		return nil, errors.New("log frame: bad change count")
	}
	b = b[k:]
	out := make([]core.Change, 0, count)
	str := func() (string, bool) {
		n, k := binary.Uvarint(b)
		if k <= 0 || n > uint64(len(b)-k) {
			return "", false
		}
		s := string(b[k : k+int(n)])
		b = b[k+int(n):]
		return s, true
	}
	for range count {
		if len(b) == 0 {
			return nil, errors.New("log frame: cut short")
		}
		op := b[0]
		b = b[1:]
		key, ok := str()
		if !ok || op > 1 {
			return nil, errors.New("log frame: bad change")
		}
		c := core.Change{Key: key, Deleted: op == 1}
		if op == 0 {
			if c.Value, ok = str(); !ok {
				return nil, errors.New("log frame: bad value")
			}
		}
		out = append(out, c)
	}
	return out, nil
}

// A snapshot is a header line naming the last frame it holds, then the
// store in buntdb's file format (core.Store.Load reads it).
const snapHeader = "hilodb-snapshot 1 "

func appendSnapHeader(b []byte, seq uint64) []byte {
	b = append(b, snapHeader...)
	b = strconv.AppendUint(b, seq, 10)
	return append(b, '\n')
}

// splitSnapshot returns the last frame a snapshot holds and its store
// bytes.
func splitSnapshot(b []byte) (uint64, []byte, error) {
	if len(b) > 0 && b[0] == '*' {
		return 0, b, nil // a snapshot saved before there was a log: all store
	}
	line, _, ok := strings.Cut(string(b[:min(len(b), 64)]), "\n")
	if !ok || !strings.HasPrefix(line, snapHeader) {
		return 0, nil, fmt.Errorf("snapshot: no header")
	}
	seq, err := strconv.ParseUint(line[len(snapHeader):], 10, 64)
	if err != nil {
		return 0, nil, fmt.Errorf("snapshot header: %w", err)
	}
	return seq, b[len(line)+1:], nil
}
