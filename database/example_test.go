//go:build !js

package database_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"

	"github.com/hilodb/hilodb/database"
	"github.com/hilodb/hilodb/syncserver"
	"github.com/tidwall/gjson"
)

// Example opens a persisted offline-first store against a sync server,
// writes a document with a HiLo id, and pushes it.
func Example() {
	// A sync server on 127.0.0.1, for the example.
	dataDir, _ := os.MkdirTemp("", "hilodb-example-server")
	defer os.RemoveAll(dataDir)
	srv, _ := syncserver.New(syncserver.Config{DataDir: dataDir, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	hs := &http.Server{Handler: srv}
	go hs.Serve(ln)
	defer func() { hs.Close(); srv.Close(context.Background()) }()

	storeDir, _ := os.MkdirTemp("", "hilodb-example-store")
	defer os.RemoveAll(storeDir)
	dir, err := database.OpenDir(storeDir) // documents, log, node tag, HiLo ranges
	if err != nil {
		fmt.Println(err)
		return
	}
	defer dir.Close()
	ctx := context.Background()
	db, err := database.Open(ctx, database.Config{
		URL:      "ws://" + ln.Addr().String() + "/v1/sync",
		Database: "shop",
		Storage:  dir,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer db.Close()

	doc, err := db.Store().Put(ctx, "orders", []byte(`{"item":"apple","qty":3}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(gjson.GetBytes(doc, "_id")) // durable on disk when Put returns
	pushed, _, err := db.Sync(ctx)
	fmt.Println(pushed, err)
	// Output:
	// orders/1-A
	// 1 <nil>
}
