package syncserver_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"

	"github.com/hilodb/hilodb/syncserver"
)

// FuzzHandle feeds random frames to the request handler, after a hello and
// before one, and checks that every reply is a well-formed reply: an object
// with an integer id and ok, and a stable error code and number when ok is
// false.
func FuzzHandle(f *testing.F) {
	for _, m := range hostileMessages(60) {
		f.Add([]byte(m))
	}
	for _, m := range []string{
		`{"id":2,"op":"hilo.next","tag":"orders","lastSize":0,"lastMax":0,"lastRangeAt":""}`,
		`{"id":3,"op":"hilo.return","tag":"orders","end":32,"last":5}`,
		`{"id":4,"op":"identity.next","name":"companies"}`,
		`{"id":5,"op":"identity.seed","name":"companies","value":1994,"force":false}`,
		`{"id":9,"op":"identity.nextBatch","names":["companies","companies","orders"]}`,
		`{"id":1,"op":"ping"}`,
	} {
		f.Add([]byte(m))
	}
	srv, err := syncserver.New(syncserver.Config{DataDir: f.TempDir(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), MaxBatch: 16})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { srv.Close(context.Background()) })
	hello := []byte(`{"id":1,"op":"hello","db":"fuzz","node":""}`)
	f.Fuzz(func(t *testing.T, frame []byte) {
		for _, frames := range [][][]byte{{frame}, {hello, frame}} {
			replies, _ := syncserver.HandleFrames(srv, frames...)
			if len(replies) != len(frames) {
				t.Fatalf("%d replies to %d frames", len(replies), len(frames))
			}
			for _, b := range replies {
				var r struct {
					ID    *int64 `json:"id"`
					OK    *bool  `json:"ok"`
					Error *struct {
						Code string `json:"code"`
						Num  int    `json:"num"`
					} `json:"error"`
				}
				if err := json.Unmarshal(b, &r); err != nil || r.ID == nil || r.OK == nil {
					t.Fatalf("malformed reply %s to %q", b, frame)
				}
				if !*r.OK && (r.Error == nil || r.Error.Code == "" || r.Error.Num == 0) {
					t.Fatalf("error reply without code and num: %s", b)
				}
			}
		}
	})
}
