package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/hilodb/hilodb/core"
	"github.com/hilodb/hilodb/errcode"
	"github.com/tidwall/gjson"
)

// ArangoDB's document API over the replica, the subset the sync server
// serves for arangojs (docs/http.md): create with the collection's
// keyOptions (HiLo keys by default), read, replace, update and remove, one
// document or an array, If-Match preconditions, ArangoDB's error bodies and
// numbers. A write is answered once it is durable in the replica: 201 when
// the sync server has acknowledged it too (waitForSync=true asks to wait for
// that), 202 when it is pending (X-Hilodb-Sync says which).

// arangoOptions reads a document call's options from the query and the
// If-Match header.
func arangoOptions(r *request) (opts core.WriteOptions, waitForSync bool, q values, bad *response) {
	q, err := parseQuery(r.query)
	if err != nil {
		return opts, false, q, errorResponse(errcode.BadRequest, "malformed query: "+err.Error())
	}
	flag := func(name string) (*bool, bool) {
		switch q.Get(name) {
		case "":
			return nil, true
		case "true":
			v := true
			return &v, true
		case "false":
			v := false
			return &v, true
		}
		return nil, false
	}
	for _, name := range []string{"returnNew", "returnOld", "silent", "keepNull", "mergeObjects", "ignoreRevs", "waitForSync", "overwrite"} {
		v, ok := flag(name)
		if !ok {
			return opts, false, q, errorResponse(errcode.BadRequest, name+" must be true or false")
		}
		if v == nil {
			continue
		}
		switch name {
		case "returnNew":
			opts.ReturnNew = *v
		case "returnOld":
			opts.ReturnOld = *v
		case "silent":
			opts.Silent = *v
		case "keepNull":
			opts.KeepNull = v
		case "mergeObjects":
			opts.MergeObjects = v
		case "ignoreRevs":
			opts.IgnoreRevs = v
		case "waitForSync":
			waitForSync = *v
		case "overwrite":
			if *v && q.Get("overwriteMode") == "" {
				opts.OverwriteMode = core.OverwriteReplace
			}
		}
	}
	switch m := q.Get("overwriteMode"); m {
	case "":
	case "ignore", "replace", "update", "conflict":
		opts.OverwriteMode = core.OverwriteMode(m)
	default:
		return opts, false, q, errorResponse(errcode.BadRequest, "overwriteMode must be ignore, replace, update or conflict")
	}
	opts.IfMatch = strings.Trim(r.ifMatch, `"`)
	// A key the edge makes never replaces a document, whatever the
	// overwrite mode: the sync server's door refuses the same.
	opts.MadeIDsNew = true
	return opts, waitForSync, q, nil
}

// arango serves the ArangoDB document routes other than a single read.
func (a *app) arango(ctx context.Context, r *request, rt route) *response {
	opts, wait, q, bad := arangoOptions(r)
	if bad != nil {
		return bad
	}
	many := rt.key == "" && len(bytes.TrimSpace(r.body)) > 0 && bytes.TrimSpace(r.body)[0] == '['
	var items [][]byte
	if many {
		var raw []json.RawMessage
		if err := json.Unmarshal(r.body, &raw); err != nil {
			return errorResponse(errcode.BadRequest, "malformed body: "+err.Error())
		}
		items = make([][]byte, len(raw))
		for i, it := range raw {
			items[i] = it
		}
	}
	var (
		res  []core.Result
		one  core.Result
		err  error
		post = r.method == "POST"
	)
	if post {
		// As on the sync server's door, documents are inserted only into
		// a collection that exists: one with a definition.
		switch defined, reached := a.lookForCollection(ctx, rt.coll); {
		case !defined && !reached:
			return errorResponse(errcode.NeedsServer, "collection "+strconv.Quote(truncate(rt.coll, 200))+" is not known here and the sync server cannot be reached to look for it")
		case !defined:
			return errorResponse(errcode.CollectionNotFound, "collection or view not found: "+truncate(rt.coll, 200))
		}
	}
	switch {
	case post && rt.key == "" && many:
		res, err = a.store.InsertMany(ctx, rt.coll, items, &opts)
	case post && rt.key == "":
		one, err = a.store.Insert(ctx, rt.coll, r.body, &opts)
	case rt.key == "" && r.method == "PUT" && q.Get("onlyget") == "true":
		return a.readMany(ctx, rt.coll, items, r.noCache)
	case rt.key == "" && !many && (r.method == "PUT" || r.method == "PATCH" || r.method == "DELETE"):
		return errorResponse(errcode.BadRequest, "expecting an array of documents or selectors")
	case rt.key == "" && r.method == "PUT":
		res, err = a.store.ReplaceMany(ctx, rt.coll, items, &opts)
	case rt.key == "" && r.method == "PATCH":
		res, err = a.store.UpdateMany(ctx, rt.coll, items, &opts)
	case rt.key == "" && r.method == "DELETE":
		res, err = a.store.RemoveMany(ctx, rt.coll, items, &opts)
	case rt.key != "" && r.method == "PUT":
		one, err = a.store.Replace(ctx, rt.coll, rt.key, r.body, &opts)
	case rt.key != "" && r.method == "PATCH":
		one, err = a.store.Update(ctx, rt.coll, rt.key, r.body, &opts)
	case rt.key != "" && r.method == "DELETE":
		one, err = a.store.Remove(ctx, rt.coll, rt.key, &opts)
	default:
		return errorResponse(errcode.MethodNotAllowed, "method "+r.method+" is not allowed on "+truncate(r.path, 200))
	}
	if err != nil {
		return failure(err)
	}
	if !many {
		res = []core.Result{one}
	}
	var ids []string
	codes := map[string]int{}
	for i := range res {
		x := &res[i]
		if x.Err != nil {
			codes[strconv.Itoa(x.Err.Num)]++
			continue
		}
		ids = append(ids, x.ID)
		x.New, x.Old = arangoView(x.New), arangoView(x.Old)
	}
	// Without waitForSync a write is answered as soon as it is durable
	// here: its push is under way, not acknowledged.
	synced := len(ids) == 0
	if wait && len(ids) > 0 {
		synced = a.waitSynced(ctx, ids)
	}
	var (
		body []byte
		out  *response
	)
	if many {
		body, _ = json.Marshal(res)
		out = jsonResponse(202, body)
		if len(codes) > 0 {
			b, _ := json.Marshal(codes)
			out.set("X-Arango-Error-Codes", string(b))
		}
	} else {
		one = res[0]
		body, _ = json.Marshal(one)
		out = jsonResponse(202, body)
		if synced {
			out.status = 201
		}
		if one.Rev != "" {
			out.set("Etag", `"`+one.Rev+`"`)
		}
	}
	out.set(syncHeader, syncState(synced))
	return out
}

// readMany is PUT /_api/document/{coll}?onlyget=true: the documents of an
// array of keys or selectors, each in its place, an error object for those
// missing.
func (a *app) readMany(ctx context.Context, coll string, items [][]byte, noCache bool) *response {
	fresh := a.freshen(ctx, noCache)
	sels := make([]string, len(items))
	for i, it := range items {
		sels[i] = selector(it)
	}
	if bad := checkSelectors(coll, sels); bad != nil {
		return bad
	}
	res, err := a.store.DocumentMany(coll, sels)
	if err != nil {
		return failure(err)
	}
	size := 0
	for _, x := range res {
		size += len(x.New) + 64
	}
	if size > maxReplyBytes && len(res) > 1 {
		return errorResponse(errcode.ReplyTooBig, "the documents asked for pass the reply bound of "+strconv.Itoa(maxReplyBytes)+" bytes; ask for fewer at a time")
	}
	out := make([]json.RawMessage, len(res))
	codes := map[string]int{}
	for i, x := range res {
		if x.Err != nil {
			codes[strconv.Itoa(x.Err.Num)]++
			out[i] = json.RawMessage(`{"error":true,"errorNum":` + strconv.Itoa(x.Err.Num) + `,"errorMessage":` + strconv.Quote(x.Err.Message) + `}`)
			continue
		}
		out[i] = arangoView(x.New)
	}
	b, _ := json.Marshal(out)
	resp := jsonResponse(200, b)
	if len(codes) > 0 {
		c, _ := json.Marshal(codes)
		resp.set("X-Arango-Error-Codes", string(c))
	}
	resp.set(freshHeader, fresh)
	return resp
}

// selector is the key an array item names: a string, or an object's _key
// or _id.
func selector(item []byte) string {
	v := gjson.ParseBytes(item)
	switch {
	case v.Type == gjson.String:
		return v.String()
	case v.Get("_key").Exists():
		return v.Get("_key").String()
	}
	return v.Get("_id").String()
}

// arangoRead answers a single read: If-Match (412 with the current _rev),
// If-None-Match (304), HEAD (no body), the document without @metadata.
func arangoRead(r *request, doc []byte) *response {
	rev := gjson.GetBytes(doc, "_rev").String()
	if m := strings.Trim(r.ifMatch, `"`); m != "" && m != rev {
		return errorWithRev(errcode.Conflict, "conflict, _rev values do not match", rev)
	}
	etag := `"` + rev + `"`
	if m := strings.Trim(r.ifNoneMatch, `"`); m != "" && m == rev {
		return &response{status: 304, header: []string{"Etag", etag}}
	}
	res := jsonResponse(200, arangoView(doc))
	if r.method == "HEAD" {
		res.body = nil
	}
	res.set("Etag", etag)
	return res
}

// arangoView renders a stored document for ArangoDB's clients: without
// hilodb's top-level @metadata. It cuts the member out of the JSON text
// rather than decoding the document.
func arangoView(doc []byte) []byte {
	if len(doc) == 0 {
		return doc
	}
	m := gjson.GetBytes(doc, `\@metadata`)
	if !m.Exists() || m.Index <= 0 {
		return doc
	}
	keyAt := bytes.LastIndex(doc[:m.Index], []byte(`"@metadata"`))
	if keyAt < 0 {
		return doc
	}
	end := m.Index + len(m.Raw)
	start := keyAt
	// Drop one comma: the one before the member, or else the one after.
	if i := lastNonSpace(doc[:start]); i >= 0 && doc[i] == ',' {
		start = i
	} else if j := firstNonSpace(doc[end:]); j >= 0 && doc[end+j] == ',' {
		end += j + 1
	}
	out := make([]byte, 0, len(doc)-(end-start))
	out = append(out, doc[:start]...)
	return append(out, doc[end:]...)
}

func lastNonSpace(b []byte) int {
	for i := len(b) - 1; i >= 0; i-- {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
		default:
			return i
		}
	}
	return -1
}

func firstNonSpace(b []byte) int {
	for i, c := range b {
		switch c {
		case ' ', '\t', '\n', '\r':
		default:
			return i
		}
	}
	return -1
}
