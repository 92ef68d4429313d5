package ravendoor

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/hilodb/hilodb/syncserver"
	"github.com/hilodb/hilodb/syncserver/storage"
)

// RavenDB keeps a HiLo tag's state in the document Raven/Hilo/{tag}
// ({"Max": n}): its hilo/next reads Max there and writes it back, and
// tests and migrations store the document to move the numbers on. In
// hilodb that document is the server's HiLo state of the tag itself (the
// one every door and the websocket's hilo.next lease from), not a second
// copy: reading it renders the state, and storing it raises the state's
// Max. A Max below the current one is kept at the current one (ids never
// repeat), and the document cannot be deleted.

const ravenHiloPrefix = "Raven/Hilo/"

// ravenHiloTag returns the tag of a Raven/Hilo/{tag} id (its prefix in any
// case, as RavenDB's ids are), and whether id is one.
func ravenHiloTag(id string) (string, bool) {
	if len(id) <= len(ravenHiloPrefix) || !strings.EqualFold(id[:len(ravenHiloPrefix)], ravenHiloPrefix) {
		return "", false
	}
	return id[len(ravenHiloPrefix):], true
}

// ravenHiloChangeVector names a state by its Max.
func ravenHiloChangeVector(max int64) string { return "HILO:" + strconv.FormatInt(max, 10) }

// ravenReadDocs is ReadDocs with the Raven/Hilo documents rendered from
// the HiLo state (nil for a tag that never leased).
func (s *door) ravenReadDocs(db string, ids []string) ([]*syncserver.StoredDoc, error) {
	docs, err := s.ReadDocs(db, ids)
	if err != nil {
		return nil, err
	}
	for i, id := range ids {
		tag, ok := ravenHiloTag(id)
		if !ok {
			continue
		}
		docs[i] = nil
		hiMax, meta, found, err := s.HiloState(db, tag)
		if err != nil {
			return nil, err
		}
		if found {
			if len(meta) == 0 {
				meta = json.RawMessage(`{"@collection":"@hilo"}`)
			}
			b, _ := json.Marshal(map[string]any{"Max": hiMax, "@metadata": meta})
			docs[i] = &syncserver.StoredDoc{Rev: ravenHiloChangeVector(hiMax), Doc: b}
		}
	}
	return docs, nil
}

// ravenHiloCommand is a write of a Raven/Hilo document.
type ravenHiloCommand struct {
	id, tag string
	max     int64
	meta    json.RawMessage // the document's @metadata, without what the server makes
	delete  bool
}

// ravenHiloWrites picks the commands of a batch that write Raven/Hilo
// documents. ok is false when there are none; a batch that mixes them with
// other documents is refused, since the HiLo state is no document.
func ravenHiloWrites(cmds []ravenCommand) (hilo []ravenHiloCommand, ok bool, err error) {
	for i, c := range cmds {
		if c.ID == nil {
			continue
		}
		tag, is := ravenHiloTag(*c.ID)
		if !is {
			continue
		}
		if len(hilo) != i {
			return nil, false, syncserver.BadRequest("bulk_docs: store a Raven/Hilo document in a batch of its own: it is the server's HiLo state, not a document")
		}
		hc, err := parseHiloCommand(*c.ID, tag, c.Type, c.Document)
		if err != nil {
			return nil, false, err
		}
		hilo = append(hilo, hc)
	}
	if len(hilo) == 0 {
		return nil, false, nil
	}
	if len(hilo) != len(cmds) {
		return nil, false, syncserver.BadRequest("bulk_docs: store a Raven/Hilo document in a batch of its own: it is the server's HiLo state, not a document")
	}
	return hilo, true, nil
}

func parseHiloCommand(id, tag, typ string, doc json.RawMessage) (ravenHiloCommand, error) {
	if err := syncserver.CheckTag(tag); err != nil {
		return ravenHiloCommand{}, err
	}
	hc := ravenHiloCommand{id: id, tag: tag}
	switch typ {
	case "DELETE":
		hc.delete = true
		return hc, nil
	case "PUT":
	default:
		return hc, syncserver.BadRequest("bulk_docs: type %s is not served (PUT and DELETE are)", syncserver.Quote(syncserver.Truncate(typ, 40)))
	}
	m := gjson.GetBytes(doc, "Max")
	if !gjson.ValidBytes(doc) || m.Type != gjson.Number || m.Num < 0 || m.Num > storage.MaxSafeNumber || m.Num != float64(int64(m.Num)) {
		return hc, syncserver.BadRequest("%s: a HiLo document holds Max, a whole number from 0 to %d", syncserver.Quote(syncserver.Truncate(id, 100)), int64(storage.MaxSafeNumber))
	}
	hc.max = int64(m.Num)
	if md := gjson.GetBytes(doc, `\@metadata`); md.IsObject() {
		if len(md.Raw) > 4096 {
			return hc, syncserver.BadRequest("%s: @metadata of a HiLo document is at most 4096 bytes", syncserver.Quote(syncserver.Truncate(id, 100)))
		}
		var m map[string]json.RawMessage
		if json.Unmarshal([]byte(md.Raw), &m) == nil {
			for _, k := range []string{"@id", "@change-vector", "@last-modified", "@flags"} {
				delete(m, k)
			}
			hc.meta, _ = json.Marshal(m)
		}
	}
	return hc, nil
}

// ravenHiloBatch runs a batch of Raven/Hilo writes.
func (s *door) ravenHiloBatch(w http.ResponseWriter, r *syncserver.Request, cmds []ravenHiloCommand) {
	out := make([]map[string]any, len(cmds))
	for i, c := range cmds {
		if c.delete {
			s.ravenFail(w, syncserver.BadRequest("%s cannot be deleted: it is the HiLo state of %s, and ids must never repeat", syncserver.Quote(syncserver.Truncate(c.id, 100)), syncserver.Quote(c.tag)))
			return
		}
		got, err := s.RaiseHilo(r.Context(), r.DB, c.tag, c.max, c.meta)
		if err != nil {
			s.ravenFail(w, err)
			return
		}
		out[i] = map[string]any{"Type": "PUT", "@id": c.id, "@change-vector": ravenHiloChangeVector(got),
			"@collection": "@hilo", "@last-modified": time.Now().UTC().Format(time.RFC3339Nano)}
	}
	syncserver.WriteJSON(w, http.StatusCreated, map[string]any{"Results": out})
}

// ravenHiloPut is PUT /docs?id=Raven/Hilo/{tag}.
func (s *door) ravenHiloPut(w http.ResponseWriter, r *syncserver.Request, id, tag string) {
	c, err := parseHiloCommand(id, tag, "PUT", r.Data)
	if err != nil {
		s.ravenFail(w, err)
		return
	}
	got, err := s.RaiseHilo(r.Context(), r.DB, c.tag, c.max, c.meta)
	if err != nil {
		s.ravenFail(w, err)
		return
	}
	syncserver.WriteJSON(w, http.StatusCreated, map[string]any{"Id": id, "ChangeVector": ravenHiloChangeVector(got)})
}
