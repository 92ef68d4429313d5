package syncserver

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/coder/websocket"
)

// Config configures a Server. The zero value of each field means its default.
type Config struct {
	// DataDir holds the data file. Default "./data".
	DataDir string
	// ServerTag is this server's node tag, the suffix of the ids made from
	// its ranges. Default "A".
	ServerTag string
	// Tokens maps a database name to the token a client must present in
	// hello. A database not listed needs no token when Tokens is empty, and
	// is refused when it is not. With no tokens at all, only loopback
	// clients are accepted.
	Tokens map[string]string
	// AllowedOrigins are host patterns (as in websocket.AcceptOptions)
	// accepted in the Origin header of browser connections; the request's own
	// host is always accepted.
	AllowedOrigins []string
	// MaxMessageBytes bounds one websocket message. Default 8 MiB.
	MaxMessageBytes int64
	// Static, if set, serves files (the demo app) at "/".
	Static http.Handler
	// Logger receives structured logs. Default slog.Default().
	Logger *slog.Logger
}

const defaultMaxMessage = 8 << 20

// Server is the sync server: an http.Handler serving the websocket endpoint
// /v1/sync, /healthz and /metrics, over a durable store.
//
// A Server is safe for concurrent use. Close it to flush and release the
// data file.
type Server struct {
	cfg     Config
	log     *slog.Logger
	store   *store
	metrics *metrics
	mux     *http.ServeMux
	now     func() time.Time

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// New opens the data directory and returns a ready Server.
func New(cfg Config) (*Server, error) {
	if cfg.DataDir == "" {
		cfg.DataDir = "./data"
	}
	if cfg.ServerTag == "" {
		cfg.ServerTag = "A"
	}
	if !validNodeTag(cfg.ServerTag) {
		return nil, fmt.Errorf("server tag %q: want 1 to 8 upper-case letters and digits", cfg.ServerTag)
	}
	if cfg.MaxMessageBytes <= 0 {
		cfg.MaxMessageBytes = defaultMaxMessage
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	m := newMetrics()
	st, err := openStore(cfg.DataDir, m)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{cfg: cfg, log: cfg.Logger, store: st, metrics: m, now: time.Now, ctx: ctx, cancel: cancel}
	s.mux = http.NewServeMux()
	s.mux.HandleFunc("GET /v1/sync", s.serveSync)
	s.mux.HandleFunc("GET /healthz", s.serveHealth)
	s.mux.HandleFunc("GET /metrics", s.serveMetrics)
	if cfg.Static != nil {
		s.mux.Handle("/", cfg.Static)
	}
	if len(cfg.Tokens) == 0 {
		s.log.Warn("no tokens configured: accepting loopback clients only")
	}
	return s, nil
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// Close ends every connection and closes the data file.
func (s *Server) Close(ctx context.Context) error {
	s.cancel()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		return fmt.Errorf("close server: %w", ctx.Err())
	}
	return s.store.close()
}

func (s *Server) serveHealth(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	fmt.Fprintln(w, "ok")
}

func (s *Server) serveSync(w http.ResponseWriter, r *http.Request) {
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{OriginPatterns: s.cfg.AllowedOrigins})
	if err != nil {
		s.metrics.countError("bad_handshake")
		return // Accept has written the HTTP error
	}
	s.wg.Add(1)
	defer s.wg.Done()
	c.SetReadLimit(s.cfg.MaxMessageBytes)
	s.metrics.connections.Add(1)
	defer s.metrics.connections.Add(-1)
	cn := &conn{srv: s, ws: c, remote: r.RemoteAddr}
	cn.serve(s.ctx)
}

// authorize checks a hello's token for db.
func (s *Server) authorize(db, token, remote string) error {
	if len(s.cfg.Tokens) == 0 {
		if isLoopback(remote) {
			return nil
		}
		return &protoError{code: "unauthorized", num: 401, msg: "this server has no tokens configured and accepts loopback clients only"}
	}
	want, ok := s.cfg.Tokens[db]
	if !ok {
		want, ok = s.cfg.Tokens["*"]
	}
	if !ok || subtle.ConstantTimeCompare([]byte(want), []byte(token)) != 1 {
		return &protoError{code: "unauthorized", num: 401, msg: "wrong or missing token for database " + db}
	}
	return nil
}

func isLoopback(remote string) bool {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// protoError is an error with a stable code, sent to the client as it is.
type protoError struct {
	code string
	num  int
	msg  string
}

func (e *protoError) Error() string { return e.msg }

func badRequest(format string, args ...any) error {
	return &protoError{code: "bad_request", num: 400, msg: fmt.Sprintf(format, args...)}
}

// asProtoError gives every error a stable code for the wire; internal
// failures get "internal" and a generic text, and are logged.
func (s *Server) asProtoError(err error) *protoError {
	var pe *protoError
	if errors.As(err, &pe) {
		return pe
	}
	if errors.Is(err, errStoreClosed) || errors.Is(err, context.Canceled) {
		return &protoError{code: "unavailable", num: 503, msg: "server is shutting down"}
	}
	s.log.Error("request failed", "err", err)
	return &protoError{code: "internal", num: 4, msg: "internal error; see the server log"}
}
