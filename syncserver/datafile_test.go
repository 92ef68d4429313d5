package syncserver_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hilodb/hilodb/syncserver"
	"github.com/hilodb/hilodb/syncserver/storage"
)

// fillStore runs a server on dir, hands out numbers and stops it; it
// returns the highest HiLo number and identity handed out.
func fillStore(t *testing.T, dir string) (hiloMax, ident float64) {
	t.Helper()
	ts := startServer(t, syncserver.Config{DataDir: dir})
	r := dialRaw(t, ts)
	r.call(`{"id":1,"op":"hello","db":"shop","node":""}`)
	for i := range 20 {
		got := r.call(`{"id":2,"op":"hilo.next","tag":"orders","lastSize":0,"lastMax":0,"lastRangeAt":""}`)
		hiloMax = got["high"].(float64)
		v := r.call(`{"id":3,"op":"identity.next","name":"companies"}`)
		ident = v["value"].(float64)
		if i == 10 {
			r.call(`{"id":4,"op":"identity.next","name":"lonely"}`)
		}
	}
	ts.stop()
	return hiloMax, ident
}

func openErr(dir string) error {
	s, err := syncserver.New(syncserver.Config{DataDir: dir, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err == nil {
		s.Close(context.Background())
	}
	return err
}

// nextNumbers starts a server on dir and returns the next HiLo low and the
// next identity.
func nextNumbers(t *testing.T, dir string) (low, ident float64) {
	t.Helper()
	ts := startServer(t, syncserver.Config{DataDir: dir})
	r := dialRaw(t, ts)
	r.call(`{"id":1,"op":"hello","db":"shop","node":""}`)
	low = r.call(`{"id":2,"op":"hilo.next","tag":"orders","lastSize":0,"lastMax":0,"lastRangeAt":""}`)["low"].(float64)
	ident = r.call(`{"id":3,"op":"identity.next","name":"companies"}`)["value"].(float64)
	ts.stop()
	return low, ident
}

func TestTornTailIsCutAndNothingReused(t *testing.T) {
	for name, tail := range map[string]string{
		"mid value":    "*3\r\n$3\r\nset\r\n$16\r\nident/shop/compa",
		"mid header":   "*3\r\n$3\r\nse",
		"zero padding": "*3\r\n$3\r\nset\r\n$16\r\nident/shop/co" + strings.Repeat("\x00", 4096),
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			hiloMax, ident := fillStore(t, dir)
			path := filepath.Join(dir, "hilodb.db")
			appendFile(t, path, tail)
			low, next := nextNumbers(t, dir)
			if low != hiloMax+1 || next != ident+1 {
				t.Errorf("after torn tail: low %v ident %v, want %v and %v", low, next, hiloMax+1, ident+1)
			}
		})
	}
}

func appendFile(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

func TestCorruptFileRefusedThenRepaired(t *testing.T) {
	for name, damage := range map[string]func(b []byte) []byte{
		"flipped byte in the middle": func(b []byte) []byte {
			i := bytes.Index(b, []byte("ident/shop/lonely"))
			b[i-3] = 'X' // inside the length line of that key
			return b
		},
		"garbage appended after whole records": func(b []byte) []byte {
			return append(b, "*3\r\n$3\r\nset\r\n$1\r\nab\r\n$1\r\n1\r\n"...)
		},
		"length that runs past the end with CRLF inside": func(b []byte) []byte {
			i := bytes.LastIndex(b, []byte("$"))
			return append(b[:i], append([]byte("$999"), b[i+2:]...)...)
		},
		"zeroed block in the middle": func(b []byte) []byte {
			mid := len(b) / 2
			copy(b[mid:], make([]byte, 40))
			return b
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			hiloMax, ident := fillStore(t, dir)
			path := filepath.Join(dir, "hilodb.db")
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, damage(b), 0o640); err != nil {
				t.Fatal(err)
			}
			err = openErr(dir)
			var ce *storage.CorruptError
			if !errors.As(err, &ce) || ce.Path != path {
				t.Fatalf("open damaged file: %v, want a CorruptError naming %s", err, path)
			}
			if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "hilodb-server repair") {
				t.Errorf("error %q should name the file and the repair command", err)
			}
			rep, err := storage.Repair(dir, 1000)
			if err != nil {
				t.Fatal(err)
			}
			if !rep.Damaged || rep.Raised == 0 || rep.Kept == "" || rep.BytesDropped == 0 {
				t.Errorf("report %+v", rep)
			}
			if _, err := os.Stat(rep.Kept); err != nil {
				t.Errorf("damaged file not kept: %v", err)
			}
			t.Log(rep)
			low, next := nextNumbers(t, dir)
			if low <= hiloMax || next <= ident {
				t.Errorf("after repair: low %v ident %v, want above %v and %v", low, next, hiloMax, ident)
			}
			// Repairing a sound file changes nothing.
			rep, err = storage.Repair(dir, 1000)
			if err != nil || rep.Damaged || rep.Torn {
				t.Errorf("second repair: %+v %v", rep, err)
			}
		})
	}
}

// TestRepairRaisesKeysOnlyInDamage checks that an identity whose only record
// lies in the damaged bytes is still raised, not restarted at 1.
func TestRepairRaisesKeysOnlyInDamage(t *testing.T) {
	dir := t.TempDir()
	fillStore(t, dir)
	path := filepath.Join(dir, "hilodb.db")
	b, _ := os.ReadFile(path)
	i := bytes.Index(b, []byte("ident/shop/lonely"))
	// Break the length line of the value right after the key.
	copy(b[i+len("ident/shop/lonely"):], "\r\n$X")
	os.WriteFile(path, b, 0o640)
	if _, err := storage.Repair(dir, 500); err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, syncserver.Config{DataDir: dir})
	r := dialRaw(t, ts)
	r.call(`{"id":1,"op":"hello","db":"shop","node":""}`)
	if got := r.call(`{"id":2,"op":"identity.next","name":"lonely"}`); got["value"].(float64) <= 500 {
		t.Errorf("lonely after repair: %v, want above 500", got)
	}
}
