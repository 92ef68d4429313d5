package core

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/hilodb/hilodb/core/uuid"
)

// BatchItem is one write of SaveBatch: a session's new, changed or deleted
// entity, from a caller that tracks entities itself (the npm package's
// session, package core/session).
type BatchItem struct {
	// Delete removes the document ID (of any collection; a missing one is
	// not an error unless IfRev is set).
	Delete bool
	// ID is the document's id: as given, or "" for a UUID, "prefix/" for
	// this node's sequence, "prefix|" for an identity from the server.
	ID string
	// Collection and Body are the document to store (Body a JSON object).
	Collection string
	Body       []byte
	// Loaded says the item writes back a document as it was loaded: its
	// Collection is the stored one, taken as it is, even "" (a document
	// replicated here without @metadata.@collection).
	Loaded bool
	// TypeName, if set, is stored as @metadata.Raven-Node-Type.
	TypeName string
	// IfRev is a precondition on the stored _rev; MustBeNew requires that
	// no document has the id (optimistic concurrency).
	IfRev     string
	MustBeNew bool
}

// SaveBatch writes items in one transaction, as a session's SaveChanges
// does: ids ending in "|" are allocated first, in one call; if that fails,
// or any write fails, nothing is saved and the error is the first failure.
// It returns one result per item, in order.
func (s *Store) SaveBatch(ctx context.Context, items []BatchItem) ([]Result, error) {
	ws := make([]*write, len(items))
	for i, it := range items {
		if it.Delete {
			w := &write{kind: opRemove, id: it.ID, anyColl: true, missingOK: it.IfRev == ""}
			w.ifRev = it.IfRev
			ws[i] = w
			continue
		}
		if !it.Loaded {
			if err := validateCollection(it.Collection); err != nil {
				return nil, err
			}
		}
		w := &write{kind: opInsert, coll: it.Collection, body: it.Body, opts: &WriteOptions{OverwriteMode: OverwriteReplace}}
		if it.TypeName != "" {
			w.meta = map[string]json.RawMessage{MetadataNodeType: quoteJSON(it.TypeName)}
		}
		switch {
		case it.ID == "":
			w.id = uuid.New()
		case strings.HasSuffix(it.ID, "|"):
			name := identityName(it.ID, s.sep)
			if e := s.checkPrefix(name); e != nil {
				return nil, e
			}
			w.identity = name
		case strings.HasSuffix(it.ID, s.sep):
			if e := s.checkPrefix(it.ID[:len(it.ID)-len(s.sep)]); e != nil {
				return nil, e
			}
			w.seqPrefix = it.ID
		default:
			w.id = it.ID
		}
		if it.MustBeNew {
			w.mustBeNew = true
		} else if it.IfRev != "" {
			w.kind, w.ifRev = opReplace, it.IfRev
		}
		ws[i] = w
	}
	rs, err := s.run(ctx, ws, true)
	if err != nil {
		return nil, fmt.Errorf("save batch: %w", err)
	}
	return rs, nil
}
