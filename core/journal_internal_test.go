package core

import (
	"bufio"
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// TestWriteSetCommand holds a snapshot's set commands to buntdb's file
// format, byte for byte.
func TestWriteSetCommand(t *testing.T) {
	for _, kv := range [][2]string{{"doc/orders/1-A", `{"a":1}`}, {"", ""}, {"k", strings.Repeat("v", 100000)}} {
		var got bytes.Buffer
		w := bufio.NewWriter(&got)
		if err := writeSetCommand(w, kv[0], kv[1]); err != nil {
			t.Fatal(err)
		}
		w.Flush()
		want := fmt.Sprintf("*3\r\n$3\r\nset\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n", len(kv[0]), kv[0], len(kv[1]), kv[1])
		if got.String() != want {
			t.Errorf("writeSetCommand(%q, %d bytes) = %q, want %q", kv[0], len(kv[1]), got.String()[:min(got.Len(), 80)], want[:min(len(want), 80)])
		}
	}
}
