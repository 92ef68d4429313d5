package syncserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/hilodb/hilodb/internal/servertest"
	"github.com/hilodb/hilodb/syncserver"
)

// doorsModel is what one fuzz run's HTTP clients were handed, to check
// that nothing was handed out twice.
type doorsModel struct {
	t       *testing.T
	ranges  map[string][]span         // HiLo tag → every range leased over HTTP (never returned)
	made    map[string]map[int64]bool // collection → numbers of keys the server made
	idents  map[string]int64          // identity → highest value handed out or seeded
	written map[string]bool           // every id written
}

// fuzzColls are the collections, HiLo tags and identity names of the fuzz
// runs: one set, so RavenDB's leases, ArangoDB's keys and identities meet.
var fuzzColls = []string{"orders", "users"}

// FuzzHTTPDoors drives the RavenDB and ArangoDB doors of one server through
// request sequences decoded from the fuzz input: HiLo leases and returns
// (made up or not), identities and seeds, batches with server-made ids,
// repeated members, lone surrogates and repeated reads, ArangoDB inserts
// with every overwrite mode and multi-document reads, and queries whose
// results repeat a document or a field. It checks that every reply is
// bounded and well formed and that nothing is handed out twice: no
// HiLo range overlaps another or a key the server made, an identity only
// goes up, and a server-made id never names a document that was written.
func FuzzHTTPDoors(f *testing.F) {
	f.Add([]byte{0, 0, 0, 1, 0, 32, 0, 0, 0, 4, 1, 3, 0, 7, 0, 2, 6, 0, 3})
	f.Add([]byte{4, 0, 5, 4, 1, 2, 2, 0, 0, 3, 0, 9, 5, 1, 0, 7, 1, 1, 8, 0, 4})
	f.Add([]byte{7, 0, 3, 7, 0, 1, 0, 0, 0, 1, 0, 0, 4, 0, 7, 8, 0, 5, 6, 1, 2})
	f.Add([]byte{3, 0, 255, 2, 0, 0, 4, 2, 3, 5, 0, 6, 9, 0, 0, 0, 1, 200, 2})
	f.Add([]byte{4, 1, 7, 8, 3, 255, 8, 3, 253, 8, 3, 254})
	srv, err := syncserver.New(syncserver.Config{DataDir: f.TempDir(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		MaxBatch: 8, MaxMessageBytes: 64 << 10, Doors: servertest.Doors})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { srv.Close(context.Background()) })
	var run atomic.Int64
	f.Fuzz(func(t *testing.T, prog []byte) {
		if len(prog) > 400 {
			return
		}
		db := fmt.Sprintf("f%d", run.Add(1)) // each run starts from nothing
		m := &doorsModel{t: t, ranges: map[string][]span{}, made: map[string]map[int64]bool{}, idents: map[string]int64{}, written: map[string]bool{}}
		next := func() int {
			if len(prog) == 0 {
				return 0
			}
			b := prog[0]
			prog = prog[1:]
			return int(b)
		}
		for len(prog) > 0 {
			m.step(srv, db, next(), next(), next())
		}
	})
}

// step sends one request made from three fuzz bytes and checks its reply.
func (m *doorsModel) step(srv http.Handler, db string, op, a, b int) {
	coll := fuzzColls[a%2]
	raven := "/databases/" + db + "/"
	arango := "/_db/" + db + "/_api/document/" + coll
	switch op % 10 {
	case 0: // a HiLo lease, lastMax made up or not
		q := "hilo/next?tag=" + coll
		if b%3 == 1 {
			q += "&lastMax=" + strconv.Itoa(b*1000)
		}
		status, body := m.send(srv, "GET", raven+q, "", map[string]string{"Raven-Client-Version": "7.2"})
		if status == 200 {
			var r struct{ Low, High int64 }
			m.decode(body, &r)
			m.lease(coll, r.Low, r.High)
		}
	case 1: // a return: of the latest lease, or made up
		end, last := int64(b*7+1), int64(b)
		if rs := m.ranges[coll]; len(rs) > 0 && a%4 < 2 {
			end, last = rs[len(rs)-1].high, rs[len(rs)-1].low-1+int64(b%3)
		}
		m.send(srv, "PUT", fmt.Sprintf("%shilo/return?tag=%s&end=%d&last=%d", raven, coll, end, last), "", nil)
	case 2: // an identity's next value
		status, body := m.send(srv, "POST", raven+"identity/next?name="+coll, "", nil)
		if status == 200 {
			var r struct{ NewIdentityValue int64 }
			m.decode(body, &r)
			m.ident(coll, r.NewIdentityValue)
		}
	case 3: // a seed, sometimes past the bound, sometimes forced
		value := []int64{int64(b), int64(b) * 1_000_000_007, 1 << 52, 1<<53 - 1}[a%4]
		q := fmt.Sprintf("identity/seed?name=%s&value=%d", coll, value)
		if b%5 == 0 {
			q += "&force=true"
		}
		status, body := m.send(srv, "POST", raven+q, "", nil)
		if status == 200 {
			var r struct{ NewSeedValue int64 }
			m.decode(body, &r)
			if r.NewSeedValue < m.idents[coll] {
				m.t.Fatalf("seed %s answered %d below %d handed out", q, r.NewSeedValue, m.idents[coll])
			}
			m.idents[coll] = r.NewSeedValue
		}
	case 4, 5: // a batch, ids made by the server or given
		n := 1 + b%9 // up to MaxBatch+1
		cmds := make([]string, n)
		for i := range cmds {
			id := []string{coll + "|", coll + "/", coll + "/" + strconv.Itoa((a+i)%7), "", coll + "/x\\ud800", "/", coll + "-" + strconv.Itoa(i)}[(a+i*b)%7]
			doc := []string{`{"v":1}`, `{"v":1,"v":2}`, `{"_key":"k"}`, `{"s":"\udc00"}`}[(b>>4+i)%4*((a>>2)%2)]
			cmds[i] = fmt.Sprintf(`{"Id":%q,"Type":"PUT","Document":%s}`, id, doc)
			cmds[i] = strings.Replace(cmds[i], `\\ud800`, `\ud800`, 1)
		}
		status, body := m.send(srv, "POST", raven+"bulk_docs", `{"Commands":[`+strings.Join(cmds, ",")+`]}`, nil)
		if status == 201 {
			var r struct{ Results []map[string]any }
			m.decode(body, &r)
			for i, x := range r.Results {
				id, _ := x["@id"].(string)
				m.wrote(id, strings.Contains(cmds[i], `|"`) || strings.Contains(cmds[i], `/"`))
				if strings.Contains(cmds[i], `|"`) {
					m.identID(id)
				}
			}
		}
	case 6: // a RavenDB read: ids repeated or not, a query, a multi_get, a startsWith
		switch b % 8 {
		case 5:
			rql := []string{"from " + coll + " where v = 2 order by v desc", "from @all_docs where startsWith(id(), $p) include v limit 3",
				"from " + coll + " where", "from index 'x'", "from " + coll + " order by v as alphaNumeric select v as w limit 0"}[a%5]
			body, _ := json.Marshal(map[string]any{"Query": rql, "QueryParameters": map[string]any{"p": coll}})
			m.send(srv, "POST", raven+"queries", string(body), nil)
			return
		case 6:
			m.send(srv, "POST", raven+"multi_get", `{"Requests":[{"Url":"/databases/`+db+`/docs","Query":"?&id=`+coll+`/1"},`+
				`{"Url":"/databases/`+db+`/queries","Method":"POST","Content":"{\"Query\":\"from `+coll+`\"}"}]}`, nil)
			return
		case 7:
			m.send(srv, "GET", raven+"docs?startsWith="+coll+"/&pageSize="+strconv.Itoa(a%4)+"&matches=*"+strconv.Itoa(b%3), "", nil)
			return
		}
		ids := []string{}
		for i := 0; i <= b%5; i++ {
			ids = append(ids, fmt.Sprintf("%s/%d", coll, (a+i*b)%3))
		}
		body, _ := json.Marshal(map[string]any{"Ids": ids})
		m.send(srv, "POST", raven+"docs", string(body), nil)
	case 7: // ArangoDB inserts, keys made by the server or given
		mode := []string{"", "?overwriteMode=replace", "?overwriteMode=update", "?overwriteMode=ignore", "?overwrite=true"}[a%5]
		docs := make([]string, 1+b%4)
		for i := range docs {
			docs[i] = []string{`{"v":1}`, fmt.Sprintf(`{"_key":"%d"}`, (b+i)%40), `{"_key":"1","_key":"2"}`, `{"v":"\ud800"}`}[(a+i)%4]
		}
		status, body := m.send(srv, "POST", arango+mode, "["+strings.Join(docs, ",")+"]", nil)
		if status < 300 {
			var r []map[string]any
			m.decode(body, &r)
			for i, x := range r {
				if id, ok := x["_id"].(string); ok && x["error"] != true {
					given := strings.Contains(docs[i], `"_key"`)
					m.wrote(id, !given)
					if !given {
						num, _, _ := strings.Cut(x["_key"].(string), "-") // "7-A", or "7" by keyOptions
						n, err := strconv.ParseInt(num, 10, 64)
						if err != nil {
							m.t.Fatalf("a key the server made: %v (%v)", x, err)
						}
						m.key(coll, n)
					}
				}
			}
		}
	case 8: // ArangoDB documents(), keys repeated or not; or a query whose result repeats a document
		if a%4 == 3 {
			copies := strings.TrimSuffix(strings.Repeat("d,", 1+b), ",")
			switch b % 3 {
			case 0:
				m.send(srv, "POST", "/_db/"+db+"/_api/cursor", `{"query":"FOR d IN `+coll+` RETURN [`+copies+`]","batchSize":1000}`, nil)
			case 1:
				ids := strings.TrimSuffix(strings.Repeat(`"`+coll+`/0",`, 1+b%4), ",")
				m.send(srv, "POST", "/_db/"+db+"/_api/cursor", `{"query":"RETURN DOCUMENT(@ids)","bindVars":{"ids":[`+ids+`]}}`, nil)
			case 2:
				fields := make([]string, 1+b)
				for i := range fields {
					fields[i] = fmt.Sprintf("v as f%d", i)
				}
				m.send(srv, "POST", raven+"queries", `{"Query":"from `+coll+` select `+strings.Join(fields, ", ")+`"}`, nil)
			}
			return
		}
		keys := []string{}
		for i := 0; i <= b%4; i++ {
			keys = append(keys, strconv.Quote(strconv.Itoa((a+i*b)%3)))
		}
		m.send(srv, "PUT", arango+"?onlyget=true", "["+strings.Join(keys, ",")+"]", nil)
	case 9: // a RavenDB PUT of one document, its id made or given
		id := []string{coll + "|", coll + "/", coll + "/" + strconv.Itoa(b%5), strings.Repeat("p", 1000+b%30) + "/"}[a%4]
		status, body := m.send(srv, "PUT", raven+"docs?id="+id, `{"v":2}`, nil)
		if status == 201 {
			var r struct{ Id string }
			m.decode(body, &r)
			m.wrote(r.Id, a%4 != 2)
			if a%4 == 0 {
				m.identID(r.Id)
			}
		}
	}
}

// send runs one request through the server and checks that the reply is
// bounded, of a known status, and JSON when it has a body.
func (m *doorsModel) send(srv http.Handler, method, target, body string, h map[string]string) (int, []byte) {
	req := httptest.NewRequest(method, target, strings.NewReader(body))
	req.Host, req.RemoteAddr = "127.0.0.1", "127.0.0.1:4321"
	for k, v := range h {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, req)
	out := rec.Body.Bytes()
	switch rec.Code {
	case 200, 201, 202, 204, 304, 400, 403, 404, 409, 412, 413:
	default:
		m.t.Fatalf("%s %s: status %d: %s", method, target, rec.Code, out)
	}
	if len(out) > 2*64<<10 {
		m.t.Fatalf("%s %s: a reply of %d bytes past the reply bound", method, target, len(out))
	}
	if len(out) > 0 && !json.Valid(out) {
		m.t.Fatalf("%s %s: a reply that is not JSON: %.200s", method, target, out)
	}
	return rec.Code, out
}

func (m *doorsModel) decode(body []byte, v any) {
	if err := json.Unmarshal(body, v); err != nil {
		m.t.Fatalf("reply %.200s: %v", body, err)
	}
}

// lease records a HiLo range handed out over HTTP: it overlaps no other
// range of the tag (none is ever returned) and no key the server made.
func (m *doorsModel) lease(tag string, low, high int64) {
	if low < 1 || high < low {
		m.t.Fatalf("range %d..%d", low, high)
	}
	for _, r := range m.ranges[tag] {
		if low <= r.high && r.low <= high {
			m.t.Fatalf("tag %s: range %d..%d overlaps %d..%d handed out before", tag, low, high, r.low, r.high)
		}
	}
	for n := range m.made[tag] {
		if low <= n && n <= high {
			m.t.Fatalf("tag %s: range %d..%d holds %d, a key the server made", tag, low, high, n)
		}
	}
	m.ranges[tag] = append(m.ranges[tag], span{low: low, high: high})
}

// key records a number the server made a key of: in no HTTP range.
func (m *doorsModel) key(tag string, n int64) {
	for _, r := range m.ranges[tag] {
		if r.low <= n && n <= r.high {
			m.t.Fatalf("tag %s: the server made key %d, in the range %d..%d an HTTP client holds", tag, n, r.low, r.high)
		}
	}
	if m.made[tag] == nil {
		m.made[tag] = map[int64]bool{}
	}
	if m.made[tag][n] {
		m.t.Fatalf("tag %s: the server made key %d twice", tag, n)
	}
	m.made[tag][n] = true
}

// ident records an identity value handed out: above all before it.
func (m *doorsModel) ident(name string, v int64) {
	if v <= m.idents[name] {
		m.t.Fatalf("identity %s handed out %d after %d", name, v, m.idents[name])
	}
	m.idents[name] = v
}

// identID records the identity value of an id made from "name|".
func (m *doorsModel) identID(id string) {
	name, v, _ := strings.Cut(id, "/")
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		m.t.Fatalf("id %s made from an identity", id)
	}
	m.ident(name, n)
}

// wrote records a written id; one the server made must be new.
func (m *doorsModel) wrote(id string, made bool) {
	if id == "" {
		m.t.Fatalf("a write answered without its id")
	}
	if made && m.written[id] {
		m.t.Fatalf("the server made id %s, which names a document written before", id)
	}
	m.written[id] = true
}
