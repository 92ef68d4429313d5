package arangodoor

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/hilodb/hilodb/auth"
	"github.com/hilodb/hilodb/errcode"
	"github.com/hilodb/hilodb/syncserver"
)

// arangoDocParams are the query parameters of ArangoDB's document calls
// that hilodb serves, per kind of call. waitForSync and refillIndexCaches
// are accepted and change nothing: every write is synced before it is
// answered, and there are no index caches. Any other parameter is refused.
var arangoDocParams = map[string][]string{
	"insert":  {"returnNew", "returnOld", "silent", "overwrite", "overwriteMode", "keepNull", "mergeObjects", "ignoreRevs", "waitForSync", "refillIndexCaches"},
	"replace": {"returnNew", "returnOld", "silent", "ignoreRevs", "waitForSync", "refillIndexCaches"},
	"update":  {"returnNew", "returnOld", "silent", "ignoreRevs", "keepNull", "mergeObjects", "waitForSync", "refillIndexCaches"},
	"remove":  {"returnOld", "silent", "ignoreRevs", "waitForSync", "refillIndexCaches"},
	"read":    {"onlyget", "ignoreRevs"},
}

// arangoParams refuses a query parameter other than known.
func arangoParams(r *syncserver.Request, known ...string) error {
	for k := range r.URL.Query() {
		ok := false
		for _, n := range known {
			ok = ok || k == n
		}
		if !ok {
			return syncserver.BadRequest("the parameter %s is not served on %s %s (see docs/http.md)", syncserver.Quote(syncserver.Truncate(k, 40)), r.Method, syncserver.Truncate(r.URL.Path, 100))
		}
	}
	return nil
}

// arangoOptions reads a document call's options (of kind: insert,
// replace, update or remove) from the query and headers.
func arangoOptions(r *syncserver.Request, kind string) (arangoOpts, error) {
	if err := arangoParams(r, arangoDocParams[kind]...); err != nil {
		return arangoOpts{}, err
	}
	q := r.URL.Query()
	o := arangoOpts{keepNull: true, mergeObjects: true, ignoreRevs: true}
	flag := func(name string, dst *bool) error {
		v := q.Get(name)
		switch v {
		case "":
			return nil
		case "true":
			*dst = true
		case "false":
			*dst = false
		default:
			return syncserver.BadRequest("%s must be true or false", name)
		}
		return nil
	}
	for name, dst := range map[string]*bool{"returnNew": &o.returnNew, "returnOld": &o.returnOld, "silent": &o.silent,
		"keepNull": &o.keepNull, "mergeObjects": &o.mergeObjects, "ignoreRevs": &o.ignoreRevs} {
		if err := flag(name, dst); err != nil {
			return o, err
		}
	}
	if q.Get("overwrite") == "true" && q.Get("overwriteMode") == "" {
		o.overwriteMode = "replace"
	}
	switch m := q.Get("overwriteMode"); m {
	case "", "ignore", "replace", "update", "conflict":
		if m != "" {
			o.overwriteMode = m
		}
	default:
		return o, syncserver.BadRequest("overwriteMode must be ignore, replace, update or conflict")
	}
	o.ifMatch = strings.Trim(r.Header.Get("If-Match"), `"`)
	return o, nil
}

// arangoItems splits a body into its documents: one object, or an array.
func arangoItems(body []byte) (items []json.RawMessage, many bool, err error) {
	if len(body) > 0 && body[0] == '[' {
		if err := json.Unmarshal(body, &items); err != nil {
			return nil, true, syncserver.BadRequest("malformed body: %v", err)
		}
		return items, true, nil
	}
	return []json.RawMessage{body}, false, nil
}

func (s *door) arangoCreate(w http.ResponseWriter, r *syncserver.Request) {
	o, err := arangoOptions(r, "insert")
	if err != nil {
		s.arangoFail(w, err)
		return
	}
	coll := r.PathValue("coll")
	if err := validCollection(coll); err != nil {
		s.arangoFail(w, err)
		return
	}
	items, many, err := arangoItems(r.Data)
	if err == nil && !many && !json.Valid(r.Data) {
		err = syncserver.BadRequest("malformed body: not JSON")
	}
	if err != nil {
		s.arangoFail(w, err)
		return
	}
	if err := s.CheckBatch(len(items)); err != nil {
		s.arangoFail(w, err)
		return
	}
	// Who may write is judged before whether the collection exists.
	if err := syncserver.NeedRole(r.Context(), auth.Write, "writing documents"); err != nil {
		s.arangoFail(w, err)
		return
	}
	def, ok, err := s.CollectionOf(r.DB, coll)
	if err != nil {
		s.arangoFail(w, err)
		return
	}
	if !ok {
		arangoError(w, errcode.CollectionNotFound, "collection or view not found: "+coll)
		return
	}
	ws := make([]syncserver.DocWrite, len(items))
	for i, it := range items {
		ws[i] = s.arangoInsert(r.Context(), r.DB, coll, def, it, o, len(items)-i)
	}
	s.arangoWrite(w, r, ws, many, o, http.StatusCreated)
}

func (s *door) arangoOne(w http.ResponseWriter, r *syncserver.Request) {
	o, err := arangoOptions(r, arangoKind(r.Method))
	if err != nil {
		s.arangoFail(w, err)
		return
	}
	coll, key := r.PathValue("coll"), r.PathValue("key")
	if err := validCollection(coll); err != nil {
		s.arangoFail(w, err)
		return
	}
	var body json.RawMessage
	if r.Method != http.MethodDelete {
		body = r.Data
	}
	w2 := arangoModify(arangoKind(r.Method), coll, key, body, o)
	status := http.StatusCreated
	if r.Method == http.MethodDelete {
		// ArangoDB's remove answers 200 when asked to wait for the sync,
		// 202 otherwise (hilodb syncs either way).
		status = http.StatusAccepted
		if r.URL.Query().Get("waitForSync") == "true" {
			status = http.StatusOK
		}
	}
	s.arangoWrite(w, r, []syncserver.DocWrite{w2}, false, o, status)
}

func arangoKind(method string) string {
	switch method {
	case http.MethodPatch:
		return "update"
	case http.MethodDelete:
		return "remove"
	}
	return "replace"
}

// arangoMany is PUT/PATCH/DELETE on a collection: replaceAll, updateAll,
// removeAll, and documents() (PUT with onlyget=true).
func (s *door) arangoMany(w http.ResponseWriter, r *syncserver.Request) {
	coll := r.PathValue("coll")
	if err := validCollection(coll); err != nil {
		s.arangoFail(w, err)
		return
	}
	items, many, err := arangoItems(r.Data)
	if err != nil {
		s.arangoFail(w, err)
		return
	}
	if !many {
		s.arangoFail(w, syncserver.BadRequest("expecting an array of documents"))
		return
	}
	if err := s.CheckBatch(len(items)); err != nil {
		s.arangoFail(w, err)
		return
	}
	if r.Method == http.MethodPut && r.URL.Query().Get("onlyget") == "true" {
		if err := arangoParams(r, arangoDocParams["read"]...); err != nil {
			s.arangoFail(w, err)
			return
		}
		s.arangoGetMany(w, r, coll, items)
		return
	}
	o, err := arangoOptions(r, arangoKind(r.Method))
	if err != nil {
		s.arangoFail(w, err)
		return
	}
	kind := arangoKind(r.Method)
	ws := make([]syncserver.DocWrite, len(items))
	for i, it := range items {
		key, ok := selectorKey(it, coll)
		if !ok {
			ws[i] = failedWrite(&syncserver.DocError{Code: errcode.IllegalKey, Msg: "each document needs a _key or _id of this collection"})
			continue
		}
		var body json.RawMessage
		if kind != "remove" {
			body = it
		}
		ws[i] = arangoModify(kind, coll, key, body, o)
	}
	s.arangoWrite(w, r, ws, true, o, http.StatusAccepted)
}

// selectorKey reads the key a multi-document item names: a string (key or
// id), or an object with _key or _id.
func selectorKey(item json.RawMessage, coll string) (string, bool) {
	var sel string
	if json.Unmarshal(item, &sel) != nil {
		var o struct {
			Key string `json:"_key"`
			ID  string `json:"_id"`
		}
		if json.Unmarshal(item, &o) != nil {
			return "", false
		}
		sel = o.Key
		if sel == "" {
			sel = o.ID
		}
	}
	if c, k, ok := strings.Cut(sel, "/"); ok {
		if c != coll {
			return "", false
		}
		sel = k
	}
	return sel, sel != ""
}

// arangoWrite runs ws (each alone) and answers as ArangoDB does.
func (s *door) arangoWrite(w http.ResponseWriter, r *syncserver.Request, ws []syncserver.DocWrite, many bool, o arangoOpts, status int) {
	res, err := s.WriteDocs(r.Context(), r.DB, ws, false)
	if err != nil {
		s.arangoFail(w, err)
		return
	}
	if !many {
		x := res[0]
		if x.Err != nil {
			s.arangoFail(w, x.Err)
			return
		}
		syncserver.WriteJSON(w, status, arangoResult(x, o))
		return
	}
	out := make([]any, len(res))
	codes := map[string]int{}
	for i, x := range res {
		if x.Err != nil {
			codes[strconv.Itoa(x.Err.Code.Num)]++
			s.CountError(x.Err.Code.Name)
			out[i] = map[string]any{"error": true, "errorNum": x.Err.Code.Num, "errorMessage": x.Err.Msg}
			continue
		}
		out[i] = arangoResult(x, o)
	}
	if len(codes) > 0 {
		b, _ := json.Marshal(codes)
		w.Header().Set("X-Arango-Error-Codes", string(b))
	}
	syncserver.WriteJSON(w, http.StatusAccepted, out)
}

// arangoResult is one written document's answer: _id, _key, _rev, _oldRev,
// new and old as asked; {} when silent.
func arangoResult(x syncserver.DocResult, o arangoOpts) map[string]any {
	if o.silent {
		return map[string]any{}
	}
	_, key, _ := strings.Cut(x.ID, "/")
	m := map[string]any{"_id": x.ID, "_key": key, "_rev": x.Rev}
	if x.Deleted {
		m["_rev"] = x.OldRev
	}
	if x.OldRev != "" && !x.Deleted && !x.Unchanged {
		m["_oldRev"] = x.OldRev
	}
	if o.returnNew && x.New != nil {
		m["new"] = arangoView(x.New)
	}
	if o.returnOld && x.Old != nil && !x.Unchanged {
		m["old"] = arangoView(x.Old)
	}
	return m
}

func (s *door) arangoRead(w http.ResponseWriter, r *syncserver.Request) {
	if err := arangoParams(r); err != nil {
		s.arangoFail(w, err)
		return
	}
	coll, key := r.PathValue("coll"), r.PathValue("key")
	docs, err := s.ReadDocs(r.DB, []string{coll + "/" + key})
	if err != nil {
		s.arangoFail(w, err)
		return
	}
	d := docs[0]
	if d == nil {
		arangoError(w, errcode.NotFound, "document not found")
		return
	}
	if m := strings.Trim(r.Header.Get("If-Match"), `"`); m != "" && m != d.Rev {
		s.arangoFail(w, &syncserver.DocError{Code: errcode.Conflict, Msg: "conflict, _rev values do not match", Rev: d.Rev, ID: coll + "/" + key})
		return
	}
	if m := strings.Trim(r.Header.Get("If-None-Match"), `"`); m != "" && m == d.Rev {
		w.Header().Set("Etag", `"`+d.Rev+`"`)
		w.WriteHeader(http.StatusNotModified)
		return
	}
	w.Header().Set("Etag", `"`+d.Rev+`"`)
	if r.Method == http.MethodHead {
		w.WriteHeader(http.StatusOK)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(arangoView(d.Doc))
}

func (s *door) arangoGetMany(w http.ResponseWriter, r *syncserver.Request, coll string, items []json.RawMessage) {
	ids := make([]string, len(items))
	named := make([]string, 0, len(items))
	for i, it := range items {
		if k, ok := selectorKey(it, coll); ok {
			ids[i] = coll + "/" + k
			named = append(named, ids[i])
		}
	}
	if err := syncserver.DistinctIDs(named); err != nil {
		s.arangoFail(w, err)
		return
	}
	docs, err := s.ReadDocs(r.DB, ids)
	if err != nil {
		s.arangoFail(w, err)
		return
	}
	if err := s.CheckReply(syncserver.StoredSize(ids, docs), len(ids)); err != nil {
		s.arangoFail(w, err)
		return
	}
	out := make([]json.RawMessage, len(items))
	codes := map[string]int{}
	for i, d := range docs {
		if d == nil {
			codes[strconv.Itoa(errcode.NotFound.Num)]++
			out[i] = json.RawMessage(`{"error":true,"errorNum":1202,"errorMessage":"document not found"}`)
			continue
		}
		out[i] = arangoView(d.Doc)
	}
	if len(codes) > 0 {
		b, _ := json.Marshal(codes)
		w.Header().Set("X-Arango-Error-Codes", string(b))
	}
	b, _ := json.Marshal(out)
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(bytes.TrimSpace(b))
}
