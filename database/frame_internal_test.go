package database

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"reflect"
	"strings"
	"testing"

	"github.com/hilodb/hilodb/core"
)

// refAppendFrame is the frame layout as first written: the payload built
// apart, then framed.
func refAppendFrame(b []byte, seq uint64, changes []core.Change) []byte {
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

func TestAppendFrameLayout(t *testing.T) {
	big := strings.Repeat("v", 300)
	cases := [][]core.Change{
		nil,
		{{Key: "doc/a", Value: "{}"}},
		{{Key: "doc/a", Deleted: true}, {Key: "dirty/a", Value: "01:r"}},
		{{Key: "", Value: ""}, {Key: strings.Repeat("k", 200), Value: big}},
	}
	many := make([]core.Change, 0, 300)
	for i := range 300 {
		many = append(many, core.Change{Key: "doc/" + strings.Repeat("x", i%150), Value: big[:i], Deleted: i%7 == 0})
	}
	cases = append(cases, many)
	for i, changes := range cases {
		for _, seq := range []uint64{1, 127, 128, 1 << 40} {
			prefix := []byte("earlier frames")
			got := appendFrame(bytes.Clone(prefix), seq, changes)
			want := refAppendFrame(bytes.Clone(prefix), seq, changes)
			if !bytes.Equal(got, want) {
				t.Fatalf("case %d seq %d: frame differs from the layout", i, seq)
			}
			gseq, start, end, next, err := frameAt(got, len(prefix))
			if err != nil || gseq != seq || next != len(got) {
				t.Fatalf("case %d seq %d: frameAt = %d, %d, %v", i, seq, gseq, next, err)
			}
			var gch []core.Change
			if err := eachChange(got, string(got), start, end, func(c core.Change) error {
				gch = append(gch, c)
				return nil
			}); err != nil {
				t.Fatalf("case %d seq %d: %v", i, seq, err)
			}
			for j := range changes {
				if changes[j].Deleted {
					changes[j].Value = "" // a deletion carries no value
				}
			}
			if len(changes) > 0 && !reflect.DeepEqual(gch, changes) {
				t.Fatalf("case %d seq %d: changes do not round-trip", i, seq)
			}
		}
	}
}
