package database

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hilodb/hilodb/core"
)

// TestOlderSnapshotFormatsRead: a snapshot of format 4, whose index
// entries name no items, one of format 5, checked by CRC-32C, one of
// format 6, checked by XXH64, each entry encoded as uvarints, and one of
// format 7, with no table of its items, still open with their indexes
// built; the documents format 4's entries do not hold are looked up, the
// others' are not, and answers equal a scan's.
func TestOlderSnapshotFormatsRead(t *testing.T) {
	for _, c := range []struct {
		format  int
		fetched int
	}{{4, 10}, {5, 0}, {6, 0}, {7, 0}} {
		t.Run(fmt.Sprint("format ", c.format), func(t *testing.T) { olderFormatReads(t, c.format, c.fetched) })
	}
}

func olderFormatReads(t *testing.T, format, fetched int) {
	ctx := context.Background()
	dir := t.TempDir()
	openStore := func() (*core.Store, *Journal, *Dir) {
		st, err := core.Open(":memory:", core.Options{Node: "T"})
		if err != nil {
			t.Fatal(err)
		}
		d, err := OpenDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		j, err := OpenJournal(d, st, JournalOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return st, j, d
	}
	st, j, d := openStore()
	if _, _, err := st.CreateIndex(ctx, "orders", core.IndexDef{Fields: []string{"total"}}); err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		if _, err := st.Put(ctx, "orders", []byte(fmt.Sprintf(`{"_id":"orders/%d","total":%d}`, i, i%10))); err != nil {
			t.Fatal(err)
		}
	}
	if err := j.Compact(); err != nil {
		t.Fatal(err)
	}
	st.Close()
	d.Close()

	// The snapshot written again as format 4 (the same items, the entries
	// without their item numbers), 5 (with them, checked by CRC-32C), 6
	// (checked by XXH64) or 7 (each index's entries a table; no table of
	// the items).
	path := filepath.Join(dir, "snapshot")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sn, err := readSnapshot(raw)
	if err != nil || sn.format != 8 {
		t.Fatalf("snapshot format %d (%v), want 8", sn.format, err)
	}
	end, err := readItems(sn.body, sn.count, func(core.Change) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	_, indexEnd, ok := itemTable(sn.body, sn.count)
	if !ok {
		t.Fatal("no table")
	}
	section := sn.body[end:indexEnd]
	if format < 7 {
		section = asFormat(t, section, format)
	}
	body := append(append([]byte(nil), sn.body[:end]...), section...)
	head := fmt.Appendf([]byte(map[int]string{4: snapHeaderV4, 5: snapHeaderV5, 6: snapHeaderV6, 7: snapHeaderV7}[format]), "%020d %020d ", sn.seq, sn.count)
	old := append(fmt.Appendf(head, "%010d\n", snapSum(format >= 6, head, body)), body...)
	if err := os.WriteFile(path, old, 0o600); err != nil {
		t.Fatal(err)
	}

	st2, _, d2 := openStore()
	defer d2.Close()
	defer st2.Close()
	res, err := st2.FindJSON("orders", []byte(`{"selector":{"total":{"$gte":3,"$lt":5}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if res.Plan.Index != "idx-total" || res.Plan.Built || res.Plan.Fetched != fetched || len(res.Docs) != 10 {
		t.Fatalf("plan %+v, %d documents: want idx-total restored, %d documents looked up", res.Plan, len(res.Docs), fetched)
	}
	for _, doc := range res.Docs {
		if s := string(doc); !strings.Contains(s, `"total":3`) && !strings.Contains(s, `"total":4`) {
			t.Fatalf("document %s does not match", s)
		}
	}
}
