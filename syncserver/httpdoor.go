package syncserver

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/hilodb/hilodb/errcode"
	"github.com/hilodb/hilodb/syncserver/storage"
)

// The HTTP doors (RavenDB's and ArangoDB's APIs) reach the same store as
// the websocket protocol and pass the same guards: the Host check of
// ServeHTTP, the Origin allow-list, the database's token (a Bearer token,
// or the password of Basic auth, which arangojs sends), loopback-only
// without tokens, the connection limits (a request in flight counts as a
// connection), the message size and JSON depth limits, the buffered-bytes
// budget, and the request and error metrics.

// Door adds an HTTP door's routes to mux (Config.Doors).
type Door func(s *Server, mux *http.ServeMux)

// Request is a request that passed the guards.
type Request struct {
	*http.Request
	DB   string
	Data []byte // the whole body, checked: UTF-8, within size and depth
	// Touch records db as existing, as the token allows (the door does it
	// for every method but GET and HEAD; a GET that changes state calls it).
	Touch func() error
}

// DoorErrors writes a door's error bodies in its own shape.
type DoorErrors func(w http.ResponseWriter, c errcode.Code, msg string)

// Guard wraps h with the guards every door passes: the Host and Origin
// rules, the database name, its token or client certificate and role,
// the connection and rate limits, the body's size, budget, time, UTF-8
// and JSON depth, and the request and error metrics. dbOf names the
// database of a request; name is the door's metrics label; fail writes a
// refusal in the door's own shape. Without readsBody the body is neither
// read nor checked (an answer that does not depend on it, such as an
// unknown path's).
func (s *Server) Guard(name string, dbOf func(r *http.Request) string, fail DoorErrors, readsBody bool, h func(w http.ResponseWriter, r *Request)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.metrics.requests.Add(1)
		s.metrics.countDoor(name)
		refuse := func(c errcode.Code, msg string) {
			s.metrics.countError(c.Name)
			fail(w, c, msg)
		}
		release, why := s.admitHTTP(r)
		if why != "" {
			w.Header().Set("Retry-After", "5")
			refuse(errcode.TooManyConnections, why+"; try again later")
			return
		}
		defer release()
		if origin := r.Header.Get("Origin"); origin != "" && !s.originAllowed(origin, r.Host) {
			refuse(errcode.ForbiddenOrigin, "origin "+Quote(origin)+" is not allowed on this server")
			return
		}
		db := dbOf(r)
		if !storage.ValidDBName(db) {
			refuse(errcode.IllegalName, "illegal database name "+Quote(Truncate(db, 80))+": want a letter, then letters, digits, _ or -, at most 64 bytes")
			return
		}
		acc, err := s.authorizeRequest(db, r)
		if err != nil {
			pe := s.asProtoError(err)
			refuse(codeOf(pe.code), pe.msg)
			return
		}
		if pe := s.allowSubject(subjectOf(acc)); pe != nil {
			refuse(errcode.RateLimited, pe.msg)
			return
		}
		r = r.WithContext(withRole(r.Context(), acc.role))
		if !readsBody {
			h(w, &Request{Request: r, DB: db})
			return
		}
		body, held, c, msg := s.readBody(w, r, db)
		defer held.give()
		if msg != "" {
			if c == errcode.BodyTimeout {
				w.Header().Set("Connection", "close")
			}
			refuse(c, msg)
			return
		}
		if c, msg := checkStrings(r, body); msg != "" {
			refuse(c, msg)
			return
		}
		// A GET or HEAD changes nothing, not even the list of databases:
		// a page can send one cross-site without asking (hilo/next, which
		// leases, checks a header of its own and records its database).
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			if err := s.touchDBFor(r.Context(), db, acc); err != nil {
				pe := s.asProtoError(err)
				refuse(codeOf(pe.code), pe.msg)
				return
			}
		}
		touch := func() error { return s.touchDBFor(r.Context(), db, acc) }
		h(w, &Request{Request: r, DB: db, Data: body, Touch: touch})
	}
}

// admitHTTP counts a request against the connection limits; why says why
// it is refused. release gives its place back.
func (s *Server) admitHTTP(r *http.Request) (release func(), why string) {
	addr := clientIP(r)
	s.connsMu.Lock()
	defer s.connsMu.Unlock()
	switch {
	case s.closed:
		return nil, "the server is shutting down"
	case s.open >= s.cfg.MaxConns:
		return nil, "the server holds its most connections (" + strconv.Itoa(s.cfg.MaxConns) + ")"
	case s.perAddr[addr] >= s.cfg.MaxConnsPerAddr:
		return nil, "this address holds its most connections (" + strconv.Itoa(s.cfg.MaxConnsPerAddr) + ")"
	}
	s.open++
	s.perAddr[addr]++
	return func() {
		s.connsMu.Lock()
		s.open--
		if s.perAddr[addr]--; s.perAddr[addr] <= 0 {
			delete(s.perAddr, addr)
		}
		s.connsMu.Unlock()
	}, ""
}

// tokenOf reads a request's token: Authorization "Bearer T", or the
// password of "Basic" credentials.
func tokenOf(r *http.Request) string {
	a := r.Header.Get("Authorization")
	if t, ok := strings.CutPrefix(a, "Bearer "); ok {
		return t
	}
	if t, ok := strings.CutPrefix(a, "bearer "); ok {
		return t
	}
	if _, pw, ok := r.BasicAuth(); ok {
		return pw
	}
	return ""
}

// codeOf returns the registered code named name; unknown names are
// internal.
func codeOf(name string) errcode.Code {
	if c, ok := errcode.ByName(name); ok {
		return c
	}
	return errcode.Internal
}

// ErrorOf is the stable code and message a door answers err with, as the
// websocket answers it: an internal failure is logged and gets a generic
// text.
func (s *Server) ErrorOf(err error) (errcode.Code, string) {
	pe := s.asProtoError(err)
	return codeOf(pe.code), pe.msg
}

// CountError counts a refusal under its code's name in /metrics.
func (s *Server) CountError(name string) { s.metrics.countError(name) }

// WriteJSON writes v as a JSON body with status.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"Message":"internal error"}`)
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// CountRequest counts a door's request that no guard counted (an answer
// made before any, such as a route the door does not serve).
func (s *Server) CountRequest(door string) {
	s.metrics.requests.Add(1)
	s.metrics.countDoor(door)
}

// Refusal is an error that the doors and the websocket answer with c and
// msg.
func Refusal(c errcode.Code, msg string) error {
	return &protoError{code: c.Name, num: c.Num, msg: msg}
}
