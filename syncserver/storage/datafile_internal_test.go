package storage

import (
	"bytes"
	"io"
	"log/slog"
	"os"
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
		if full.torn || full.corrupt || len(full.records) != 7 || !full.marked {
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

// TestUnfinishedCommitDropped: whole records after the last commit mark are
// the part of a commit that reached the disk before a crash; they are cut
// off, so no half transaction is applied.
func TestUnfinishedCommitDropped(t *testing.T) {
	dir := t.TempDir()
	path := dir + "/" + dataFileName
	var log bytes.Buffer
	writeLog(&log, map[string]string{"rctr/shop": "5", "rdoc/shop/a": `{"rev":"r1","seq":5}`, commitKey: "7"})
	committed := log.Len()
	// Half of the next commit: the document, not yet its counter nor a mark.
	log.WriteString("*3\r\n$3\r\nset\r\n$11\r\nrdoc/shop/b\r\n$20\r\n{\"rev\":\"r1\",\"seq\":6}\r\n")
	if err := os.WriteFile(path, log.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := prepareDataFile(path, slog.New(slog.NewTextHandler(io.Discard, nil))); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	if len(got) != committed {
		t.Fatalf("file is %d bytes after the check, want %d (cut at the last commit mark)", len(got), committed)
	}
	// A file without marks (written before they existed) keeps its records.
	unmarked := "*3\r\n$3\r\nset\r\n$1\r\na\r\n$1\r\nb\r\n"
	os.WriteFile(path, []byte(unmarked), 0o600)
	if err := prepareDataFile(path, slog.New(slog.NewTextHandler(io.Discard, nil))); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(path); len(got) != len(unmarked) {
		t.Fatalf("unmarked file changed to %d bytes", len(got))
	}
}

// TestRestoreRaisesEveryCounter: a restored backup raises every kind of
// counter by the bump, the server's own node-sequence counter ("prefix/"
// ids) included, and moves purgedSeq with the change sequence.
func TestRestoreRaisesEveryCounter(t *testing.T) {
	var b bytes.Buffer
	writeLog(&b, map[string]string{
		"hilo/shop/orders":     `{"Max":96,"Low":33}`,
		"ident/shop/companies": "1994",
		"meta/nodeseq":         "3",
		"rctr/shop":            "40",
		"srvseq/shop":          "5",
		"rdoc/shop/a":          `{"rev":"1-a","seq":40,"doc":{}}`,
	})
	dir := t.TempDir()
	backup := dir + "/backup.db"
	if err := os.WriteFile(backup, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Restore(backup, dir+"/data", 100, false); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(dir + "/data/" + dataFileName)
	if err != nil {
		t.Fatal(err)
	}
	st := replay(scanLog(got).records)
	for _, c := range []struct{ key, want string }{
		{"hilo/shop/orders", `{"Max":196}`},
		{"ident/shop/companies", "2094"},
		{"meta/nodeseq", "103"},
		{"rctr/shop", "140"},
		{"rpurged/shop", "140"},
		{"srvseq/shop", "105"},
		{"rdoc/shop/a", `{"rev":"1-a","seq":40,"doc":{}}`},
	} {
		if st.values[c.key] != c.want {
			t.Errorf("%s after restore: %q, want %q", c.key, st.values[c.key], c.want)
		}
	}
}
