package syncserver

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"html/template"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hilodb/hilodb/syncserver/storage"
)

// admin wraps a handler of the read-only admin pages: with an AdminToken it
// requires that token (HTTP basic auth with any user name, or a bearer
// token); without one it serves loopback clients only, and only on a server
// without database tokens (a server with tokens has outsiders to keep out, so
// it needs an admin token to show these pages at all).
func (s *Server) admin(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.cfg.AdminToken != "" {
			if !adminTokenOK(r, s.cfg.AdminToken) {
				s.metrics.countError("admin_unauthorized")
				s.log.Warn("refused admin request: wrong or missing admin token", "path", r.URL.Path, "remote", r.RemoteAddr)
				w.Header().Set("WWW-Authenticate", `Basic realm="hilodb admin", charset="UTF-8"`)
				http.Error(w, "admin token required", http.StatusUnauthorized)
				return
			}
		} else if s.hasTokens() || !fromLoopback(r) {
			s.metrics.countError("admin_unauthorized")
			s.log.Warn("refused admin request: no admin token configured and not a plain loopback server", "path", r.URL.Path, "remote", r.RemoteAddr)
			http.Error(w, "forbidden: configure an admin token (-admin-token or HILODB_ADMIN_TOKEN)", http.StatusForbidden)
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		h(w, r)
	}
}

func adminTokenOK(r *http.Request, want string) bool {
	got := ""
	if _, pw, ok := r.BasicAuth(); ok {
		got = pw
	} else if t, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		got = t
	}
	return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

// Overview is what the dashboard shows: the stored state of every database
// and the clients connected now.
type Overview struct {
	ServerTag string         `json:"serverTag"`
	Healthy   bool           `json:"healthy"`
	Problem   string         `json:"problem,omitempty"`
	Databases []DatabaseInfo `json:"databases"`
	Clients   []ClientInfo   `json:"clients"`
	Nodes     int            `json:"nodes"` // node tags handed out or registered
}

// DatabaseInfo is one database's counters.
type DatabaseInfo struct {
	Name       string           `json:"name"`
	Created    string           `json:"created"`
	Hilo       map[string]int64 `json:"hilo"`       // HiLo tag → Max
	Identities map[string]int64 `json:"identities"` // identity name → value
	Sequence   int64            `json:"sequence"`   // last change sequence (replicated writes)
}

// ClientInfo is one open connection.
type ClientInfo struct {
	Remote   string `json:"remote"`
	Database string `json:"db"`
	Node     string `json:"node"`
	Since    string `json:"since"`
	Requests int64  `json:"requests"`
}

// overview reads the stored state and the open connections.
func (s *Server) overview() (*Overview, error) {
	ov := &Overview{ServerTag: s.cfg.ServerTag, Healthy: true}
	if err := s.store.Err(); err != nil {
		ov.Healthy, ov.Problem = false, err.Error()
	}
	dbs := map[string]*DatabaseInfo{}
	get := func(name string) *DatabaseInfo {
		d := dbs[name]
		if d == nil {
			d = &DatabaseInfo{Name: name, Hilo: map[string]int64{}, Identities: map[string]int64{}}
			dbs[name] = d
		}
		return d
	}
	// Only the counters' key ranges are read, never the documents.
	visit := func(tx storage.Tx, prefix string, fn func(key, val string)) error {
		return tx.AscendRange("", prefix, prefix+"\xff", func(key, val string) bool {
			fn(key, val)
			return true
		})
	}
	counter := func(key, val string) {
		db, name, ok := strings.Cut(key[strings.IndexByte(key, '/')+1:], "/")
		if !ok {
			return
		}
		v, _ := storage.CounterValue(key, val)
		if strings.HasPrefix(key, storage.HiloPrefix) {
			get(db).Hilo[name] = v
		} else {
			get(db).Identities[name] = v
		}
	}
	err := s.store.View(func(tx storage.Tx) error {
		return errors.Join(
			visit(tx, storage.DBPrefix, func(key, val string) { get(key[len(storage.DBPrefix):]).Created = val }),
			visit(tx, storage.NodePrefix, func(string, string) { ov.Nodes++ }),
			visit(tx, storage.HiloPrefix, counter),
			visit(tx, storage.IdentPrefix, counter),
			visit(tx, storage.SeqCounterPrefix, func(key, val string) {
				n, _ := strconv.ParseInt(val, 10, 64)
				get(key[len(storage.SeqCounterPrefix):]).Sequence = n
			}),
		)
	})
	if err != nil {
		return nil, err
	}
	if es, ok := s.store.(*storage.Etcd); ok {
		// No counter on etcd: the last sequence is the newest mod revision
		// among the database's documents.
		for name, d := range dbs {
			if d.Sequence, err = es.LastSeq(name); err != nil {
				return nil, err
			}
		}
	}
	for _, d := range dbs {
		ov.Databases = append(ov.Databases, *d)
	}
	sort.Slice(ov.Databases, func(i, j int) bool { return ov.Databases[i].Name < ov.Databases[j].Name })
	s.connsMu.Lock()
	for c := range s.conns {
		ov.Clients = append(ov.Clients, ClientInfo{Remote: c.remote, Database: c.db, Node: c.node,
			Since: c.since.UTC().Format(time.RFC3339), Requests: c.requests.Load()})
	}
	s.connsMu.Unlock()
	sort.Slice(ov.Clients, func(i, j int) bool {
		a, b := ov.Clients[i], ov.Clients[j]
		if a.Database != b.Database {
			return a.Database < b.Database
		}
		return a.Node < b.Node
	})
	return ov, nil
}

func (s *Server) serveDashboardJSON(w http.ResponseWriter, r *http.Request) {
	ov, err := s.overview()
	if err != nil {
		s.log.Error("dashboard", "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(ov)
}

func (s *Server) serveDashboard(w http.ResponseWriter, r *http.Request) {
	ov, err := s.overview()
	if err != nil {
		s.log.Error("dashboard", "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
	if err := dashboardPage.Execute(w, ov); err != nil {
		s.log.Error("render dashboard", "err", err)
	}
}

// serveBackup streams a consistent copy of the data, in data-file format,
// for `hilodb-server restore`.
func (s *Server) serveBackup(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Disposition", `attachment; filename="hilodb-backup-`+time.Now().UTC().Format("20060102T150405Z")+`.db"`)
	if err := s.store.Backup(w); err != nil {
		s.log.Error("backup", "err", err)
		http.Error(w, "backup failed", http.StatusInternalServerError)
		return
	}
	s.log.Info("backup taken", "remote", r.RemoteAddr)
}

var dashboardPage = template.Must(template.New("dashboard").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>hilodb server {{.ServerTag}}</title>
<style>body{font:14px system-ui,sans-serif;margin:2em}table{border-collapse:collapse;margin:.5em 0 1.5em}
td,th{border:1px solid #ccc;padding:.25em .6em;text-align:left}td.n{text-align:right;font-variant-numeric:tabular-nums}
.bad{color:#b00;font-weight:bold}</style></head><body>
<h1>hilodb sync server {{.ServerTag}}</h1>
{{if .Healthy}}<p>Store healthy.</p>{{else}}<p class="bad">Store failed: {{.Problem}}</p>{{end}}
<p>{{len .Databases}} databases, {{.Nodes}} node tags handed out, {{len .Clients}} clients connected. Read-only; reload to refresh.</p>
{{range .Databases}}<h2>Database {{.Name}}</h2><p>Created {{.Created}}. Change sequence {{.Sequence}}.</p>
<table><tr><th>HiLo tag</th><th>Max</th></tr>{{range $k, $v := .Hilo}}<tr><td>{{$k}}</td><td class="n">{{$v}}</td></tr>{{else}}<tr><td colspan="2">none</td></tr>{{end}}</table>
<table><tr><th>Identity</th><th>Value</th></tr>{{range $k, $v := .Identities}}<tr><td>{{$k}}</td><td class="n">{{$v}}</td></tr>{{else}}<tr><td colspan="2">none</td></tr>{{end}}</table>
{{end}}
<h2>Connected clients</h2>
<table><tr><th>Database</th><th>Node tag</th><th>Remote</th><th>Since</th><th>Requests</th></tr>
{{range .Clients}}<tr><td>{{.Database}}</td><td>{{.Node}}</td><td>{{.Remote}}</td><td>{{.Since}}</td><td class="n">{{.Requests}}</td></tr>{{else}}<tr><td colspan="5">none</td></tr>{{end}}
</table></body></html>
`))
