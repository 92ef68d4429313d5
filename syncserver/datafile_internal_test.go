package syncserver

import (
	"bytes"
	"testing"
)

// FuzzScanLog checks the data-file reader: it never panics, and any prefix
// of a sound log (what a crash mid-write leaves) reads as sound or torn,
// never as damaged, with every whole record before the cut kept.
func FuzzScanLog(f *testing.F) {
	var sound bytes.Buffer
	writeLog(&sound, map[string]string{
		"db/shop":              "2026-11-21T11:36:46Z",
		"hilo/shop/orders":     `{"Max":96,"Low":33}`,
		"ident/shop/companies": "1994",
		"meta/nodeseq":         "3",
		"node/B":               "2026-11-21T11:36:46Z",
	})
	sound.WriteString("*2\r\n$3\r\ndel\r\n$6\r\nnode/B\r\n")
	f.Add(sound.Bytes(), uint(0))
	f.Add(sound.Bytes(), uint(57))
	f.Add([]byte("*3\r\n$3\r\nset\r\n$1\r\na\r\n$1\r\nb\r\n\x00\x00"), uint(9))
	f.Add([]byte("*9999999999999\r\n"), uint(3))
	f.Fuzz(func(t *testing.T, data []byte, cut uint) {
		res := scanLog(data) // must not panic
		if res.validEnd > int64(len(data)) {
			t.Fatalf("validEnd %d past %d bytes", res.validEnd, len(data))
		}
		full := scanLog(sound.Bytes())
		if full.torn || full.corrupt || len(full.records) != 6 {
			t.Fatalf("sound log: %+v", full)
		}
		n := int(cut % uint(sound.Len()+1))
		part := scanLog(sound.Bytes()[:n])
		if part.corrupt {
			t.Fatalf("prefix of %d bytes reads as damaged", n)
		}
		kept := 0
		for _, r := range full.records {
			if _, l, err := parseRecord(sound.Bytes()[r.off:]); err == nil && r.off+int64(l) <= int64(n) {
				kept++
			}
		}
		if len(part.records) != kept {
			t.Fatalf("prefix of %d bytes: %d records, want %d", n, len(part.records), kept)
		}
	})
}
