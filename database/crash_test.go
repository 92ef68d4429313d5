//go:build !js

package database_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/hilodb/hilodb/core"
	"github.com/hilodb/hilodb/database"
)

// TestKilledProcessKeepsAcknowledgedWrites runs a writer in a child process,
// SIGKILLs it while it writes, reopens its directory and finds every write
// the child reported acknowledged.
func TestKilledProcessKeepsAcknowledgedWrites(t *testing.T) {
	if os.Getenv("HILODB_CRASH_WRITER") != "" {
		crashWriter(os.Getenv("HILODB_CRASH_WRITER"))
		return
	}
	for round := range 3 {
		dir := t.TempDir()
		cmd := exec.Command(os.Args[0], "-test.run=^TestKilledProcessKeepsAcknowledgedWrites$")
		cmd.Env = append(os.Environ(), "HILODB_CRASH_WRITER="+dir)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Killed once this many writes were acknowledged, so the kill lands
		// mid-write however busy the machine is.
		target := []int{300, 50, 800}[round]
		var acked []string
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if id, ok := strings.CutPrefix(sc.Text(), "acked "); ok {
				acked = append(acked, id)
			}
			if len(acked) == target {
				cmd.Process.Signal(syscall.SIGKILL)
				break
			}
		}
		for sc.Scan() {
			if id, ok := strings.CutPrefix(sc.Text(), "acked "); ok {
				acked = append(acked, id)
			}
		}
		cmd.Wait()
		if len(acked) < target {
			t.Fatalf("round %d: only %d writes acknowledged before the kill", round, len(acked))
		}
		st, _, _ := open(t, dir, database.JournalOptions{})
		for _, id := range acked {
			if _, err := st.Get(id); err != nil {
				t.Fatalf("round %d: acknowledged %s lost after SIGKILL (%d acknowledged)", round, id, len(acked))
			}
		}
		t.Logf("round %d: %d acknowledged writes, all there after SIGKILL", round, len(acked))
	}
}

// crashWriter writes forever from 4 goroutines, printing each write once
// acknowledged; it compacts often so kills land in compactions too.
func crashWriter(dir string) {
	st, _ := core.Open(":memory:", core.Options{Node: "T"})
	d, err := database.OpenDir(dir)
	if err != nil {
		panic(err)
	}
	if _, err := database.OpenJournal(d, st, database.JournalOptions{CompactAt: 16 << 10}); err != nil {
		panic(err)
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				id := fmt.Sprintf("orders/%d-%d", w, i)
				if _, err := st.Put(context.Background(), "orders", []byte(fmt.Sprintf(`{"_id":%q,"pad":%q}`, id, strings.Repeat("x", 200)))); err != nil {
					panic(err)
				}
				mu.Lock()
				fmt.Println("acked", id)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
}
