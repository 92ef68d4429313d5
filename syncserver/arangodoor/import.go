package arangodoor

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/hilodb/hilodb/auth"
	"github.com/hilodb/hilodb/errcode"
	"github.com/hilodb/hilodb/syncserver"
)

// ArangoDB's POST /_api/import: documents as JSON lines (type=documents),
// one JSON array of them (type=list or array), lines of arrays whose
// first names the attributes (no type), or either (type=auto). Each is
// inserted as POST /_api/document inserts it, with onDuplicate as the
// overwrite mode; complete=true writes all or none; overwrite=true
// empties the collection first.

// arangoImportRows splits an import body into documents; an empty line is
// nil, a line that fails is an error text.
func arangoImportRows(body []byte, typ string) (rows []json.RawMessage, errs []string, err error) {
	t := bytes.TrimSpace(body)
	if typ == "list" || typ == "array" || typ == "auto" && len(t) > 0 && t[0] == '[' && json.Valid(t) && !bytes.Contains(t, []byte("\n")) {
		var arr []json.RawMessage
		if json.Unmarshal(t, &arr) != nil {
			return nil, nil, syncserver.BadRequest("import: type %s expects one JSON array of documents", typ)
		}
		return arr, nil, nil
	}
	lines := bytes.Split(body, []byte("\n"))
	var header []string
	for i, line := range lines {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			if i < len(lines)-1 {
				rows = append(rows, nil)
			}
			continue
		}
		if typ != "" {
			rows = append(rows, json.RawMessage(line))
			continue
		}
		var vals []json.RawMessage
		if json.Unmarshal(line, &vals) != nil {
			errs = append(errs, "at position "+strconv.Itoa(i)+": a line is not a JSON array")
			continue
		}
		if header == nil {
			for _, v := range vals {
				var name string
				if json.Unmarshal(v, &name) != nil || name == "" {
					return nil, nil, syncserver.BadRequest("import: the first line names the attributes as strings")
				}
				header = append(header, name)
			}
			continue
		}
		if len(vals) != len(header) {
			errs = append(errs, "at position "+strconv.Itoa(i)+": wrong number of values")
			continue
		}
		var b []byte
		b = append(b, '{')
		for j, v := range vals {
			if j > 0 {
				b = append(b, ',')
			}
			k, _ := json.Marshal(header[j])
			b = append(append(append(b, k...), ':'), v...)
		}
		rows = append(rows, append(b, '}'))
	}
	return rows, errs, nil
}

func (s *door) arangoImport(w http.ResponseWriter, r *syncserver.Request) {
	if err := arangoParams(r, "collection", "type", "onDuplicate", "complete", "details", "overwrite", "waitForSync", "fromPrefix", "toPrefix", "overwriteCollectionPrefix", "ignoreMissing"); err != nil {
		s.arangoFail(w, err)
		return
	}
	q := r.URL.Query()
	typ := q.Get("type")
	switch typ {
	case "", "documents", "list", "array", "auto":
	default:
		s.arangoFail(w, syncserver.BadRequest("import: type must be documents, list, array or auto"))
		return
	}
	mode := map[string]string{"": "conflict", "error": "conflict", "update": "update", "replace": "replace", "ignore": "ignore"}[q.Get("onDuplicate")]
	if mode == "" {
		s.arangoFail(w, syncserver.BadRequest("import: onDuplicate must be error, update, replace or ignore"))
		return
	}
	if err := syncserver.NeedRole(r.Context(), auth.Write, "importing documents"); err != nil {
		s.arangoFail(w, err)
		return
	}
	def, ok := s.arangoDefined(w, r, q.Get("collection"))
	if !ok {
		return
	}
	rows, lineErrs, err := arangoImportRows(r.Data, typ)
	if err != nil {
		s.arangoFail(w, err)
		return
	}
	if err := s.CheckBatch(len(rows)); err != nil {
		s.arangoFail(w, err)
		return
	}
	complete := q.Get("complete") == "true"
	if complete && len(lineErrs) > 0 {
		s.arangoFail(w, syncserver.BadRequest("import: %s; with complete=true nothing was imported", lineErrs[0]))
		return
	}
	if q.Get("overwrite") == "true" {
		if _, err := s.RemoveDocs(r.Context(), r.DB, def.Name+"/"); err != nil {
			s.arangoFail(w, err)
			return
		}
	}
	o := arangoOpts{keepNull: true, mergeObjects: true, ignoreRevs: true, overwriteMode: mode}
	empty := 0
	var ws []syncserver.DocWrite
	for i, row := range rows {
		if row == nil {
			empty++
			continue
		}
		ws = append(ws, s.arangoInsert(r.Context(), r.DB, def.Name, def, row, o, len(rows)-i))
	}
	res, err := s.WriteDocs(r.Context(), r.DB, ws, complete)
	if err != nil {
		s.arangoFail(w, err)
		return
	}
	out := map[string]any{"error": false, "created": 0, "errors": len(lineErrs), "empty": empty, "updated": 0, "ignored": 0}
	details := lineErrs
	for i, x := range res {
		switch {
		case x.Err != nil:
			out["errors"] = out["errors"].(int) + 1
			details = append(details, "at position "+strconv.Itoa(i)+": "+x.Err.Msg)
		case x.Unchanged:
			out["ignored"] = out["ignored"].(int) + 1
		case x.OldRev != "":
			out["updated"] = out["updated"].(int) + 1
		default:
			out["created"] = out["created"].(int) + 1
		}
	}
	if complete && out["errors"].(int) > 0 {
		arangoError(w, errcode.UniqueConstraint, "import: "+details[0]+"; with complete=true nothing was imported")
		return
	}
	if q.Get("details") == "true" {
		out["details"] = details
	}
	syncserver.WriteJSON(w, http.StatusCreated, out)
}
