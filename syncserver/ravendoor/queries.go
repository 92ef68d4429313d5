package ravendoor

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/hilodb/hilodb/core"
	"github.com/hilodb/hilodb/core/query"
	"github.com/hilodb/hilodb/core/query/rql"
	"github.com/hilodb/hilodb/errcode"
	"github.com/hilodb/hilodb/syncserver"
)

// RavenDB's queries: POST (or GET ?query=) /databases/{db}/queries runs the
// RQL of a dynamic collection query (package rql says which) over the
// server's query engine (FindDocs), and answers a QueryResult.

// ravenCollectionScope is the one rule that puts a document in a RavenDB
// collection: its @metadata.@collection names it; a document without one
// belongs to the collection its id starts with (the part before the first
// '/'). Names compare without case, as RavenDB's do. It is a selector, so a
// query and its collection are one scan.
func ravenCollectionScope(name string) []byte {
	named := `(?i)^` + regexp.QuoteMeta(name) + `$`
	byID := `(?i)^` + regexp.QuoteMeta(name) + `/`
	b, _ := json.Marshal(map[string]any{"$or": []any{
		map[string]any{"@metadata.@collection": map[string]any{"$regex": named}},
		map[string]any{"@metadata.@collection": map[string]any{"$exists": false}, "_id": map[string]any{"$regex": byID}},
	}})
	return b
}

// ravenCollectionOf is the collection ravenCollectionScope puts doc in
// ("@empty" for none).
func ravenCollectionOf(doc []byte) string {
	if c := gjson.GetBytes(doc, `@metadata.\@collection`); c.Type == gjson.String && c.Str != "" {
		return c.Str
	}
	id := gjson.GetBytes(doc, "_id").Str
	if i := strings.IndexByte(id, '/'); i > 0 {
		return id[:i]
	}
	return "@empty"
}

// ravenQueryBody is the IndexQuery a client posts.
type ravenQueryBody struct {
	Query                         string                     `json:"Query"`
	QueryParameters               map[string]json.RawMessage `json:"QueryParameters"`
	WaitForNonStaleResults        bool                       `json:"WaitForNonStaleResults"`
	WaitForNonStaleResultsTimeout any                        `json:"WaitForNonStaleResultsTimeout"`
	DisableCaching                bool                       `json:"DisableCaching"`
	SkipDuplicateChecking         bool                       `json:"SkipDuplicateChecking"`
	ProjectionBehavior            string                     `json:"ProjectionBehavior"`
}

func (s *door) ravenQueries(w http.ResponseWriter, r *syncserver.Request) {
	if err := onlyParams(r.Request, "queries", "queryHash", "metadataOnly", "addTimeSeriesNames", "query", "parameters", "addSpatialProperties", "includeServerSideQuery", "diagnostics", "ignoreLimit"); err != nil {
		s.ravenFail(w, err)
		return
	}
	q := r.URL.Query()
	var body ravenQueryBody
	if r.Method == http.MethodPost {
		if err := json.Unmarshal(r.Data, &body); err != nil {
			s.ravenFail(w, badQueryErr("queries: malformed body: "+err.Error()))
			return
		}
	} else {
		body.Query = q.Get("query")
		if p := q.Get("parameters"); p != "" {
			if err := json.Unmarshal([]byte(p), &body.QueryParameters); err != nil {
				s.ravenFail(w, badQueryErr("queries: parameters must be a JSON object: "+err.Error()))
				return
			}
		}
	}
	if q.Get("debug") != "" {
		s.ravenFail(w, notServedErr("query debug output"))
		return
	}
	res, err := s.ravenRunQuery(r, body, q.Get("metadataOnly") == "true")
	if err != nil {
		s.ravenFail(w, err)
		return
	}
	syncserver.WriteJSON(w, http.StatusOK, res)
}

func badQueryErr(msg string) error {
	return syncserver.Refusal(errcode.BadQuery, msg)
}

func notServedErr(what string) error {
	return syncserver.Refusal(errcode.BadQuery, what+" is not served by hilodb (see docs/http.md)")
}

// ravenRunQuery runs one query and returns its QueryResult.
func (s *door) ravenRunQuery(r *syncserver.Request, body ravenQueryBody, metadataOnly bool) (map[string]any, error) {
	db := r.DB
	if body.ProjectionBehavior != "" && body.ProjectionBehavior != "Default" && body.ProjectionBehavior != "FromDocument" && body.ProjectionBehavior != "FromDocumentOrThrow" {
		return nil, notServedErr("ProjectionBehavior " + syncserver.Quote(syncserver.Truncate(body.ProjectionBehavior, 40)))
	}
	if strings.TrimSpace(body.Query) == "" {
		return nil, badQueryErr("queries: the Query is empty")
	}
	if len(body.QueryParameters) > 4096 {
		return nil, badQueryErr("queries: at most 4096 QueryParameters")
	}
	rq, err := rql.Parse(body.Query, body.QueryParameters)
	if err != nil {
		return nil, badQueryErr(err.Error())
	}
	var scope []byte
	if !rq.AllDocs {
		scope = ravenCollectionScope(rq.Collection)
	}
	eq, err := rq.Compile(scope)
	if err != nil {
		return nil, badQueryErr(err.Error())
	}
	s.autoIndex(r, rq)
	count, alnum := rq.Limit == 0, hasAlphaNumeric(rq.Sort)
	switch {
	case count:
		eq.Limit = 1 // the engine's 0 is no limit: read one, answer none
	case alnum:
		eq.Skip, eq.Limit, eq.Sort = 0, 0, nil
	}
	started := time.Now()
	found, err := s.FindDocs(db, "", eq, true)
	if err != nil {
		return nil, err
	}
	switch {
	case count:
		found.Docs = nil
	case alnum:
		sortAlphaNumeric(found.Docs, rq.Sort)
		found.Docs = found.Docs[min(rq.Offset, len(found.Docs)):]
		if rq.Limit > 0 && len(found.Docs) > rq.Limit {
			found.Docs = found.Docs[:rq.Limit]
		}
	}
	results := make([]json.RawMessage, 0, len(found.Docs))
	h := fnv.New64a()
	room := s.ReplyBudget()
	for i, d := range found.Docs {
		h.Write(d)
		id, rev := gjson.GetBytes(d, "_id").Str, gjson.GetBytes(d, "_rev").Str
		if len(rq.Select) > 0 {
			// A select can name a field many times: measured as it is
			// made, within the reply bound (one document may pass it).
			if i == 0 {
				room = max(room, len(d)+256)
			}
			p, ok := ravenProjection(d, id, rq.Select, room)
			if !ok {
				return nil, syncserver.Refusal(errcode.ReplyTooBig, fmt.Sprintf("the query's projections pass the reply bound of %d bytes; ask for fewer documents or fields", s.ReplyBudget()))
			}
			room -= len(p) + 1
			results = append(results, p)
			continue
		}
		results = append(results, ravenDoc(id, &syncserver.StoredDoc{Rev: rev, Doc: d}, metadataOnly))
	}
	includes := map[string]json.RawMessage{}
	if len(rq.Include) > 0 {
		if includes, err = s.ravenQueryIncludes(db, found.Docs, rq.Include); err != nil {
			return nil, err
		}
	}
	now := time.Now().UTC().Format("2006-01-02T15:04:05.0000000Z")
	total := found.Total
	var included any
	if len(rq.Include) > 0 {
		included = rq.Include
	}
	return map[string]any{
		"Results": results, "Includes": includes, "IncludedPaths": included,
		"TotalResults": total, "LongTotalResults": total, "SkippedResults": 0, "ScannedResults": found.Examined,
		"IndexName": rq.IndexName(), "IsStale": false, "IndexTimestamp": now, "LastQueryTime": now,
		"ResultEtag": int64(h.Sum64() & (1<<53 - 1)), "NodeTag": s.Tag(),
		"DurationInMs": time.Since(started).Milliseconds(),
	}, nil
}

// ravenProjection is a projected result: each field under its alias (null
// when the document has none), with @metadata saying it is a projection.
// ok is false, and the result left unfinished, when it would pass room
// bytes.
func ravenProjection(doc []byte, id string, fields []rql.Field, room int) (p json.RawMessage, ok bool) {
	out := []byte{'{'}
	for _, f := range fields {
		out = append(out, mustJSON(f.Alias)...)
		out = append(out, ':')
		v := query.MustPath(f.Path).Get(doc)
		if strings.Contains(f.Path, "[]") {
			v = gjson.GetBytes(doc, gjsonPath(f.Path))
		}
		if len(out)+len(v.Raw) > room {
			return nil, false
		}
		if v.Exists() {
			out = append(out, v.Raw...)
		} else {
			out = append(out, "null"...)
		}
		out = append(out, ',')
	}
	meta := map[string]any{"@id": id, "@projection": true}
	if c := gjson.GetBytes(doc, `@metadata.\@collection`); c.Type == gjson.String {
		meta["@collection"] = c.Str
	}
	out = append(out, `"@metadata":`...)
	out = append(out, mustJSON(meta)...)
	return append(out, '}'), true
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// gjsonPath turns an RQL path (dots, [] for each element of an array) into
// gjson's, each member name escaped.
func gjsonPath(p string) string {
	var b strings.Builder
	for i, seg := range strings.Split(p, ".") {
		if i > 0 {
			b.WriteByte('.')
		}
		arr := strings.HasSuffix(seg, "[]")
		seg = strings.TrimSuffix(seg, "[]")
		for j := 0; j < len(seg); j++ {
			if strings.IndexByte(`\.*?|#@!=<>%"`, seg[j]) >= 0 {
				b.WriteByte('\\')
			}
			b.WriteByte(seg[j])
		}
		if arr {
			b.WriteString(".#")
		}
	}
	return b.String()
}

// ravenQueryIncludes reads the documents whose ids the results hold at the
// include paths, each once: null for a missing one.
func (s *door) ravenQueryIncludes(db string, docs [][]byte, paths []string) (map[string]json.RawMessage, error) {
	seen := map[string]bool{}
	var want []string
	var add func(v gjson.Result)
	add = func(v gjson.Result) {
		switch {
		case v.Type == gjson.String && v.Str != "" && !seen[v.Str]:
			seen[v.Str] = true
			want = append(want, v.Str)
		case v.IsArray():
			v.ForEach(func(_, e gjson.Result) bool { add(e); return true })
		}
	}
	for _, d := range docs {
		for _, p := range paths {
			add(gjson.GetBytes(d, gjsonPath(p)))
		}
	}
	if err := s.CheckBatch(len(want)); err != nil {
		return nil, err
	}
	found, err := s.ReadDocs(db, want)
	if err != nil {
		return nil, err
	}
	if err := s.CheckReply(syncserver.StoredSize(want, found), len(want)); err != nil {
		return nil, err
	}
	out := make(map[string]json.RawMessage, len(want))
	for i, d := range found {
		out[want[i]] = json.RawMessage("null")
		if d != nil {
			out[want[i]] = ravenDoc(want[i], d, false)
		}
	}
	return out, nil
}

// autoIndex defines the hilodb index behind a dynamic query's automatic
// index (RavenDB's Auto/Orders/ByStatus: rq's collection, by the fields
// its where and order by name) as index.define defines one, so that every
// replica of the database builds it too. Its hilodb name is RavenDB's with
// '.' for '/', which an index name cannot hold. A GET defines nothing (it
// changes nothing), nor does a caller who may not write; a definition that
// is refused (a field no index takes, the most indexes a collection or
// database keeps) or that fails leaves the query as it is: it scans, as
// every query does on the server.
func (s *door) autoIndex(r *syncserver.Request, rq *rql.Query) {
	if r.Method == http.MethodGet || rq.AllDocs || len(rq.Fields) == 0 {
		return
	}
	def := core.IndexDef{Name: strings.ReplaceAll(rq.IndexName(), "/", "."), Fields: rq.Fields}
	if syncserver.CheckIndexDef(rq.Collection, &def) != nil {
		return
	}
	all, err := s.Indexes(r.DB)
	if err != nil {
		return
	}
	for _, c := range all {
		if c.Collection != rq.Collection {
			continue
		}
		for _, d := range c.Indexes {
			if d.Name == def.Name || slices.Equal(d.Fields, def.Fields) {
				return // defined already: no write, no fsync
			}
		}
	}
	_, _, _ = s.DefineIndex(r.Context(), r.DB, rq.Collection, def)
}
