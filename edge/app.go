package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/hilodb/hilodb/client"
	"github.com/hilodb/hilodb/core"
	"github.com/hilodb/hilodb/idgen"
)

// config is what the worker needs to know about its sync server. In the
// worker it comes from the HILODB_URL, HILODB_DB and HILODB_TOKEN bindings.
type config struct {
	URL      string // websocket endpoint, e.g. ws://127.0.0.1:8080/v1/sync; several, comma-separated, for a cluster
	Database string // database name on the sync server
	Token    string // token for Database; empty on a loopback server without tokens
}

// defaultDatabase is used when no database is configured.
const defaultDatabase = "default"

// app is the worker's state in one isolate: the resident cache and the way
// to the sync server.
type app struct {
	store  *core.Store
	remote *remote // nil without a sync server URL
}

// openApp opens the resident in-memory store. With a sync server URL,
// documents stored without an id get HiLo ids leased from it, and it is the
// origin of the cache. Without one, every write and every cache miss fails
// with needs_server. enterTurn, if not nil, is called before each call to
// the sync server (see remote.enterTurn).
func openApp(cfg config, enterTurn func(context.Context) bool) (*app, error) {
	if cfg.Database == "" {
		cfg.Database = defaultDatabase
	}
	var (
		ids core.IDSource
		rem *remote
	)
	if cfg.URL != "" {
		// Further servers of a cluster follow the first, comma-separated:
		// the client moves to the next when one is unreachable or silent.
		urls := strings.Split(cfg.URL, ",")
		for i := range urls {
			urls[i] = strings.TrimSpace(urls[i])
		}
		rem = newRemote(urls[0], client.Options{Database: cfg.Database, Token: cfg.Token, URLs: urls[1:]})
		rem.enterTurn = enterTurn
		ids = idgen.NewGenerator(rem)
	}
	st, err := core.Open(":memory:", core.Options{IDs: ids})
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	if rem != nil {
		// Revisions carry the node tag the server gives this isolate on its
		// first hello.
		rem.setOnNode(st.Clock().SetNode)
	}
	return &app{store: st, remote: rem}, nil
}

// handler returns the HTTP API. Each request gets its own connection to
// the sync server, dialed when it first needs the server and closed before
// it answers.
func (a *app) handler() http.Handler {
	var o origin
	if a.remote != nil {
		o = a.remote
	}
	return a.remote.scope(newHandler(a.store, o))
}

// Close closes the store.
func (a *app) Close() error { return a.store.Close() }
