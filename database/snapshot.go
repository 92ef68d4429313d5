package database

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"strconv"
	"strings"
	"unsafe"

	"github.com/cespare/xxhash/v2"

	"github.com/hilodb/hilodb/core"
)

// A snapshot is a header line naming its format, the last frame it holds,
// how many items follow (each number in 20 decimal digits) and a CRC-32C
// checksum (10 decimal digits) of the header before it and of the items,
// then the store's items in key order (the pending marks, keys
// "dirty/<id>", together where their keys would be but in no order among
// themselves: the store keeps them in a map), each a uvarint length and the
// key, a uvarint length and the value:
//
//	hilodb-snapshot 3 <seq> <items> <crc>\n | (uvarint len | key | uvarint len | value) …
//
// Format 4 is format 3 followed, inside what the checksum covers, by the
// entries of the store's built indexes (core.SavedIndex), so that a reopen
// does not build them from the documents again: a uvarint count of
// indexes, then for each a uvarint length and its definition as JSON
// ({"collection", "name", "fields", "keyFormat"}), a uvarint count of
// entries, a uvarint length of the entries' bytes and the entries, each a
// uvarint length and the key, then a uvarint length of the id the key ends
// with. A compaction writes format 4 only when an index is built, so a
// store without indexes stays readable by builds that know format 3 only;
// such a build refuses format 4 (an unknown header) rather than miss its
// entries.
//
// Format 5 adds to each entry a uvarint: one more than the number of the
// item that holds the entry's document (items counted from 0 in their
// order; 0 when not known), so a reopen gives each entry its document
// without looking it up (the index keeps it, core.SavedEntry). A build
// that knows format 4 only refuses format 5.
//
// Format 6, which a compaction writes in place of format 5, is format 5
// with another checksum: the low 32 bits of the XXH64 hash (seed 0) of the
// same bytes. Under WebAssembly it takes about a quarter of CRC-32C's time
// (10 against 37 ms for 31 MB in Node), where CRC-32C has no instruction
// of its own; natively both run at memory speed. A build that knows format
// 5 only refuses format 6.
//
// Format 7, which a compaction writes in place of format 6, keeps each
// index's entries as a table the store reads in place: after the entry
// count comes the length of the keys (not of the entries), every entry's
// key one after another, a byte n (0 to 3) and n zero bytes so that what
// follows starts a multiple of 4 bytes from the snapshot's start, then per
// entry 16 bytes, four 32-bit little-endian numbers: where its key starts
// and ends in the keys, the length of the id it ends with, and the number
// of the item that holds its document (-1 when not known). A reopen then
// decodes no entry: format 6's took about a quarter of a reopen of 100,000
// documents with two indexes. A build that knows format 6 only refuses
// format 7.
//
// Format 8, which a compaction with built indexes writes now, is format 7
// followed by a table of its items, so that a reopen reads them in place
// instead of walking their records: after the index section, zero bytes
// up to a multiple of 4 from the snapshot's start, then per item 16
// bytes, four 32-bit little-endian numbers (where its key starts and ends
// and where its value starts and ends, counted from the first byte after
// the header), then two 32-bit little-endian numbers: where the index
// section ends and where the table starts, counted the same way. The
// store keeps the table as its list of loaded items (core.Fill's Table):
// a reopen of 100,000 documents spent about half its load, 50 of 145 ms
// in Chromium, on one call per item. A build that knows format 7 only
// refuses format 8.
//
// Reading it costs one copy of the bytes (none in a browser's worker,
// which reads the file into Go's memory), the checksum, and a list of the
// items: every key and value is a slice of that one copy, and the keys
// arrive in the order the store keeps them, which keeps them in place
// rather than inserting them into its tree (core.Store.LoadChanges). The copy lives as long as any item
// loaded from it, so until the store is opened again it also holds what
// was since changed or deleted: at most the snapshot's size beyond what the
// store needs.
//
// Older formats are still read. Format 2 is format 3 without the checksum
// (a byte changed in it goes unseen until the next compaction writes format
// 3). Format 1 has the store in buntdb's file format (a RESP command per
// item) after a header line without the count; a snapshot saved before
// there was a log is that format with no header at all.
const (
	snapHeaderV8 = "hilodb-snapshot 8 "
	snapHeaderV7 = "hilodb-snapshot 7 "
	snapHeaderV6 = "hilodb-snapshot 6 "
	snapHeaderV5 = "hilodb-snapshot 5 "
	snapHeaderV4 = "hilodb-snapshot 4 "
	snapHeader   = "hilodb-snapshot 3 "
	snapHeaderV2 = "hilodb-snapshot 2 "
	snapHeaderV1 = "hilodb-snapshot 1 "
)

// errSnapshot marks a snapshot that is not one, or not whole.
var errSnapshot = errors.New("damaged snapshot")

// snapHeaderLen is the length of a format 3 header as putSnapHeader
// writes it: every number is written with all its digits, so the header's
// place can be kept before the items are counted.
const snapHeaderLen = len(snapHeader) + 20 + 1 + 20 + 1 + 10 + 1

// snapSumLen is the length of the checksum and the newline ending a
// format 3 header.
const snapSumLen = 10 + 1

// putSnapHeader writes the header of a snapshot of seq holding count
// items into the first snapHeaderLen bytes of b, whose items follow (and
// its indexes' entries and its table, in format 8).
func putSnapHeader(b []byte, seq uint64, count int, withIndexes bool) {
	h := append(b[:0], snapHeader...)
	if withIndexes {
		h = append(b[:0], snapHeaderV8...)
	}
	h = fmt.Appendf(h, "%020d %020d ", seq, count) // in place: b is long enough
	_ = fmt.Appendf(h, "%010d\n", snapSum(withIndexes, h, b[snapHeaderLen:]))
}

// snapSum is the checksum of a snapshot's header before it (head) and its
// body: format 6's to 8's (xxh) or format 3's to 5's.
func snapSum(xxh bool, head, body []byte) uint32 {
	if !xxh {
		return crc32.Update(crc32.Checksum(head, crcTable), crcTable, body)
	}
	d := xxhash.New()
	_, _ = d.Write(head)
	_, _ = d.Write(body)
	return uint32(d.Sum64())
}

// appendItem appends one item's record to snap: the key's length as a
// uvarint, the key, the value's length, the value.
func appendItem(snap []byte, key, value string) []byte {
	snap = binary.AppendUvarint(snap, uint64(len(key)))
	snap = append(snap, key...)
	snap = binary.AppendUvarint(snap, uint64(len(value)))
	return append(snap, value...)
}

// appendItemRow appends one item's record to snap (whose body starts
// after snapHeaderLen bytes) and its row (format 8) to table.
func appendItemRow(snap, table []byte, key, value string) ([]byte, []byte) {
	kOff := len(snap) - snapHeaderLen + uvarintLen(uint64(len(key)))
	snap = appendItem(snap, key, value)
	vOff := len(snap) - snapHeaderLen - len(value)
	table = binary.LittleEndian.AppendUint32(table, uint32(kOff))
	table = binary.LittleEndian.AppendUint32(table, uint32(kOff+len(key)))
	table = binary.LittleEndian.AppendUint32(table, uint32(vOff))
	table = binary.LittleEndian.AppendUint32(table, uint32(vOff+len(value)))
	return snap, table
}

// rowSize is how many bytes a format 8 row takes: core.ItemRow's four
// numbers, each 32 bits, little-endian.
const rowSize = 16

// The table is read in place as core.ItemRow's (itemTable).
var (
	_ [unsafe.Sizeof(core.ItemRow{}) - rowSize]byte
	_ [rowSize - unsafe.Sizeof(core.ItemRow{})]byte
)

// appendTable appends format 8's end to snap, whose index section ends
// it: zero bytes up to a multiple of 4 from the snapshot's start, the
// table, then where the index section ends and where the table starts
// (from the body's start), each 32 bits, little-endian.
func appendTable(snap, table []byte) []byte {
	indexEnd := len(snap) - snapHeaderLen
	for len(snap)%4 != 0 {
		snap = append(snap, 0)
	}
	tableAt := len(snap) - snapHeaderLen
	snap = append(snap, table...)
	snap = binary.LittleEndian.AppendUint32(snap, uint32(indexEnd))
	return binary.LittleEndian.AppendUint32(snap, uint32(tableAt))
}

// itemTable returns the count rows of a format 8 body and where its index
// section ends; ok is false when they are not where the body's end says,
// or a row is out of the body's bounds (only a damaged snapshot that
// passed its checksum, or one this build did not write, has one). The
// rows are the body's own bytes where the machine is little-endian and
// they are aligned (the writer aligns them), else a copy.
func itemTable(body []byte, count int) (rows []core.ItemRow, indexEnd int, ok bool) {
	if len(body) < 8 || count > (len(body)-8)/rowSize {
		return nil, 0, false
	}
	end := len(body) - 8
	indexEnd = int(binary.LittleEndian.Uint32(body[end:]))
	at := int(binary.LittleEndian.Uint32(body[end+4:]))
	if at+rowSize*count != end || indexEnd > at {
		return nil, 0, false
	}
	b := body[at:end]
	if count == 0 {
		return []core.ItemRow{}, indexEnd, true
	}
	if rows, ok = inPlace[core.ItemRow](b, count); !ok {
		rows = make([]core.ItemRow, count)
		for i := range rows {
			r := b[rowSize*i:]
			rows[i] = core.ItemRow{KeyOff: binary.LittleEndian.Uint32(r), KeyEnd: binary.LittleEndian.Uint32(r[4:]),
				ValOff: binary.LittleEndian.Uint32(r[8:]), ValEnd: binary.LittleEndian.Uint32(r[12:])}
		}
	}
	if !rowsWithin(rows, uint32(indexEnd)) {
		return nil, 0, false
	}
	return rows, indexEnd, true
}

// rowsWithin reports whether each row's key and value lie in [0, limit),
// each after the one before.
func rowsWithin(rows []core.ItemRow, limit uint32) bool {
	last := uint32(0)
	for _, r := range rows {
		if r.KeyOff < last || r.KeyEnd < r.KeyOff || r.ValOff < r.KeyEnd || r.ValEnd < r.ValOff || r.ValEnd > limit {
			return false
		}
		last = r.ValEnd
	}
	return true
}

// snapshot is what a snapshot's header says, and the bytes after it.
type snapshot struct {
	format int    // 1 to 8
	seq    uint64 // the last frame it holds
	count  int    // formats 2 to 5: how many items body holds
	body   []byte // format 1: buntdb's file format; formats 2 to 6: the items (and, from format 4, the indexes)
}

// readSnapshot reads the header of snapshot b, in either format.
func readSnapshot(b []byte) (snapshot, error) {
	if len(b) > 0 && b[0] == '*' {
		// Saved before there was a log: all store, no frame held.
		return snapshot{format: 1, body: b}, nil
	}
	line, _, ok := strings.Cut(string(b[:min(len(b), 80)]), "\n")
	if !ok {
		return snapshot{}, fmt.Errorf("snapshot: %w: no header", errSnapshot)
	}
	body := b[len(line)+1:]
	if rest, ok := strings.CutPrefix(line, snapHeaderV1); ok {
		seq, err := strconv.ParseUint(rest, 10, 64)
		if err != nil {
			return snapshot{}, fmt.Errorf("snapshot header: %w", err)
		}
		return snapshot{format: 1, seq: seq, body: body}, nil
	}
	rest, ok := strings.CutPrefix(line, snapHeader)
	if !ok {
		rest, ok = strings.CutPrefix(line, snapHeaderV4)
	}
	if !ok {
		rest, ok = strings.CutPrefix(line, snapHeaderV5)
	}
	if !ok {
		rest, ok = strings.CutPrefix(line, snapHeaderV6)
	}
	if !ok {
		rest, ok = strings.CutPrefix(line, snapHeaderV7)
	}
	if !ok {
		rest, ok = strings.CutPrefix(line, snapHeaderV8)
	}
	if ok {
		// The checksum covers what comes before it in the line, and the
		// items.
		cut := len(line) - (snapSumLen - 1)
		want, err := strconv.ParseUint(line[max(cut, 0):], 10, 32)
		if err != nil || cut < len(snapHeader) || line[cut-1] != ' ' {
			return snapshot{}, fmt.Errorf("snapshot: %w: no checksum in its header", errSnapshot)
		}
		xxh := strings.HasPrefix(line, snapHeaderV6) || strings.HasPrefix(line, snapHeaderV7) || strings.HasPrefix(line, snapHeaderV8)
		if got := snapSum(xxh, b[:cut], body); got != uint32(want) {
			kind := "CRC-32C"
			if xxh {
				kind = "XXH64"
			}
			return snapshot{}, fmt.Errorf("%w: the snapshot fails its checksum (%d bytes; %s %010d, its header says %010d). "+
				"Nothing was loaded or changed. Keep a copy of the files and restore the store from a backup, or move it away "+
				"and sync it again (see docs/operations.md, \"A damaged persisted store\")", ErrDamaged, len(b), kind, got, want)
		}
		rest = rest[:cut-1-len(snapHeader)]
	} else if rest, ok = strings.CutPrefix(line, snapHeaderV2); !ok {
		return snapshot{}, fmt.Errorf("snapshot: %w: no header", errSnapshot)
	}
	seqText, countText, _ := strings.Cut(rest, " ")
	seq, err := strconv.ParseUint(seqText, 10, 64)
	if err != nil {
		return snapshot{}, fmt.Errorf("snapshot header: %w", err)
	}
	count, err := strconv.ParseUint(countText, 10, 64)
	if err != nil || count > uint64(len(body)/2) {
		return snapshot{}, fmt.Errorf("snapshot header: %w: bad item count %q", errSnapshot, countText)
	}
	format := 2
	switch {
	case strings.HasPrefix(line, snapHeader):
		format = 3
	case strings.HasPrefix(line, snapHeaderV4):
		format = 4
	case strings.HasPrefix(line, snapHeaderV5):
		format = 5
	case strings.HasPrefix(line, snapHeaderV6):
		format = 6
	case strings.HasPrefix(line, snapHeaderV7):
		format = 7
	case strings.HasPrefix(line, snapHeaderV8):
		format = 8
	}
	return snapshot{format: format, seq: seq, count: int(count), body: body}, nil
}

// readItems hands apply each of the count items encoded in b, every key
// and value a slice of b's bytes read in place (handedOver: so the items
// loaded share them), and returns where they end: the end of b, but in
// format 4.
func readItems(b []byte, count int, apply func(core.Change) error) (int, error) {
	text := handedOver(b)
	p := 0
	for i := range count {
		n, k := uvarint(b, p)
		if k <= 0 || n > uint64(len(b)-p-k) {
			return 0, fmt.Errorf("snapshot: %w: item %d of %d cut short", errSnapshot, i+1, count)
		}
		key := text[p+k : p+k+int(n)]
		p += k + int(n)
		n, k = uvarint(b, p)
		if k <= 0 || n > uint64(len(b)-p-k) {
			return 0, fmt.Errorf("snapshot: %w: item %d of %d cut short", errSnapshot, i+1, count)
		}
		value := text[p+k : p+k+int(n)]
		p += k + int(n)
		if err := apply(core.Change{Key: key, Value: value}); err != nil {
			return 0, err
		}
	}
	return p, nil
}
