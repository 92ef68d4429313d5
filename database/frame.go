package database

import (
	"encoding/binary"
	"errors"
	"hash/crc32"

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

// appendFrame encodes changes as frame seq at the end of b.
func appendFrame(b []byte, seq uint64, changes []core.Change) []byte {
	var payload []byte
	payload = binary.AppendUvarint(payload, uint64(len(changes)))
	for _, c := range changes {
		if c.Deleted {
			payload = append(payload, 1)
			payload = binary.AppendUvarint(payload, uint64(len(c.Key)))
			payload = append(payload, c.Key...)
			continue
		}
		payload = append(payload, 0)
		payload = binary.AppendUvarint(payload, uint64(len(c.Key)))
		payload = append(payload, c.Key...)
		payload = binary.AppendUvarint(payload, uint64(len(c.Value)))
		payload = append(payload, c.Value...)
	}
	b = append(b, frameMark)
	start := len(b)
	b = binary.AppendUvarint(b, seq)
	b = binary.AppendUvarint(b, uint64(len(payload)))
	b = append(b, payload...)
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b[start:], crcTable))
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
