//go:build !js

package database_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/hilodb/hilodb/core"
	"github.com/hilodb/hilodb/database"
)

// TestIndexesAfterKill: a child process defines indexes and writes,
// replaces and removes documents of the collection until it is SIGKILLed;
// the reopened store has the indexes, and every answer through them equals
// a scan's, whatever the kill cut short.
func TestIndexesAfterKill(t *testing.T) {
	if os.Getenv("HILODB_INDEX_WRITER") != "" {
		indexWriter(os.Getenv("HILODB_INDEX_WRITER"))
		return
	}
	for round := range 2 {
		dir := t.TempDir()
		cmd := exec.Command(os.Args[0], "-test.run=^TestIndexesAfterKill$")
		cmd.Env = append(os.Environ(), "HILODB_INDEX_WRITER="+dir)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		target := []int{400, 1500}[round]
		n := 0
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "acked ") {
				n++
			}
			if n == target {
				cmd.Process.Signal(syscall.SIGKILL)
				break
			}
		}
		for sc.Scan() {
		}
		cmd.Wait()
		if n < target {
			t.Fatalf("round %d: only %d writes acknowledged before the kill", round, n)
		}
		st, _, _ := open(t, dir, database.JournalOptions{})
		defs, err := st.Indexes("orders")
		if err != nil || len(defs) != 2 {
			t.Fatalf("round %d: indexes after reopen: %+v %v", round, defs, err)
		}
		for _, q := range []string{
			`{"selector":{"status":"open"},"sort":[{"total":"desc"}]}`,
			`{"selector":{"total":{"$gte":10,"$lt":60}}}`,
			`{"selector":{"status":"void","total":{"$gt":90}}}`,
		} {
			res, err := st.FindJSON("orders", []byte(q))
			if err != nil {
				t.Fatal(err)
			}
			if res.Plan.Index == "" {
				t.Fatalf("%s ran without an index: %+v", q, res.Plan)
			}
			pq, _ := core.ParseQuery([]byte(q))
			var want []string
			for after := ""; ; {
				p, err := st.List("orders", after, core.MaxListLimit)
				if err != nil {
					t.Fatal(err)
				}
				for _, d := range p.Docs {
					if pq.Selector.Match(d) {
						want = append(want, string(d))
					}
				}
				if after = p.Next; after == "" {
					break
				}
			}
			var got []string
			for _, d := range res.Docs {
				got = append(got, string(d))
			}
			sort.Strings(got)
			sort.Strings(want)
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Fatalf("round %d, %s: through %s %d documents, a scan finds %d", round, q, res.Plan.Index, len(got), len(want))
			}
		}
	}
}

func indexWriter(dir string) {
	ctx := context.Background()
	st, _ := core.Open(":memory:", core.Options{Node: "T"})
	d, err := database.OpenDir(dir)
	if err != nil {
		panic(err)
	}
	if _, err := database.OpenJournal(d, st, database.JournalOptions{CompactAt: 32 << 10}); err != nil {
		panic(err)
	}
	for _, f := range [][]string{{"status", "total"}, {"total"}} {
		if _, _, err := st.CreateIndex(ctx, "orders", core.IndexDef{Fields: f}); err != nil {
			panic(err)
		}
	}
	for i := 0; ; i++ {
		id := fmt.Sprintf("orders/%d", i%300)
		status := []string{"open", "closed", "void"}[i%3]
		var err error
		if i%7 == 3 {
			_, err = st.Remove(ctx, "orders", fmt.Sprint(i%300), nil)
			if err != nil && strings.Contains(err.Error(), "not found") {
				err = nil
			}
		} else {
			_, err = st.Put(ctx, "orders", []byte(fmt.Sprintf(`{"_id":%q,"status":%q,"total":%d}`, id, status, (i*37)%100)))
		}
		if err != nil {
			panic(err)
		}
		fmt.Println("acked", id)
	}
}
