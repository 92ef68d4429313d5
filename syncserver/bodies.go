package syncserver

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/hilodb/hilodb/errcode"
)

// An HTTP body is held in the server's buffered budget (-max-buffered) as
// it arrives: a request reserves what has arrived so far, in doubling steps
// from 16 KiB (a smaller Content-Length reserves just that), never more
// than its Content-Length and never the whole -max-message up front: a
// client that declares a large body and sends it slowly holds what it
// sent, not what it declared. Its database's share (-max-buffered-per-db) bounds
// what one database's requests hold together, so one token's slow requests
// cannot take the budget from the others, and BodyTimeout bounds how long a
// body may take to arrive.

// dbBudget is the buffered bytes of HTTP bodies held per database.
type dbBudget struct {
	limit int64
	mu    sync.Mutex
	used  map[string]int64
}

// take reserves n bytes for db, or reports false when db's share would
// pass its limit.
func (b *dbBudget) take(db string, n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used[db]+n > b.limit {
		return false
	}
	if b.used == nil {
		b.used = map[string]int64{}
	}
	b.used[db] += n
	return true
}

func (b *dbBudget) give(db string, n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used[db] -= n; b.used[db] <= 0 {
		delete(b.used, db)
	}
}

// bodyHold is what one request's body holds of both budgets; give hands it
// back.
type bodyHold struct {
	s  *Server
	db string
	n  int64
}

// grow reserves n more bytes, or reports false (holding what it held).
func (h *bodyHold) grow(n int64) bool {
	if !h.s.dbBodies.take(h.db, n) {
		return false
	}
	if !h.s.buffered.take(n) {
		h.s.dbBodies.give(h.db, n)
		return false
	}
	h.n += n
	return true
}

// shrink gives back what is held past n.
func (h *bodyHold) shrink(n int64) {
	if d := h.n - n; d > 0 {
		h.s.buffered.give(d)
		h.s.dbBodies.give(h.db, d)
		h.n = n
	}
}

func (h *bodyHold) give() { h.shrink(0) }

// firstChunk is what a body sent without a Content-Length reserves first.
const firstChunk = 16 << 10

// readBody reads the body within the message limit and the body deadline,
// its bytes held in the buffered budget and db's share of it until the
// caller gives them back (held.give, also when msg says why it failed).
func (s *Server) readBody(w http.ResponseWriter, r *http.Request, db string) (body []byte, held *bodyHold, c errcode.Code, msg string) {
	held = &bodyHold{s: s, db: db}
	if r.Body == nil || r.Body == http.NoBody || r.Method == http.MethodGet || r.Method == http.MethodHead {
		return nil, held, c, ""
	}
	limit := s.cfg.MaxMessageBytes
	tooBig := "the body is over the size limit of " + strconv.FormatInt(limit, 10) + " bytes"
	if r.ContentLength > limit {
		return nil, held, errcode.TooBig, tooBig
	}
	busy := func() (errcode.Code, string) {
		s.log.Warn("refused: a body would pass the buffered bytes", "remote", r.RemoteAddr, "db", db,
			"limit", s.cfg.MaxBufferedBytes, "perDB", s.cfg.MaxBufferedPerDB)
		return errcode.ServerBusy, "the server is busy; try again later"
	}
	want := r.ContentLength
	if want < 0 || want > firstChunk {
		want = min(firstChunk, limit)
	}
	if !held.grow(want) {
		c, msg := busy()
		return nil, held, c, msg
	}
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(s.cfg.BodyTimeout))
	defer func() { _ = rc.SetReadDeadline(time.Time{}) }()
	in := http.MaxBytesReader(w, r.Body, limit)
	buf := make([]byte, 0, want)
	var err error
	for {
		if len(buf) == cap(buf) {
			// Full: is there more? One byte tells, then room is made.
			var one [1]byte
			n, e := io.ReadFull(in, one[:])
			if n == 0 {
				if !errors.Is(e, io.EOF) && !errors.Is(e, io.ErrUnexpectedEOF) {
					err = e
				}
				break
			}
			more := min(max(int64(cap(buf)), firstChunk), limit+1-int64(cap(buf)))
			if r.ContentLength > int64(cap(buf)) {
				more = min(more, r.ContentLength-int64(cap(buf))) // what it declared, and no more
			}
			if !held.grow(more) {
				c, msg := busy()
				return nil, held, c, msg
			}
			buf = append(make([]byte, 0, int64(cap(buf))+more), buf...)
			buf = append(buf, one[0])
		}
		n, e := in.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if e != nil {
			if e != io.EOF {
				err = e
			}
			break
		}
	}
	held.shrink(int64(len(buf)))
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return nil, held, errcode.TooBig, tooBig
	case errors.Is(err, os.ErrDeadlineExceeded):
		s.log.Warn("refused: a body took too long to arrive", "remote", r.RemoteAddr, "db", db, "timeout", s.cfg.BodyTimeout)
		return nil, held, errcode.BodyTimeout, "the body did not arrive within " + s.cfg.BodyTimeout.String()
	case err != nil:
		return nil, held, errcode.BadRequest, "reading the body: " + err.Error()
	}
	body = bytes.TrimSpace(buf)
	if !utf8.Valid(body) {
		return nil, held, errcode.BadRequest, "the body is not UTF-8"
	}
	if !depthWithin(body, maxJSONDepth) {
		return nil, held, errcode.TooDeep, "JSON nested too deeply"
	}
	return body, held, c, ""
}
