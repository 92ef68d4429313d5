package ravendoor

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/hilodb/hilodb/core/uuid"
	"github.com/hilodb/hilodb/errcode"
	"github.com/hilodb/hilodb/syncserver"
)

// RavenDB's document routes: bulk_docs batches (PUT and DELETE, server-side
// ids, change vectors as preconditions) and GET/PUT/DELETE /docs, with
// includes; documents keep the @metadata the client sends.

// ravenCommand is one command of a bulk_docs batch.
type ravenCommand struct {
	ID           *string         `json:"Id"`
	ChangeVector *string         `json:"ChangeVector"`
	Type         string          `json:"Type"`
	Document     json.RawMessage `json:"Document"`
}

func (s *door) ravenBatch(w http.ResponseWriter, r *syncserver.Request) {
	var req struct {
		Commands        []ravenCommand `json:"Commands"`
		TransactionMode string         `json:"TransactionMode"`
	}
	// The size first, counted on the text before anything is decoded: no
	// work, and no number used, for a batch that will be refused.
	if err := s.CheckBatch(int(gjson.GetBytes(r.Data, "Commands.#").Int())); err != nil {
		s.ravenFail(w, err)
		return
	}
	if err := json.Unmarshal(r.Data, &req); err != nil {
		s.ravenFail(w, syncserver.BadRequest("bulk_docs: malformed body: %v", err))
		return
	}
	if req.TransactionMode != "" && req.TransactionMode != "SingleNode" {
		s.ravenFail(w, syncserver.BadRequest("bulk_docs: TransactionMode %s is not served (cluster-wide transactions are not; SingleNode is)", syncserver.Quote(syncserver.Truncate(req.TransactionMode, 40))))
		return
	}
	if err := onlyParams(r.Request, "bulk_docs"); err != nil {
		s.ravenFail(w, err)
		return
	}
	if hilo, ok, err := ravenHiloWrites(req.Commands); err != nil || ok {
		if err != nil {
			s.ravenFail(w, err)
		} else {
			s.ravenHiloBatch(w, r, hilo)
		}
		return
	}
	if len(req.Commands) == 0 {
		syncserver.WriteJSON(w, http.StatusCreated, map[string]any{"Results": []any{}})
		return
	}
	// The size first: nothing is looked at, no number used, for a batch
	// that will be refused.
	if err := s.CheckBatch(len(req.Commands)); err != nil {
		s.ravenFail(w, err)
		return
	}
	ws := make([]syncserver.DocWrite, len(req.Commands))
	for i, c := range req.Commands {
		id := ""
		if c.ID != nil {
			id = *c.ID
		}
		switch c.Type {
		case "PUT":
			if len(c.Document) == 0 || c.Document[0] != '{' {
				s.ravenFail(w, syncserver.BadRequest("bulk_docs: command %d: PUT needs a Document object", i))
				return
			}
			wr, err := ravenPutWrite(id, c.ChangeVector, c.Document)
			if err != nil {
				s.ravenFail(w, err)
				return
			}
			ws[i] = wr
		case "DELETE":
			ws[i] = syncserver.DocWrite{ID: id, Make: ravenDelete(id, c.ChangeVector)}
		default:
			s.ravenFail(w, syncserver.BadRequest("bulk_docs: command %d: type %s is not served (PUT and DELETE are)", i, syncserver.Quote(syncserver.Truncate(c.Type, 40))))
			return
		}
	}
	res, err := s.WriteDocs(r.Context(), r.DB, ws, true)
	if err != nil {
		s.ravenFail(w, err)
		return
	}
	for _, x := range res {
		if x.Err != nil {
			s.ravenFail(w, x.Err)
			return
		}
	}
	out := make([]map[string]any, len(res))
	for i, x := range res {
		if req.Commands[i].Type == "DELETE" {
			out[i] = map[string]any{"Type": "DELETE", "Id": x.ID, "Deleted": x.Deleted}
			continue
		}
		m := map[string]any{"Type": "PUT", "@id": x.ID, "@change-vector": x.Rev, "@last-modified": time.Now().UTC().Format(time.RFC3339Nano)}
		if c := metadataField(x.New, "@collection"); c != "" {
			m["@collection"] = c
		}
		out[i] = m
	}
	syncserver.WriteJSON(w, http.StatusCreated, map[string]any{"Results": out})
}

// ravenPutWrite is a PUT of doc as id; an id the server makes ("" → a
// UUID, "prefix|" and "prefix/", see mint.go) is made in the write.
func ravenPutWrite(id string, cv *string, doc json.RawMessage) (syncserver.DocWrite, error) {
	if id == "" {
		id = uuid.New()
	}
	mint, err := syncserver.Mintable(id)
	if err != nil {
		return syncserver.DocWrite{}, err
	}
	if mint {
		return syncserver.DocWrite{ID: id, Mint: id, Build: func(full string) func(*syncserver.StoredDoc) (json.RawMessage, bool, error) {
			return ravenPut(full, cv, doc)
		}}, nil
	}
	return syncserver.DocWrite{ID: id, Make: ravenPut(id, cv, doc)}, nil
}

// ravenPut makes a PUT of doc as id: a non-null change vector is a
// precondition ("" = the document must not exist).
func ravenPut(id string, cv *string, doc json.RawMessage) func(*syncserver.StoredDoc) (json.RawMessage, bool, error) {
	return func(cur *syncserver.StoredDoc) (json.RawMessage, bool, error) {
		if err := ravenPrecondition(id, cv, cur); err != nil {
			return nil, false, err
		}
		return ravenStored(id, doc)
	}
}

// ravenDelete deletes a document; as in RavenDB, deleting one that does not
// exist is no error (the result says Deleted: false) unless a change vector
// expected it.
func ravenDelete(id string, cv *string) func(*syncserver.StoredDoc) (json.RawMessage, bool, error) {
	return func(cur *syncserver.StoredDoc) (json.RawMessage, bool, error) {
		if cur == nil {
			if cv != nil && *cv != "" {
				return nil, false, &syncserver.DocError{Code: errcode.Conflict, Msg: "conflict: the document does not exist"}
			}
			return nil, false, nil // nothing to delete
		}
		if err := ravenPrecondition(id, cv, cur); err != nil {
			return nil, false, err
		}
		return nil, true, nil
	}
}

func ravenPrecondition(id string, cv *string, cur *syncserver.StoredDoc) error {
	switch {
	case cv == nil:
		return nil
	case *cv == "" && cur != nil:
		return &syncserver.DocError{Code: errcode.Conflict, Msg: "conflict: document " + syncserver.Quote(id) + " exists, and the write expected none", Rev: cur.Rev}
	case *cv != "" && cur == nil:
		return &syncserver.DocError{Code: errcode.Conflict, Msg: "conflict: document " + syncserver.Quote(id) + " does not exist; expected change vector " + syncserver.Quote(*cv)}
	case *cv != "" && cur.Rev != *cv:
		return &syncserver.DocError{Code: errcode.Conflict, Msg: "conflict: document " + syncserver.Quote(id) + " has change vector " + syncserver.Quote(cur.Rev) + ", the write expected " + syncserver.Quote(*cv), Rev: cur.Rev}
	}
	return nil
}

// ravenStored turns a RavenDB document into the stored form: its members,
// _key from the id, and @metadata without the members the server makes.
func ravenStored(id string, doc json.RawMessage) (json.RawMessage, bool, error) {
	if name, ok := syncserver.RepeatedMember(doc); ok {
		return nil, false, &syncserver.DocError{Code: errcode.BadDocument, Msg: "document has the member " + syncserver.Quote(syncserver.Truncate(name, 100)) + " more than once"}
	}
	var m map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		return nil, false, &syncserver.DocError{Code: errcode.BadDocument, Msg: "document must be a JSON object: " + err.Error()}
	}
	if meta, ok := m["@metadata"]; ok {
		var md map[string]json.RawMessage
		if err := json.Unmarshal(meta, &md); err == nil {
			for _, k := range []string{"@id", "@change-vector", "@last-modified", "@flags"} {
				delete(md, k)
			}
			m["@metadata"], _ = json.Marshal(md)
		}
	}
	delete(m, "_id")
	delete(m, "_rev")
	m["_key"], _ = json.Marshal(syncserver.IDKey(id))
	b, err := json.Marshal(m)
	return b, false, err
}

// ravenDoc renders a stored document for RavenDB's clients: _id, _key and
// _rev move into @metadata as @id and @change-vector. With metaOnly, only
// @metadata is left.
func ravenDoc(id string, d *syncserver.StoredDoc, metaOnly bool) json.RawMessage {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(d.Doc, &m); err != nil {
		return nil
	}
	md := map[string]json.RawMessage{}
	if meta, ok := m["@metadata"]; ok {
		_ = json.Unmarshal(meta, &md)
	}
	delete(m, "_id")
	delete(m, "_key")
	delete(m, "_rev")
	md["@id"], _ = json.Marshal(id)
	md["@change-vector"], _ = json.Marshal(d.Rev)
	if metaOnly {
		m = map[string]json.RawMessage{}
	}
	m["@metadata"], _ = json.Marshal(md)
	b, _ := json.Marshal(m)
	return b
}

// metadataField reads a string member of a stored document's @metadata.
func metadataField(doc json.RawMessage, name string) string {
	var m struct {
		Meta map[string]any `json:"@metadata"`
	}
	if json.Unmarshal(doc, &m) != nil {
		return ""
	}
	v, _ := m.Meta[name].(string)
	return v
}

func (s *door) ravenGetDocs(w http.ResponseWriter, r *syncserver.Request) {
	if r.URL.Query().Has("startsWith") {
		s.ravenStartsWith(w, r)
		return
	}
	if err := onlyParams(r.Request, "docs", "id", "include", "metadataOnly", "loadHash"); err != nil {
		s.ravenFail(w, err)
		return
	}
	q := r.URL.Query()
	ids := q["id"]
	if r.Method == http.MethodPost {
		var body struct {
			Ids []string `json:"Ids"`
		}
		if err := json.Unmarshal(r.Data, &body); err != nil {
			s.ravenFail(w, syncserver.BadRequest("docs: malformed body: %v", err))
			return
		}
		ids = append(ids, body.Ids...)
	}
	if len(ids) == 0 {
		s.ravenFail(w, syncserver.BadRequest("docs: listing documents without ids is not served; pass id="))
		return
	}
	if err := s.CheckBatch(len(ids)); err != nil {
		s.ravenFail(w, err)
		return
	}
	if err := syncserver.DistinctIDs(ids); err != nil {
		s.ravenFail(w, err)
		return
	}
	docs, err := s.ravenReadDocs(r.DB, ids)
	if err != nil {
		s.ravenFail(w, err)
		return
	}
	if len(ids) == 1 && docs[0] == nil {
		w.WriteHeader(http.StatusNotFound)
		return
	}
	if len(ids) == 1 {
		// One document: its change vector as the ETag, which HEAD
		// (session.advanced.exists) answers with, 304 when it is unchanged.
		etag := `"` + docs[0].Rev + `"`
		// HEAD (session.advanced.exists) and GET
		// (session.advanced.conditionalLoad) answer 304 when it is
		// unchanged; not with includes, which the ETag does not cover.
		w.Header().Set("ETag", etag)
		if m := r.Header.Get("If-None-Match"); len(q["include"]) == 0 && (m == etag || m != "" && strings.Trim(m, `"`) == docs[0].Rev) {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		if r.Method == http.MethodHead {
			w.WriteHeader(http.StatusOK)
			return
		}
	}
	incIDs, incDocs, err := s.ravenIncludes(r.DB, docs, q["include"], ids)
	if err != nil {
		s.ravenFail(w, err)
		return
	}
	// Measured before anything is rendered, as the websocket's get does.
	if err := s.CheckReply(syncserver.StoredSize(ids, docs)+syncserver.StoredSize(incIDs, incDocs), len(ids)+len(incIDs)); err != nil {
		s.ravenFail(w, err)
		return
	}
	metaOnly := q.Get("metadataOnly") == "true"
	out := make([]json.RawMessage, len(ids))
	for i, d := range docs {
		out[i] = json.RawMessage("null")
		if d != nil {
			out[i] = ravenDoc(ids[i], d, metaOnly)
		}
	}
	includes := make(map[string]json.RawMessage, len(incIDs))
	for i, d := range incDocs {
		includes[incIDs[i]] = json.RawMessage("null")
		if d != nil {
			includes[incIDs[i]] = ravenDoc(incIDs[i], d, false)
		}
	}
	syncserver.WriteJSON(w, http.StatusOK, map[string]any{"Results": out, "Includes": includes})
}

// ravenIncludes reads the documents that paths (RavenDB's include paths:
// members, dotted for nested ones, holding an id or an array of ids) of
// docs name, other than those asked for, each once. A missing one is nil,
// answered null as RavenDB does.
func (s *door) ravenIncludes(db string, docs []*syncserver.StoredDoc, paths, asked []string) ([]string, []*syncserver.StoredDoc, error) {
	if len(paths) == 0 {
		return nil, nil, nil
	}
	skip := map[string]bool{}
	for _, id := range asked {
		skip[id] = true
	}
	var want []string
	for _, d := range docs {
		if d == nil {
			continue
		}
		for _, p := range paths {
			for _, id := range idsAt(d.Doc, p) {
				if !skip[id] {
					skip[id] = true
					want = append(want, id)
				}
			}
		}
	}
	if err := s.CheckBatch(len(want)); err != nil {
		return nil, nil, err
	}
	found, err := s.ReadDocs(db, want)
	if err != nil {
		return nil, nil, err
	}
	return want, found, nil
}

// idsAt returns the ids a document holds at an include path: a string, or
// the strings of an array, at the dotted member path.
func idsAt(doc json.RawMessage, path string) []string {
	v := doc
	for _, part := range strings.Split(path, ".") {
		var m map[string]json.RawMessage
		if json.Unmarshal(v, &m) != nil {
			return nil
		}
		if v = m[part]; v == nil {
			return nil
		}
	}
	var one string
	if json.Unmarshal(v, &one) == nil {
		if one == "" {
			return nil
		}
		return []string{one}
	}
	var many []any
	if json.Unmarshal(v, &many) != nil {
		return nil
	}
	var ids []string
	for _, x := range many {
		if id, ok := x.(string); ok && id != "" {
			ids = append(ids, id)
		}
	}
	return ids
}

// onlyParams refuses a request whose query has parameters other than
// known: each answers at once that it is not served, never silently
// ignored.
func onlyParams(r *http.Request, route string, known ...string) error {
	for k := range r.URL.Query() {
		ok := false
		for _, n := range known {
			if k == n {
				ok = true
			}
		}
		if !ok {
			return syncserver.BadRequest("%s: the parameter %s is not served (see docs/http.md)", route, syncserver.Quote(syncserver.Truncate(k, 40)))
		}
	}
	return nil
}

func (s *door) ravenPutDoc(w http.ResponseWriter, r *syncserver.Request) {
	if err := onlyParams(r.Request, "docs", "id"); err != nil {
		s.ravenFail(w, err)
		return
	}
	id := r.URL.Query().Get("id")
	if len(r.Data) == 0 || r.Data[0] != '{' {
		s.ravenFail(w, syncserver.BadRequest("docs: PUT needs a JSON object"))
		return
	}
	var cv *string
	if v := r.Header.Get("If-Match"); v != "" {
		v = strings.Trim(v, `"`)
		cv = &v
	}
	if tag, ok := ravenHiloTag(id); ok {
		s.ravenHiloPut(w, r, id, tag)
		return
	}
	wr, err := ravenPutWrite(id, cv, r.Data)
	if err != nil {
		s.ravenFail(w, err)
		return
	}
	res, err := s.WriteDocs(r.Context(), r.DB, []syncserver.DocWrite{wr}, true)
	if err != nil {
		s.ravenFail(w, err)
		return
	}
	if res[0].Err != nil {
		s.ravenFail(w, res[0].Err)
		return
	}
	syncserver.WriteJSON(w, http.StatusCreated, map[string]any{"Id": res[0].ID, "ChangeVector": res[0].Rev})
}

func (s *door) ravenDeleteDoc(w http.ResponseWriter, r *syncserver.Request) {
	if err := onlyParams(r.Request, "docs", "id"); err != nil {
		s.ravenFail(w, err)
		return
	}
	id := r.URL.Query().Get("id")
	var cv *string
	if v := r.Header.Get("If-Match"); v != "" {
		v = strings.Trim(v, `"`)
		cv = &v
	}
	res, err := s.WriteDocs(r.Context(), r.DB, []syncserver.DocWrite{{ID: id, Make: ravenDelete(id, cv)}}, true)
	if err != nil {
		s.ravenFail(w, err)
		return
	}
	if e := res[0].Err; e != nil && e.Code != errcode.NotFound {
		s.ravenFail(w, e)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
