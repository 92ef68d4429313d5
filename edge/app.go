package main

import (
	"context"
	"fmt"

	"github.com/hilodb/hilodb/client"
	"github.com/hilodb/hilodb/core"
	"github.com/hilodb/hilodb/idgen"
)

// config is what the worker needs to know about its sync server. In the
// worker it comes from the HILODB_URL, HILODB_DB and HILODB_TOKEN bindings.
type config struct {
	URL      string // websocket endpoint, e.g. ws://127.0.0.1:8080/v1/sync
	Database string // database name on the sync server
	Token    string // token for Database; empty on a loopback server without tokens
}

// defaultDatabase is used when no database is configured.
const defaultDatabase = "default"

// openStore opens the resident in-memory store. With a sync server URL,
// documents stored without an id get HiLo ids leased from it; without one,
// such a put fails with core.ErrNeedsServer. enterTurn, if not nil, is the
// leaser's enterTurn.
func openStore(cfg config, enterTurn func(context.Context) bool) (*core.Store, error) {
	if cfg.Database == "" {
		cfg.Database = defaultDatabase
	}
	var (
		ids core.IDSource
		l   *leaser
	)
	if cfg.URL != "" {
		l = newLeaser(cfg.URL, client.Options{Database: cfg.Database, Token: cfg.Token})
		l.enterTurn = enterTurn
		ids = idgen.NewGenerator(l)
	}
	st, err := core.Open(":memory:", core.Options{IDs: ids})
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	if l != nil {
		// Revisions carry the node tag the server gives this isolate on its
		// first lease.
		l.setOnNode(st.Clock().SetNode)
	}
	return st, nil
}
