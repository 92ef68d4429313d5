package syncserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/hilodb/hilodb/auth"
	"github.com/hilodb/hilodb/core/revision"
	"github.com/hilodb/hilodb/errcode"
	"github.com/hilodb/hilodb/internal/wire"
	"github.com/hilodb/hilodb/syncserver/storage"
)

// Config configures a Server. The zero value of each field means its default.
type Config struct {
	// DataDir holds the data file. Default "./data".
	DataDir string
	// ServerTag is this server's node tag, the suffix of the ids made from
	// its ranges. Default "A"; on etcd (Etcd set), the tag this server took
	// before (kept in DataDir), else the first of A…Z that no live server
	// holds and no client was given.
	ServerTag string
	// Tokens maps a database name to the token a client must present in
	// hello; the name "*" matches every database without its own entry.
	// When Tokens is not empty, a database without a token is refused. With
	// no tokens at all, only loopback clients are accepted.
	Tokens map[string]string
	// Verifier checks signed tokens (JWT) issued by the app's own backend:
	// their hilodb claim gives a role per database (package auth). With
	// it, Tokens may be empty and non-loopback clients are served.
	Verifier *auth.Verifier
	// ClientCerts, if set, authorizes HTTP requests made over TLS with a
	// listed client certificate (clientcerts.go); the listener must
	// request client certificates (tls.RequestClientCert).
	ClientCerts ClientCerts
	// MaxDatabasesPerSubject bounds the databases one signed token's
	// subject makes on first use (those its claim names by {sub}).
	// Default 16.
	MaxDatabasesPerSubject int
	// MaxConnsPerSubject bounds the websocket connections one signed
	// token's subject holds at once; 0: no bound.
	MaxConnsPerSubject int
	// RatePerSubject is the requests per second one signed token's subject
	// may make over all its connections and the HTTP doors (a burst of as
	// many); 0: no limit.
	RatePerSubject float64
	// AdminToken protects /dashboard and /admin/backup. Without it they are
	// served to loopback clients only, and only when Tokens is empty.
	AdminToken string
	// Databases, if not empty, are the only database names served; hello
	// with another name is refused (database_not_found). Empty: any valid
	// name, created on first use.
	Databases []string
	// AllowedOrigins are host patterns (path.Match syntax, e.g.
	// "*.example.com" or "localhost:5173") accepted in the Origin header of
	// browser connections; the request's own host is always accepted.
	// Requests without an Origin header are not browsers and are judged by
	// their token.
	AllowedOrigins []string
	// AllowedHosts are host name patterns (path.Match syntax, without the
	// port) a request's Host header may name besides the loopback names
	// localhost, 127.0.0.1 and [::1]. A server without Tokens answers no
	// other Host on any route, so a web page that rebinds its own DNS name
	// to 127.0.0.1 cannot reach it; with Tokens, the Host is checked only
	// when this list is not empty.
	AllowedHosts []string
	// HelloTimeout closes a connection that has not completed hello within
	// it. Default 10 seconds.
	HelloTimeout time.Duration
	// MaxConns bounds the open websocket connections in total, and
	// MaxConnsPerAddr those from one client IP address. Defaults 10,000 and
	// 1,024; more are refused with 503 too_many_connections.
	MaxConns        int
	MaxConnsPerAddr int
	// MaxBufferedBytes bounds the bytes of incoming messages the server
	// holds at once, over all connections (partial messages included). A
	// connection whose message would go past it is closed with
	// server_busy. Default 256 MiB.
	MaxBufferedBytes int64
	// MaxBufferedPerDB bounds the bytes of HTTP request bodies the doors
	// hold at once for one database, so that one database's (one token's)
	// slow or large requests cannot take the whole of MaxBufferedBytes from
	// the others. Default a quarter of MaxBufferedBytes, and at least
	// MaxMessageBytes.
	MaxBufferedPerDB int64
	// BodyTimeout bounds the time to receive an HTTP request's body once
	// its headers are read; a body still arriving after it is refused with
	// 408 body_timeout and the connection is closed. Default 30 seconds.
	BodyTimeout time.Duration
	// AllowIdentityLowering lets identity.seed with force lower an
	// identity. Off by default: a lowered identity hands out values again,
	// so two documents could get one id. Operators lower counters offline
	// with `hilodb-server set-counter`.
	AllowIdentityLowering bool
	// MaxMessageBytes bounds one websocket message. Default 8 MiB.
	MaxMessageBytes int64
	// MaxBatch bounds the items of one request (names of
	// identity.nextBatch, changes of a push). Default 10,000.
	MaxBatch int
	// RateLimit is the sustained requests per second allowed on one
	// connection, RateBurst the burst above it (a token bucket). Default
	// 1000/s with a burst of 1000; a negative RateLimit turns the limit off.
	RateLimit float64
	RateBurst int
	// IdleTimeout closes a connection that sent nothing for this long
	// (clients keep quiet connections open with the ping op). Default 5
	// minutes; negative: never.
	IdleTimeout time.Duration
	// NoGroupCommit gives every transaction its own commit and fsync instead
	// of sharing them among requests that arrive together. Only for
	// measuring what group commit saves; it is much slower.
	NoGroupCommit bool
	// TombstoneTTL is how long a deleted document's tombstone stays in the
	// change feed so clients learn of the deletion. Default 30 days; a
	// client whose checkpoint is older must resync (pull's purgedSeq).
	TombstoneTTL time.Duration
	// CompactEvery is how often tombstones past TombstoneTTL are removed.
	// Default 1 hour; negative: never (CompactTombstones still works).
	CompactEvery time.Duration
	// Etcd, if not empty, lists the members of an etcd cluster (host:port
	// or URLs): the server keeps all its state there, under EtcdPrefix,
	// instead of in DataDir, so several servers with different ServerTags
	// serve the same databases (see docs/operations.md, "A cluster").
	Etcd []string
	// EtcdPrefix is the key prefix of this deployment in etcd. Default
	// "hilodb/".
	EtcdPrefix string
	// Static, if set, serves files (the demo app) at "/".
	Static http.Handler
	// Doors are the HTTP APIs served beside the websocket protocol (the
	// ArangoDB and RavenDB doors, packages arangodoor and ravendoor):
	// each adds its routes, every one wrapped in Server.Guard. Whoever
	// builds the server chooses them; none is served by default.
	Doors []Door
	// Logger receives structured logs. Default slog.Default().
	Logger *slog.Logger
}

const (
	defaultMaxMessage  = 8 << 20
	defaultMaxBatch    = 10000
	defaultRate        = 1000
	defaultIdleTimeout = 5 * time.Minute
	maxJSONDepth       = 128

	defaultHelloTimeout     = 10 * time.Second
	defaultBodyTimeout      = 30 * time.Second
	defaultMaxConns         = 10000
	defaultMaxConnsPerAddr  = 1024
	defaultMaxBufferedBytes = 256 << 20
	// helloReadLimit bounds a message before hello: a hello is tiny, and an
	// unauthenticated peer must not make the server hold more.
	helloReadLimit = 16 << 10
)

// Server is the sync server: an http.Handler serving the websocket endpoint
// /v1/sync, /healthz, /metrics, /dashboard and /admin/backup over a durable
// store.
//
// A Server is safe for concurrent use. Close it to end every connection and
// release the data file; no goroutine of the Server outlives Close.
type Server struct {
	qix     queryIndexes // the indexes of the server's queries (qindex.go)
	cfg     Config
	log     *slog.Logger
	store   storage.Store
	metrics *metrics
	mux     *http.ServeMux
	now     func() time.Time
	dbs     map[string]bool // Config.Databases; nil: any

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	hub *hub // live change subscribers
	// clock makes the revisions of writes that come through the HTTP
	// doors (clients make their own); they end in the server's tag.
	clock *revision.Clock
	// numbers are the HiLo numbers the server leases for the keys it makes.
	numbers serverNumbers

	connsMu  sync.Mutex
	conns    map[*conn]struct{}
	perAddr  map[string]int // open connections by client IP
	subjects subjects       // per-subject limits (subjects.go)
	open     int            // open connections (handshakes included)
	closed   bool

	buffered budget // bytes of incoming messages held, over all connections
	// dbBodies are the bytes of HTTP bodies held per database, each
	// bounded by MaxBufferedPerDB.
	dbBodies dbBudget
}

// New opens the data directory and returns a ready Server. A damaged data
// file is a *CorruptError.
func New(cfg Config) (*Server, error) {
	if cfg.DataDir == "" {
		cfg.DataDir = "./data"
	}
	if cfg.ServerTag == "" && len(cfg.Etcd) == 0 {
		cfg.ServerTag = "A"
	}
	if cfg.ServerTag != "" && !storage.ValidNodeTag(cfg.ServerTag) {
		return nil, fmt.Errorf("server tag %q: want 1 to 8 upper-case letters and digits", cfg.ServerTag)
	}
	if cfg.MaxMessageBytes <= 0 {
		cfg.MaxMessageBytes = defaultMaxMessage
	}
	if cfg.MaxBatch <= 0 {
		cfg.MaxBatch = defaultMaxBatch
	}
	if cfg.RateLimit == 0 {
		cfg.RateLimit = defaultRate
	}
	if cfg.RateBurst <= 0 {
		cfg.RateBurst = max(1, int(cfg.RateLimit))
	}
	if cfg.IdleTimeout == 0 {
		cfg.IdleTimeout = defaultIdleTimeout
	}
	if cfg.HelloTimeout <= 0 {
		cfg.HelloTimeout = defaultHelloTimeout
	}
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = defaultMaxConns
	}
	if cfg.MaxConnsPerAddr <= 0 {
		cfg.MaxConnsPerAddr = defaultMaxConnsPerAddr
	}
	if cfg.MaxBufferedBytes <= 0 {
		cfg.MaxBufferedBytes = defaultMaxBufferedBytes
	}
	if cfg.MaxBufferedBytes < cfg.MaxMessageBytes {
		return nil, fmt.Errorf("max buffered bytes (%d) must be at least the largest message (%d)", cfg.MaxBufferedBytes, cfg.MaxMessageBytes)
	}
	if cfg.MaxBufferedPerDB <= 0 {
		cfg.MaxBufferedPerDB = max(cfg.MaxBufferedBytes/4, cfg.MaxMessageBytes)
	}
	if cfg.BodyTimeout <= 0 {
		cfg.BodyTimeout = defaultBodyTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	var dbs map[string]bool
	if len(cfg.Databases) > 0 {
		dbs = make(map[string]bool, len(cfg.Databases))
		for _, db := range cfg.Databases {
			if !storage.ValidDBName(db) {
				return nil, fmt.Errorf("configured database %q: want a letter, then letters, digits, _ or -, at most 64 bytes", db)
			}
			dbs[db] = true
		}
	}
	for db, token := range cfg.Tokens {
		if db != "*" && !storage.ValidDBName(db) {
			return nil, fmt.Errorf("token for database %q: illegal database name", db)
		}
		if token == "" {
			return nil, fmt.Errorf("token for database %q is empty", db)
		}
	}
	for _, p := range cfg.AllowedOrigins {
		if _, err := path.Match(p, ""); err != nil {
			return nil, fmt.Errorf("origin pattern %q: %w", p, err)
		}
	}
	for _, p := range cfg.AllowedHosts {
		if _, err := path.Match(p, ""); err != nil || p == "" {
			return nil, fmt.Errorf("host pattern %q: want a host name or path.Match pattern", p)
		}
	}
	m := newMetrics()
	st, err := openStore(cfg, m)
	if err != nil {
		return nil, err
	}
	if es, ok := st.(*storage.Etcd); ok && cfg.ServerTag == "" {
		cfg.ServerTag, err = es.ChooseTag(cfg.DataDir)
		if err != nil {
			st.Close()
			return nil, err
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{cfg: cfg, log: cfg.Logger, store: st, metrics: m, now: time.Now, dbs: dbs,
		ctx: ctx, cancel: cancel, conns: make(map[*conn]struct{}), perAddr: make(map[string]int), hub: newHub(), clock: revision.NewClock(cfg.ServerTag)}
	s.buffered.limit = cfg.MaxBufferedBytes
	s.dbBodies.limit = cfg.MaxBufferedPerDB
	s.mux = http.NewServeMux()
	s.mux.HandleFunc("GET /v1/sync", s.serveSync)
	s.mux.HandleFunc("GET /healthz", s.serveHealth)
	s.mux.HandleFunc("GET /metrics", s.serveMetrics)
	s.mux.HandleFunc("GET /dashboard", s.admin(s.serveDashboard))
	s.mux.HandleFunc("GET /dashboard.json", s.admin(s.serveDashboardJSON))
	s.mux.HandleFunc("GET /admin/backup", s.admin(s.serveBackup))
	for _, d := range cfg.Doors {
		d(s, s.mux)
	}
	if cfg.Static != nil {
		s.mux.Handle("/", cfg.Static)
	}
	if !s.hasTokens() {
		s.log.Warn("no tokens configured: accepting loopback clients only")
	}
	if dbs != nil {
		s.log.Info("serving configured databases only", "databases", cfg.Databases)
	}
	if cfg.NoGroupCommit {
		s.log.Warn("group commit is off: one fsync per request")
	}
	if cfg.CompactEvery >= 0 {
		every := cfg.CompactEvery
		if every == 0 {
			every = time.Hour
		}
		s.spawn(func(ctx context.Context) { s.compactLoop(ctx, every) })
	}
	if es, ok := st.(*storage.Etcd); ok {
		if err := s.joinCluster(es); err != nil {
			cancel()
			s.wg.Wait()
			st.Close()
			return nil, err
		}
	}
	return s, nil
}

// Tag returns this server's node tag (chosen at start when Config left it
// empty on etcd).
func (s *Server) Tag() string { return s.cfg.ServerTag }

// ServeHTTP implements http.Handler. Every route first checks the Host
// header (see Config.AllowedHosts).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !s.hostAllowed(r.Host) {
		s.metrics.countError(wire.CodeForbiddenHost)
		s.log.Warn("refused request for a host name not served here", "host", Truncate(r.Host, 100), "path", Truncate(r.URL.Path, 100), "remote", r.RemoteAddr)
		httpError(w, errcode.ForbiddenHost, "host "+Quote(Truncate(r.Host, 100))+" is not served here; the operator lists allowed names with -allowed-hosts")
		return
	}
	s.mux.ServeHTTP(w, r)
}

// hostAllowed reports whether a request naming host (the Host header, port
// included) is answered.
func (s *Server) hostAllowed(host string) bool {
	if s.hasTokens() && len(s.cfg.AllowedHosts) == 0 {
		return true
	}
	name := host
	if h, _, err := net.SplitHostPort(host); err == nil {
		name = h
	}
	name = strings.TrimSuffix(strings.ToLower(strings.Trim(name, "[]")), ".")
	if name == "localhost" {
		return true
	}
	if ip := net.ParseIP(name); ip != nil && ip.IsLoopback() {
		return true
	}
	for _, p := range s.cfg.AllowedHosts {
		if ok, _ := path.Match(strings.ToLower(p), name); ok {
			return true
		}
	}
	return false
}

// httpError answers a plain HTTP request with a JSON error carrying the
// code's stable word and number, as websocket replies do, and its status.
func httpError(w http.ResponseWriter, c errcode.Code, msg string) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(c.Status)
	fmt.Fprintf(w, `{"ok":false,"error":{"code":%s,"num":%d,"message":%s}}`+"\n", Quote(c.Name), c.Num, Quote(msg))
}

// Close ends every connection and closes the data file.
func (s *Server) Close(ctx context.Context) error {
	s.connsMu.Lock()
	s.closed = true
	s.connsMu.Unlock()
	s.cancel()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		return fmt.Errorf("close server: %w", ctx.Err())
	}
	return s.store.Close()
}

// spawn runs fn in a goroutine that Close waits for; fn must return soon
// after ctx ends. It reports false, without running fn, once Close has begun.
func (s *Server) spawn(fn func(ctx context.Context)) bool {
	s.connsMu.Lock()
	defer s.connsMu.Unlock()
	if s.closed {
		return false
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		fn(s.ctx)
	}()
	return true
}

func (s *Server) serveHealth(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if err := s.store.Err(); err != nil {
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintln(w, "unhealthy:", err)
		return
	}
	fmt.Fprintln(w, "ok")
}

func (s *Server) serveSync(w http.ResponseWriter, r *http.Request) {
	s.connsMu.Lock()
	if s.closed {
		s.connsMu.Unlock()
		http.Error(w, "server is shutting down", http.StatusServiceUnavailable)
		return
	}
	addr := clientIP(r)
	switch {
	case s.open >= s.cfg.MaxConns:
		s.connsMu.Unlock()
		s.refuseConn(w, r, "the server holds its most connections ("+strconv.Itoa(s.cfg.MaxConns)+")")
		return
	case s.perAddr[addr] >= s.cfg.MaxConnsPerAddr:
		s.connsMu.Unlock()
		s.refuseConn(w, r, "this address holds its most connections ("+strconv.Itoa(s.cfg.MaxConnsPerAddr)+")")
		return
	}
	// Counted before the handshake, so a burst of dials cannot get past
	// the limits together.
	s.perAddr[addr]++
	s.open++
	s.wg.Add(1)
	s.connsMu.Unlock()
	defer s.wg.Done()
	defer func() {
		s.connsMu.Lock()
		s.open--
		if s.perAddr[addr]--; s.perAddr[addr] <= 0 {
			delete(s.perAddr, addr)
		}
		s.connsMu.Unlock()
	}()

	// Origins are checked below rather than by Accept, so a refused browser
	// gets an error reply it can show instead of a bare failed handshake.
	ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
	if err != nil {
		s.metrics.countError("bad_handshake")
		return // Accept has written the HTTP error
	}
	ws.SetReadLimit(helloReadLimit)
	c := newConn(s, ws, r)
	if origin := r.Header.Get("Origin"); origin != "" && !s.originAllowed(origin, r.Host) {
		s.log.Warn("refused browser connection from origin not allowed", "origin", origin, "remote", c.remote)
		c.refuse(s.ctx, 0, &protoError{code: wire.CodeForbiddenOrigin, num: wire.NumForbiddenOrigin,
			msg: "origin " + Quote(origin) + " is not allowed on this server", close: websocket.StatusPolicyViolation})
		ws.CloseNow()
		return
	}
	s.metrics.connections.Add(1)
	s.metrics.connectionsTotal.Add(1)
	s.connsMu.Lock()
	s.conns[c] = struct{}{}
	s.connsMu.Unlock()
	s.log.Debug("connection opened", "remote", c.remote)
	defer func() {
		s.connsMu.Lock()
		delete(s.conns, c)
		s.connsMu.Unlock()
		s.metrics.connections.Add(-1)
		s.log.Debug("connection closed", "remote", c.remote, "db", c.db, "node", c.node, "requests", c.requests.Load())
	}()
	c.serve(s.ctx)
}

// refuseConn answers a websocket handshake over a connection limit.
func (s *Server) refuseConn(w http.ResponseWriter, r *http.Request, why string) {
	s.metrics.countError(wire.CodeTooManyConnections)
	s.log.Warn("refused connection", "code", wire.CodeTooManyConnections, "remote", r.RemoteAddr, "reason", why)
	w.Header().Set("Retry-After", "5")
	httpError(w, errcode.TooManyConnections, why+"; try again later")
}

// clientIP is the IP address of r's peer, without the port.
func clientIP(r *http.Request) string {
	if h, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return h
	}
	return r.RemoteAddr
}

// originAllowed reports whether a browser at origin may connect to host.
func (s *Server) originAllowed(origin, host string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false
	}
	if strings.EqualFold(u.Host, host) {
		return true
	}
	h := strings.ToLower(u.Host)
	for _, p := range s.cfg.AllowedOrigins {
		p = strings.ToLower(p)
		if ok, _ := path.Match(p, h); ok {
			return true
		}
		if ok, _ := path.Match(p, strings.ToLower(origin)); ok {
			return true
		}
	}
	return false
}

// fromLoopback reports whether r comes straight from this machine: a
// loopback peer that is not a reverse proxy forwarding someone else.
func fromLoopback(r *http.Request) bool {
	for _, h := range []string{"Forwarded", "X-Forwarded-For", "X-Real-Ip"} {
		if r.Header.Get(h) != "" {
			return false
		}
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// protoError is an error with a stable code, sent to the client as it is.
// A non-zero close status closes the connection after the reply.
type protoError struct {
	code  string
	num   int
	msg   string
	close websocket.StatusCode
}

func (e *protoError) Error() string { return e.msg }

// BadRequest is a request refused as malformed (bad_request, 400), its
// message made as fmt.Sprintf makes it.
func BadRequest(format string, args ...any) error {
	return &protoError{code: wire.CodeBadRequest, num: wire.NumBadRequest, msg: fmt.Sprintf(format, args...)}
}

// asProtoError gives every error a stable code for the wire; internal
// failures get "internal" and a generic text, and are logged.
func (s *Server) asProtoError(err error) *protoError {
	var pe *protoError
	if errors.As(err, &pe) {
		return pe
	}
	if errors.Is(err, storage.ErrFailed) {
		return &protoError{code: wire.CodeUnavailable, num: wire.NumUnavailable, msg: "the server's storage failed; it accepts no changes until restarted"}
	}
	if errors.Is(err, storage.ErrUnavailable) || errors.Is(err, storage.ErrNoTag) || errors.Is(err, storage.ErrContention) {
		s.log.Warn("request failed on the cluster's store", "err", err)
		why := storage.ErrUnavailable
		switch {
		case errors.Is(err, storage.ErrNoTag):
			why = storage.ErrNoTag
		case errors.Is(err, storage.ErrContention):
			why = storage.ErrContention
		}
		return &protoError{code: wire.CodeUnavailable, num: wire.NumUnavailable, msg: why.Error() + "; try again, here or through another server"}
	}
	if errors.Is(err, storage.ErrClosed) || errors.Is(err, context.Canceled) {
		return &protoError{code: wire.CodeUnavailable, num: wire.NumUnavailable, msg: "server is shutting down"}
	}
	s.log.Error("request failed", "err", err)
	return &protoError{code: wire.CodeInternal, num: wire.NumInternal, msg: "internal error; see the server log"}
}
