package syncserver

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/hilodb/hilodb/core"
	"github.com/hilodb/hilodb/errcode"
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

func (s *Server) ravenBatch(w http.ResponseWriter, r *doorRequest) {
	var req struct {
		Commands        []ravenCommand `json:"Commands"`
		TransactionMode string         `json:"TransactionMode"`
	}
	if err := json.Unmarshal(r.body, &req); err != nil {
		s.ravenFail(w, badRequest("bulk_docs: malformed body: %v", err))
		return
	}
	if req.TransactionMode != "" && req.TransactionMode != "SingleNode" {
		s.ravenFail(w, badRequest("bulk_docs: TransactionMode %s is not served (cluster-wide transactions are not; SingleNode is)", quote(truncate(req.TransactionMode, 40))))
		return
	}
	if err := onlyParams(r.Request, "bulk_docs"); err != nil {
		s.ravenFail(w, err)
		return
	}
	if len(req.Commands) == 0 {
		writeJSON(w, http.StatusCreated, map[string]any{"Results": []any{}})
		return
	}
	ws := make([]docWrite, len(req.Commands))
	for i, c := range req.Commands {
		id := ""
		if c.ID != nil {
			id = *c.ID
		}
		switch c.Type {
		case "PUT":
			if len(c.Document) == 0 || c.Document[0] != '{' {
				s.ravenFail(w, badRequest("bulk_docs: command %d: PUT needs a Document object", i))
				return
			}
			full, err := s.serverSideID(r.Context(), r.db, id)
			if err != nil {
				s.ravenFail(w, err)
				return
			}
			ws[i] = docWrite{ID: full, Make: ravenPut(full, c.ChangeVector, c.Document)}
		case "DELETE":
			ws[i] = docWrite{ID: id, Make: ravenDelete(id, c.ChangeVector)}
		default:
			s.ravenFail(w, badRequest("bulk_docs: command %d: type %s is not served (PUT and DELETE are)", i, quote(truncate(c.Type, 40))))
			return
		}
	}
	res, err := s.writeDocs(r.Context(), r.db, ws, true)
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
	writeJSON(w, http.StatusCreated, map[string]any{"Results": out})
}

// serverSideID resolves the ids the server makes: "" → a UUID, "prefix|" →
// prefix + "/" + the identity's next value, "prefix/" → prefix + 19 digits +
// "-" + the server's tag, from the server's own sequence.
func (s *Server) serverSideID(ctx context.Context, db, id string) (string, error) {
	switch {
	case id == "":
		return core.NewUUID(), nil
	case strings.HasSuffix(id, "|"):
		name := strings.TrimSuffix(id, "|")
		if err := validTag(name); err != nil {
			return "", err
		}
		v, err := s.nextIdentity(ctx, db, name)
		if err != nil {
			return "", err
		}
		return name + "/" + strconv.FormatInt(v, 10), nil
	case strings.HasSuffix(id, "/"):
		n, err := s.nextServerSeq(ctx, db)
		if err != nil {
			return "", err
		}
		return core.FormatNodeSeqID(id, uint64(n), s.cfg.ServerTag), nil
	}
	return id, nil
}

// nextServerSeq is the server's own sequence for "prefix/" ids, per
// database; it ends in the server's tag, which no client is given.
func (s *Server) nextServerSeq(ctx context.Context, db string) (int64, error) {
	var v int64
	err := s.store.update(ctx, func(tx kvTx) error {
		cur, err := getInt(tx, srvSeqPrefix+db)
		if err != nil {
			return err
		}
		v = cur + 1
		return setInt(tx, srvSeqPrefix+db, v)
	})
	return v, err
}

const srvSeqPrefix = "srvseq/"

// ravenPut makes a PUT of doc as id: a non-null change vector is a
// precondition ("" = the document must not exist).
func ravenPut(id string, cv *string, doc json.RawMessage) func(*storedDoc) (json.RawMessage, bool, error) {
	return func(cur *storedDoc) (json.RawMessage, bool, error) {
		if err := ravenPrecondition(id, cv, cur); err != nil {
			return nil, false, err
		}
		return ravenStored(id, doc)
	}
}

// ravenDelete deletes a document; as in RavenDB, deleting one that does not
// exist is no error (the result says Deleted: false) unless a change vector
// expected it.
func ravenDelete(id string, cv *string) func(*storedDoc) (json.RawMessage, bool, error) {
	return func(cur *storedDoc) (json.RawMessage, bool, error) {
		if cur == nil {
			if cv != nil && *cv != "" {
				return nil, false, &docError{code: errcode.Conflict, msg: "conflict: the document does not exist"}
			}
			return nil, false, nil // nothing to delete
		}
		if err := ravenPrecondition(id, cv, cur); err != nil {
			return nil, false, err
		}
		return nil, true, nil
	}
}

func ravenPrecondition(id string, cv *string, cur *storedDoc) error {
	switch {
	case cv == nil:
		return nil
	case *cv == "" && cur != nil:
		return &docError{code: errcode.Conflict, msg: "conflict: document " + quote(id) + " exists, and the write expected none", rev: cur.Rev}
	case *cv != "" && cur == nil:
		return &docError{code: errcode.Conflict, msg: "conflict: document " + quote(id) + " does not exist; expected change vector " + quote(*cv)}
	case *cv != "" && cur.Rev != *cv:
		return &docError{code: errcode.Conflict, msg: "conflict: document " + quote(id) + " has change vector " + quote(cur.Rev) + ", the write expected " + quote(*cv), rev: cur.Rev}
	}
	return nil
}

// ravenStored turns a RavenDB document into the stored form: its members,
// _key from the id, and @metadata without the members the server makes.
func ravenStored(id string, doc json.RawMessage) (json.RawMessage, bool, error) {
	var m map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		return nil, false, &docError{code: errcode.BadDocument, msg: "document must be a JSON object: " + err.Error()}
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
	if _, key, err := core.ParseID(id, "/"); err == nil {
		m["_key"], _ = json.Marshal(key)
	}
	b, err := json.Marshal(m)
	return b, false, err
}

// ravenDoc renders a stored document for RavenDB's clients: _id, _key and
// _rev move into @metadata as @id and @change-vector. With metaOnly, only
// @metadata is left.
func ravenDoc(id string, d *storedDoc, metaOnly bool) json.RawMessage {
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

func (s *Server) ravenGetDocs(w http.ResponseWriter, r *doorRequest) {
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
		if err := json.Unmarshal(r.body, &body); err != nil {
			s.ravenFail(w, badRequest("docs: malformed body: %v", err))
			return
		}
		ids = append(ids, body.Ids...)
	}
	if len(ids) == 0 {
		s.ravenFail(w, badRequest("docs: listing documents without ids is not served; pass id="))
		return
	}
	if err := s.checkBatch(len(ids)); err != nil {
		s.ravenFail(w, err)
		return
	}
	docs, err := s.readDocs(r.db, ids)
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
		w.Header().Set("ETag", etag)
		if r.Method == http.MethodHead {
			if m := r.Header.Get("If-None-Match"); m == etag || strings.Trim(m, `"`) == docs[0].Rev {
				w.WriteHeader(http.StatusNotModified)
				return
			}
			w.WriteHeader(http.StatusOK)
			return
		}
	}
	metaOnly := q.Get("metadataOnly") == "true"
	out := make([]json.RawMessage, len(ids))
	size := 0
	for i, d := range docs {
		out[i] = json.RawMessage("null")
		if d != nil {
			out[i] = ravenDoc(ids[i], d, metaOnly)
			size += len(out[i])
		}
	}
	includes, n, err := s.ravenIncludes(r.db, docs, q["include"], ids)
	if err != nil {
		s.ravenFail(w, err)
		return
	}
	if size+n > s.replyBudget() {
		s.ravenFail(w, &protoError{code: errcode.ReplyTooBig.Name, num: errcode.ReplyTooBig.Num, msg: "the documents are over the reply bound; ask for fewer"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"Results": out, "Includes": includes})
}

// ravenIncludes reads the documents that paths (RavenDB's include paths:
// members, dotted for nested ones, holding an id or an array of ids) of
// docs name, other than those asked for. A missing one is null, as RavenDB
// answers. n is their size.
func (s *Server) ravenIncludes(db string, docs []*storedDoc, paths, asked []string) (map[string]json.RawMessage, int, error) {
	out := map[string]json.RawMessage{}
	if len(paths) == 0 {
		return out, 0, nil
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
	if err := s.checkBatch(len(want)); err != nil {
		return nil, 0, err
	}
	found, err := s.readDocs(db, want)
	if err != nil {
		return nil, 0, err
	}
	n := 0
	for i, d := range found {
		out[want[i]] = json.RawMessage("null")
		if d != nil {
			out[want[i]] = ravenDoc(want[i], d, false)
			n += len(out[want[i]])
		}
	}
	return out, n, nil
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
			return badRequest("%s: the parameter %s is not served (see docs/http.md)", route, quote(truncate(k, 40)))
		}
	}
	return nil
}

func (s *Server) ravenPutDoc(w http.ResponseWriter, r *doorRequest) {
	if err := onlyParams(r.Request, "docs", "id"); err != nil {
		s.ravenFail(w, err)
		return
	}
	id := r.URL.Query().Get("id")
	if len(r.body) == 0 || r.body[0] != '{' {
		s.ravenFail(w, badRequest("docs: PUT needs a JSON object"))
		return
	}
	full, err := s.serverSideID(r.Context(), r.db, id)
	if err != nil {
		s.ravenFail(w, err)
		return
	}
	var cv *string
	if v := r.Header.Get("If-Match"); v != "" {
		v = strings.Trim(v, `"`)
		cv = &v
	}
	res, err := s.writeDocs(r.Context(), r.db, []docWrite{{ID: full, Make: ravenPut(full, cv, r.body)}}, true)
	if err != nil {
		s.ravenFail(w, err)
		return
	}
	if res[0].Err != nil {
		s.ravenFail(w, res[0].Err)
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"Id": full, "ChangeVector": res[0].Rev})
}

func (s *Server) ravenDeleteDoc(w http.ResponseWriter, r *doorRequest) {
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
	res, err := s.writeDocs(r.Context(), r.db, []docWrite{{ID: id, Make: ravenDelete(id, cv)}}, true)
	if err != nil {
		s.ravenFail(w, err)
		return
	}
	if e := res[0].Err; e != nil && e.code != errcode.NotFound {
		s.ravenFail(w, e)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
