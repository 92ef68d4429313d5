package syncserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/hilodb/hilodb/core"
	"github.com/hilodb/hilodb/errcode"
)

// RavenDB's HTTP API, the subset its clients need for sessions and ids
// (docs/http.md lists what is served): topology with this server as the one
// node, HiLo next/return, identities, batches and documents. Numbers come
// from the same counters as the websocket ops, so the doors never hand out
// one twice; documents are the ones browsers replicate.

// registerRavenDB adds the RavenDB routes to mux.
func (s *Server) registerRavenDB(mux *http.ServeMux) {
	byName := func(r *http.Request) string { return r.URL.Query().Get("name") }
	byPath := func(r *http.Request) string { return r.PathValue("db") }
	h := func(dbOf func(*http.Request) string, fn func(http.ResponseWriter, *doorRequest)) http.HandlerFunc {
		return s.door("ravendb", dbOf, ravenError, fn)
	}
	mux.HandleFunc("GET /topology", h(byName, s.ravenTopology))
	mux.HandleFunc("GET /cluster/topology", h(func(*http.Request) string { return "default" }, s.ravenClusterTopology))
	mux.HandleFunc("GET /databases/{db}/configuration/client", h(byPath, func(w http.ResponseWriter, r *doorRequest) {
		writeJSON(w, http.StatusOK, map[string]any{"Etag": 0, "Configuration": nil})
	}))
	mux.HandleFunc("GET /databases/{db}/hilo/next", h(byPath, s.ravenHiloNext))
	mux.HandleFunc("PUT /databases/{db}/hilo/return", h(byPath, s.ravenHiloReturn))
	mux.HandleFunc("POST /databases/{db}/identity/next", h(byPath, s.ravenIdentityNext))
	mux.HandleFunc("POST /databases/{db}/identity/seed", h(byPath, s.ravenIdentitySeed))
	mux.HandleFunc("POST /databases/{db}/bulk_docs", h(byPath, s.ravenBatch))
	mux.HandleFunc("GET /databases/{db}/docs", h(byPath, s.ravenGetDocs))
	mux.HandleFunc("POST /databases/{db}/docs", h(byPath, s.ravenGetDocs))
	mux.HandleFunc("PUT /databases/{db}/docs", h(byPath, s.ravenPutDoc))
	mux.HandleFunc("DELETE /databases/{db}/docs", h(byPath, s.ravenDeleteDoc))
	mux.HandleFunc("/databases/{db}/", h(byPath, func(w http.ResponseWriter, r *doorRequest) {
		ravenError(w, errcode.UnknownPath, r.Method+" "+r.URL.Path+" is not served by hilodb's RavenDB API (see docs/http.md)")
	}))
}

// ravenExceptions are the exception types RavenDB's clients map error
// bodies to.
var ravenExceptions = map[string]string{
	errcode.Conflict.Name:     "Raven.Client.Exceptions.ConcurrencyException",
	errcode.NotFound.Name:     "Raven.Client.Exceptions.Documents.DocumentDoesNotExistException",
	errcode.Unauthorized.Name: "Raven.Client.Exceptions.Security.AuthorizationException",
	errcode.UnknownPath.Name:  "Raven.Client.Exceptions.Routing.RouteNotFoundException",
}

// ravenError writes an error body as RavenDB does ({Type, Message, Error}),
// with hilodb's code and number beside.
func ravenError(w http.ResponseWriter, c errcode.Code, msg string) {
	typ, ok := ravenExceptions[c.Name]
	if !ok {
		typ = "Raven.Client.Exceptions.BadRequestException"
		if c.Status >= 500 {
			typ = "Raven.Client.Exceptions.RavenException"
		}
	}
	status := c.Status
	if c == errcode.Conflict {
		status = http.StatusConflict // RavenDB answers a concurrency violation with 409
	}
	writeJSON(w, status, map[string]any{"Type": typ, "Message": msg, "Error": msg, "Code": c.Name, "Num": c.Num})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"Message":"internal error"}`)
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// ravenFail writes err, giving internal failures a generic text.
func (s *Server) ravenFail(w http.ResponseWriter, err error) {
	var de *docError
	if errors.As(err, &de) {
		s.metrics.countError(de.code.Name)
		ravenError(w, de.code, de.msg)
		return
	}
	pe := s.asProtoError(err)
	s.metrics.countError(pe.code)
	ravenError(w, codeOf(pe.code), pe.msg)
}

func (s *Server) nodeURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

func (s *Server) ravenTopology(w http.ResponseWriter, r *doorRequest) {
	writeJSON(w, http.StatusOK, map[string]any{
		"Etag": 1,
		"Nodes": []map[string]any{{
			"Url": s.nodeURL(r.Request), "ClusterTag": s.cfg.ServerTag, "Database": r.db, "ServerRole": "Member",
		}},
	})
}

func (s *Server) ravenClusterTopology(w http.ResponseWriter, r *doorRequest) {
	url, tag := s.nodeURL(r.Request), s.cfg.ServerTag
	nodes := map[string]string{tag: url}
	writeJSON(w, http.StatusOK, map[string]any{
		"Topology": map[string]any{
			"TopologyId": "hilodb-" + tag, "AllNodes": nodes, "Members": nodes,
			"Promotables": map[string]string{}, "Watchers": map[string]string{}, "LastNodeId": tag, "Etag": 1,
		},
		"Etag": 1, "Leader": tag, "NodeTag": tag, "Status": map[string]any{},
	})
}

// ravenLeaseNode is who a HiLo range leased over HTTP belongs to: a return
// is honoured from the same address only.
func ravenLeaseNode(r *http.Request) string { return "http:" + clientIP(r) }

func (s *Server) ravenHiloNext(w http.ResponseWriter, r *doorRequest) {
	q := r.URL.Query()
	tag := q.Get("tag")
	if err := validTag(tag); err != nil {
		s.ravenFail(w, err)
		return
	}
	sep := q.Get("identityPartsSeparator")
	if sep == "" {
		sep = "/"
	}
	if len(sep) != 1 || strings.ContainsAny(sep, "|") {
		s.ravenFail(w, badRequest("identityPartsSeparator must be one character other than |"))
		return
	}
	lastSize, err1 := queryInt(q.Get("lastBatchSize"))
	lastMax, err2 := queryInt(q.Get("lastMax"))
	at, err3 := ravenTime(q.Get("lastRangeAt"))
	if err := errors.Join(err1, err2, err3); err != nil {
		s.ravenFail(w, badRequest("hilo/next: %v", err))
		return
	}
	rg, err := s.nextRange(r.Context(), r.db, tag, ravenLeaseNode(r.Request), lastSize, lastMax, at)
	if err != nil {
		s.ravenFail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"Prefix": tag + sep, "Low": rg.Low, "High": rg.High, "LastSize": rg.Size,
		"ServerTag": s.cfg.ServerTag, "LastRangeAt": rg.At.Format("2006-01-02T15:04:05.0000000Z"),
	})
}

func (s *Server) ravenHiloReturn(w http.ResponseWriter, r *doorRequest) {
	q := r.URL.Query()
	tag := q.Get("tag")
	if err := validTag(tag); err != nil {
		s.ravenFail(w, err)
		return
	}
	end, err1 := queryInt(q.Get("end"))
	last, err2 := queryInt(q.Get("last"))
	if err := errors.Join(err1, err2); err != nil {
		s.ravenFail(w, badRequest("hilo/return: %v", err))
		return
	}
	ok, err := s.returnRange(r.Context(), r.db, tag, ravenLeaseNode(r.Request), end, last)
	if err != nil {
		s.ravenFail(w, err)
		return
	}
	if !ok {
		s.metrics.countError("hilo_return_ignored")
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) ravenIdentityNext(w http.ResponseWriter, r *doorRequest) {
	name := strings.TrimSuffix(r.URL.Query().Get("name"), "|")
	if err := validTag(name); err != nil {
		s.ravenFail(w, err)
		return
	}
	v, err := s.nextIdentity(r.Context(), r.db, name)
	if err != nil {
		s.ravenFail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"NewIdentityValue": v})
}

func (s *Server) ravenIdentitySeed(w http.ResponseWriter, r *doorRequest) {
	q := r.URL.Query()
	name := strings.TrimSuffix(q.Get("name"), "|")
	if err := validTag(name); err != nil {
		s.ravenFail(w, err)
		return
	}
	value, err := queryInt(q.Get("value"))
	if err != nil {
		s.ravenFail(w, badRequest("identity/seed: %v", err))
		return
	}
	v, err := s.seedIdentity(r.Context(), r.db, name, value, q.Get("force") == "true")
	if err != nil {
		s.ravenFail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"NewSeedValue": v})
}

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
			ws[i] = docWrite{ID: id, Make: ravenDelete(c.ChangeVector)}
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
			out[i] = map[string]any{"Type": "DELETE", "Id": x.ID, "Deleted": x.Rev != ""}
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

func ravenDelete(cv *string) func(*storedDoc) (json.RawMessage, bool, error) {
	return func(cur *storedDoc) (json.RawMessage, bool, error) {
		if cur == nil {
			if cv != nil && *cv != "" {
				return nil, false, &docError{code: errcode.Conflict, msg: "conflict: the document does not exist"}
			}
			return nil, false, &docError{code: errcode.NotFound, msg: "document not found"}
		}
		if err := ravenPrecondition("", cv, cur); err != nil {
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
// _rev move into @metadata as @id and @change-vector.
func ravenDoc(id string, d *storedDoc) json.RawMessage {
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
	ids := r.URL.Query()["id"]
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
	out := make([]json.RawMessage, len(ids))
	size := 0
	for i, d := range docs {
		out[i] = json.RawMessage("null")
		if d != nil {
			out[i] = ravenDoc(ids[i], d)
			size += len(out[i])
		}
	}
	if size > s.replyBudget() {
		s.ravenFail(w, &protoError{code: errcode.ReplyTooBig.Name, num: errcode.ReplyTooBig.Num, msg: "the documents are over the reply bound; ask for fewer"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"Results": out, "Includes": map[string]any{}})
}

func (s *Server) ravenPutDoc(w http.ResponseWriter, r *doorRequest) {
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
	id := r.URL.Query().Get("id")
	var cv *string
	if v := r.Header.Get("If-Match"); v != "" {
		v = strings.Trim(v, `"`)
		cv = &v
	}
	res, err := s.writeDocs(r.Context(), r.db, []docWrite{{ID: id, Make: ravenDelete(cv)}}, true)
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

func queryInt(v string) (int64, error) {
	if v == "" {
		return 0, nil
	}
	return strconv.ParseInt(v, 10, 64)
}

// ravenTime parses RavenDB's dates ("2026-11-24T10:00:00.0000000Z", or
// without the zone); "" is the zero time.
func ravenTime(v string) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.9999999", "2006-01-02T15:04:05"} {
		if t, err := time.Parse(layout, v); err == nil {
			return t, nil
		}
	}
	return time.Time{}, errors.New("lastRangeAt: want an ISO 8601 date, got " + quote(truncate(v, 64)))
}
