package database

import (
	"encoding/binary"
	"slices"
	"testing"
	"unsafe"
)

// tableBody is a format 8 body of items (key, value pairs) with an
// index section idx: the records, the section, the table, its end.
func tableBody(items [][2]string, idx []byte) []byte {
	snap := make([]byte, snapHeaderLen, 256)
	var table []byte
	for _, it := range items {
		snap, table = appendItemRow(snap, table, it[0], it[1])
	}
	snap = append(snap, idx...)
	return appendTable(snap, table)[snapHeaderLen:]
}

// TestItemTable: a format 8 body's table reads back its items, in place
// where aligned and as a copy where not, with where its index section
// ends; a body whose end or rows are out of place is refused.
func TestItemTable(t *testing.T) {
	items := [][2]string{{"doc/a/1", `{"x":1}`}, {"doc/a/2", ""}, {"ixdef/a/i", `{"name":"i"}`}}
	body := tableBody(items, []byte("\x00"))
	check := func(name string, body []byte, inPlace bool) {
		t.Helper()
		rows, indexEnd, ok := itemTable(body, len(items))
		if !ok {
			t.Fatalf("%s: refused", name)
		}
		var got [][2]string
		for _, r := range rows {
			got = append(got, [2]string{string(body[r.KeyOff:r.KeyEnd]), string(body[r.ValOff:r.ValEnd])})
		}
		if !slices.Equal(got, items) || body[indexEnd-1] != 0 || int(rows[2].ValEnd) != indexEnd-1 {
			t.Fatalf("%s: items %q, index section ends at %d", name, got, indexEnd)
		}
		at := len(body) - 8 - rowSize*len(items)
		if same := unsafe.Pointer(&rows[0]) == unsafe.Pointer(&body[at]); same != (inPlace && littleEndian) {
			t.Fatalf("%s: read in place %v", name, same)
		}
	}
	// body starts snapHeaderLen bytes into an aligned allocation: its
	// table is aligned where a snapshot's is.
	check("aligned", body, true)
	odd := append(make([]byte, 2, len(body)+2), body...)[2:]
	check("unaligned", odd, false)

	for _, c := range []struct {
		name string
		mut  func(b []byte) []byte
	}{
		{"cut short", func(b []byte) []byte { return b[:len(b)-1] }},
		{"table elsewhere", func(b []byte) []byte {
			binary.LittleEndian.PutUint32(b[len(b)-4:], binary.LittleEndian.Uint32(b[len(b)-4:])+4)
			return b
		}},
		{"index section past the table", func(b []byte) []byte {
			binary.LittleEndian.PutUint32(b[len(b)-8:], uint32(len(b)))
			return b
		}},
		{"a value past the records", func(b []byte) []byte {
			at := len(b) - 8 - rowSize*len(items)
			binary.LittleEndian.PutUint32(b[at+rowSize+12:], uint32(len(b)))
			return b
		}},
		{"rows out of their records' order", func(b []byte) []byte {
			at := len(b) - 8 - rowSize*len(items)
			r0 := slices.Clone(b[at : at+rowSize])
			copy(b[at:], b[at+rowSize:at+2*rowSize])
			copy(b[at+rowSize:], r0)
			return b
		}},
	} {
		if _, _, ok := itemTable(c.mut(slices.Clone(body)), len(items)); ok {
			t.Errorf("%s: read", c.name)
		}
	}
	if _, _, ok := itemTable(body, len(items)+1); ok {
		t.Error("one item more than the table holds: read")
	}
}

// FuzzItemTable: any body either is refused or gives rows within its
// records, without a panic.
func FuzzItemTable(f *testing.F) {
	f.Add(tableBody([][2]string{{"a", "1"}, {"b", "22"}}, []byte("\x00")), 2)
	f.Add(tableBody(nil, []byte("\x00")), 0)
	f.Add([]byte{}, 0)
	f.Fuzz(func(t *testing.T, body []byte, count int) {
		if count < 0 {
			return
		}
		rows, indexEnd, ok := itemTable(body, count)
		if !ok {
			return
		}
		if len(rows) != count || indexEnd > len(body) {
			t.Fatalf("%d rows of %d, index section to %d of %d bytes", len(rows), count, indexEnd, len(body))
		}
		for _, r := range rows {
			_ = body[r.KeyOff:r.KeyEnd]
			_ = body[r.ValOff:r.ValEnd]
			if int(r.ValEnd) > indexEnd {
				t.Fatalf("row %+v past the records' %d bytes", r, indexEnd)
			}
		}
	})
}
