package syncserver

import (
	"strconv"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/hilodb/hilodb/internal/wire"
)

// Per-subject limits: a signed token's subject (one user, however many
// devices and tabs) holds at most Config.MaxConnsPerSubject websocket
// connections and makes at most Config.RatePerSubject requests a second
// over all of them and the HTTP doors. Static tokens and loopback clients
// have no subject and only the per-connection and per-address limits.

// subjects counts what each subject holds; safe for concurrent use.
type subjects struct {
	mu sync.Mutex
	m  map[string]*subjectState
}

type subjectState struct {
	conns    int
	tokens   float64 // rate bucket
	tokensAt time.Time
}

// get returns sub's state, made if new; s.mu is held.
func (s *subjects) get(sub string, burst float64) *subjectState {
	if s.m == nil {
		s.m = make(map[string]*subjectState)
	}
	st := s.m[sub]
	if st == nil {
		st = &subjectState{tokens: burst, tokensAt: time.Now()}
		s.m[sub] = st
	}
	return st
}

// forget drops sub's state once it holds no connection and its bucket is
// full again, so the map does not grow with every subject ever seen.
func (s *subjects) forget(sub string, st *subjectState, rate float64, now time.Time) {
	if st.conns == 0 && (rate <= 0 || st.tokens+now.Sub(st.tokensAt).Seconds()*rate >= rate) {
		delete(s.m, sub)
	}
}

// holdConn takes one of sub's connections, or fails with
// too_many_connections; release gives it back.
func (srv *Server) holdConn(sub string) (release func(), err error) {
	limit := srv.cfg.MaxConnsPerSubject
	if sub == "" || limit <= 0 {
		return func() {}, nil
	}
	s := &srv.subjects
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.get(sub, srv.cfg.RatePerSubject)
	if st.conns >= limit {
		srv.metrics.refused("subject_conns")
		srv.log.Debug("connection refused", "sub", sub, "reason", "subject_conns")
		return nil, &protoError{code: wire.CodeTooManyConnections, num: wire.NumTooManyConnections, close: websocket.StatusTryAgainLater,
			msg: "subject " + Quote(Truncate(sub, 80)) + " holds its most connections (" + strconv.Itoa(limit) + ")"}
	}
	st.conns++
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			st.conns--
			s.forget(sub, st, srv.cfg.RatePerSubject, time.Now())
			s.mu.Unlock()
		})
	}, nil
}

// allowSubject takes one request from sub's rate bucket; it reports
// false, with the rate_limited error, when the bucket is empty.
func (srv *Server) allowSubject(sub string) *protoError {
	rate := srv.cfg.RatePerSubject
	if sub == "" || rate <= 0 {
		return nil
	}
	s := &srv.subjects
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.get(sub, rate)
	st.tokens = min(rate, st.tokens+now.Sub(st.tokensAt).Seconds()*rate)
	st.tokensAt = now
	if st.tokens < 1 {
		srv.metrics.refused("subject_rate")
		return &protoError{code: wire.CodeRateLimited, num: wire.NumRateLimited,
			msg: "too many requests for subject " + Quote(Truncate(sub, 80)) + "; slow down"}
	}
	st.tokens--
	if st.conns == 0 {
		s.forget(sub, st, rate, now)
	}
	return nil
}

// subjectOf is the subject of a client's access, empty without a signed token.
func subjectOf(a access) string {
	if a.grant == nil {
		return ""
	}
	return a.grant.Subject
}

// allowSubject is allowSubject for the connection's subject.
func (c *conn) allowSubject() *protoError {
	if c.srv.cfg.RatePerSubject <= 0 {
		return nil
	}
	c.srv.connsMu.Lock()
	sub := subjectOf(c.acc)
	c.srv.connsMu.Unlock()
	return c.srv.allowSubject(sub)
}
