package syncserver

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"unsafe"

	"github.com/hilodb/hilodb/syncserver/storage"
)

// What a push stores holds none of the push message's bytes: the decoder
// reads the message in place, and a stored string that pointed into it
// would keep the whole message alive with the record.
func TestPushStoresNoBytesOfTheMessage(t *testing.T) {
	s, err := New(Config{DataDir: t.TempDir(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	frame := []byte(`{"id":2,"op":"push","changes":[{"id":"orders/1-A","baseRev":"","rev":"_mAAAAAAA-BT","doc":{"total":1}}]}`)
	replies, _ := HandleFrames(s, []byte(`{"id":1,"op":"hello","db":"shop","node":""}`), frame)
	if len(replies) != 2 || !strings.Contains(string(replies[1]), `"ok":true`) {
		t.Fatalf("replies: %q", replies)
	}
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(frame)))
	hi := lo + uintptr(len(frame))
	err = s.store.View(func(tx storage.Tx) error {
		return tx.AscendRange("", "r", "s", func(k, v string) bool {
			for _, str := range []string{k, v} {
				if p := uintptr(unsafe.Pointer(unsafe.StringData(str))); len(str) > 0 && p >= lo && p < hi {
					t.Errorf("stored %q = %q points into the push message", k, v)
				}
			}
			return true
		})
	})
	if err != nil {
		t.Fatal(err)
	}
}
