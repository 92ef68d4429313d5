package ravendoor

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strconv"
	"strings"

	"github.com/hilodb/hilodb/core/query"
	"github.com/hilodb/hilodb/syncserver"
)

// ravenStartsWith answers GET /docs?startsWith= (loadStartingWith, and its
// lazy form): the documents whose ids start with the prefix, in id order,
// filtered by matches and exclude (RavenDB's wildcards, '*' and '?', on
// the rest of the id after the prefix, several separated by '|', without
// case), after startAfter, paged by start and pageSize (25 when absent).
func (s *door) ravenStartsWith(w http.ResponseWriter, r *syncserver.Request) {
	if err := onlyParams(r.Request, "docs", "startsWith", "matches", "exclude", "start", "pageSize", "startAfter", "metadataOnly"); err != nil {
		s.ravenFail(w, err)
		return
	}
	q := r.URL.Query()
	prefix := q.Get("startsWith")
	start, err1 := pageParam(q.Get("start"), 0, query.MaxSkip)
	size, err2 := pageParam(q.Get("pageSize"), 25, 1<<31-1)
	if err1 != nil || err2 != nil {
		s.ravenFail(w, syncserver.BadRequest("docs: start and pageSize take whole numbers"))
		return
	}
	var conds []any
	if m := q.Get("matches"); m != "" {
		conds = append(conds, map[string]any{"_id": map[string]any{"$regex": wildcardRegex(prefix, m)}})
	}
	if x := q.Get("exclude"); x != "" {
		conds = append(conds, map[string]any{"$nor": []any{map[string]any{"_id": map[string]any{"$regex": wildcardRegex(prefix, x)}}}})
	}
	if a := q.Get("startAfter"); a != "" {
		conds = append(conds, map[string]any{"_id": map[string]any{"$gt": a}})
	}
	sel := map[string]any{}
	if len(conds) > 0 {
		sel = map[string]any{"$and": conds}
	}
	b, _ := json.Marshal(sel)
	ps, err := query.ParseSelector(b)
	if err != nil {
		s.ravenFail(w, badQueryErr("docs: "+err.Error()))
		return
	}
	found, err := s.FindDocs(r.DB, prefix, &query.Query{Selector: ps, Skip: start, Limit: size}, false)
	if err != nil {
		s.ravenFail(w, err)
		return
	}
	metaOnly := q.Get("metadataOnly") == "true"
	out := make([]json.RawMessage, len(found.Docs))
	for i, d := range found.Docs {
		var rec struct {
			ID  string `json:"_id"`
			Rev string `json:"_rev"`
		}
		_ = json.Unmarshal(d, &rec)
		out[i] = ravenDoc(rec.ID, &syncserver.StoredDoc{Rev: rec.Rev, Doc: d}, metaOnly)
	}
	syncserver.WriteJSON(w, http.StatusOK, map[string]any{"Results": out, "Includes": map[string]any{}})
}

func pageParam(v string, def, max int) (int, error) {
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, strconv.ErrSyntax
	}
	return min(n, max), nil
}

// wildcardRegex turns RavenDB's wildcard patterns for the part of an id
// after prefix into one regular expression over the whole id.
func wildcardRegex(prefix, patterns string) string {
	var alts []string
	for _, p := range strings.Split(patterns, "|") {
		var b strings.Builder
		for _, c := range p {
			switch c {
			case '*':
				b.WriteString(".*")
			case '?':
				b.WriteString(".")
			default:
				b.WriteString(regexp.QuoteMeta(string(c)))
			}
		}
		alts = append(alts, b.String())
	}
	return "(?is)^" + regexp.QuoteMeta(prefix) + "(?:" + strings.Join(alts, "|") + ")$"
}
