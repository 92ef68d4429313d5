package syncserver

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/hilodb/hilodb/core"
	"github.com/hilodb/hilodb/errcode"
	"github.com/hilodb/hilodb/syncserver/storage"
)

// Ids the server makes for RavenDB's clients: "prefix|" is prefix + "/" +
// the identity's next value, "prefix/" is prefix + "/" + 19 digits of the
// server's own sequence + "-" + the server's tag. Both are made inside the
// write's transaction, after every check, so a refused or oversized write
// uses up no number; and a made id never lands on a document that exists
// (or did: a tombstone), whoever wrote it: the counter skips past it.

// maxMintSkip bounds how many taken ids one made id skips before the write
// fails: a long run of documents at the counter's next values means the
// counter is behind them and should be seeded past them.
const maxMintSkip = 10_000

// Mintable reports whether id asks the server to make the id (it ends in
// "|" or "/"), and checks its prefix: segments of UTF-8 without control
// characters or '|', none empty ("/", "//" and "a|/" are refused).
func Mintable(id string) (bool, error) {
	switch {
	case strings.HasSuffix(id, "|"):
		return true, CheckTag(strings.TrimSuffix(id, "|"))
	case strings.HasSuffix(id, "/"):
		prefix := strings.TrimSuffix(id, "/")
		if !utf8.ValidString(prefix) {
			return true, BadRequest("id prefix %s is not UTF-8", Quote(Truncate(prefix, 100)))
		}
		for _, seg := range strings.Split(prefix, "/") {
			if seg == "" || strings.ContainsFunc(seg, func(r rune) bool { return r < 0x20 || r == 0x7f || r == '|' }) {
				return true, &DocError{Code: errcode.IllegalKey, Msg: "illegal id prefix " + Quote(Truncate(id, 100)) + ": its segments must be non-empty, without '|' or control characters"}
			}
		}
		return true, nil
	}
	return false, nil
}

// minter makes the ids of one write transaction: it reads each counter
// once, and writes what it used only when the write commits (done).
type minter struct {
	s      *Server
	tx     storage.Tx
	db     string
	taken  map[string]bool  // ids the batch writes by name
	idents map[string]int64 // identity name → last value used
	seq    int64            // the server sequence's last value used, -1 unread
	used   int              // identity values used
}

func newMinter(s *Server, tx storage.Tx, db string, ws []DocWrite) *minter {
	m := &minter{s: s, tx: tx, db: db, taken: map[string]bool{}, idents: map[string]int64{}, seq: -1}
	for _, w := range ws {
		if w.Mint == "" {
			m.taken[w.ID] = true
		}
	}
	return m
}

// mint makes the id that req ("prefix|" or "prefix/") asks for. A
// *DocError fails the item; any other error the transaction.
func (m *minter) mint(req string) (string, error) {
	for skip := 0; skip < maxMintSkip; skip++ {
		id, err := m.next(req)
		if err != nil {
			return "", err
		}
		if m.taken[id] {
			continue
		}
		if _, found, err := storage.GetRecord(m.tx, m.db, id); err != nil {
			return "", err
		} else if found {
			continue
		}
		m.taken[id] = true
		return id, nil
	}
	return "", &DocError{Code: errcode.UniqueConstraint, Msg: "the next " + strconv.Itoa(maxMintSkip) + " ids of " + Quote(Truncate(req, 100)) + " are all taken; seed its counter past them"}
}

// next advances req's counter by one and returns the id it makes.
func (m *minter) next(req string) (string, error) {
	if name, ok := strings.CutSuffix(req, "|"); ok {
		v, ok := m.idents[name]
		if !ok {
			var err error
			if v, err = storage.GetInt(m.tx, storage.IdentityKey(m.db, name)); err != nil {
				return "", err
			}
		}
		if v >= storage.MaxSafeNumber {
			return "", &DocError{Code: errcode.OutOfKeys, Msg: "identity " + Quote(name) + " has no values left"}
		}
		m.idents[name] = v + 1
		m.used++
		return name + "/" + strconv.FormatInt(v+1, 10), nil
	}
	if m.seq < 0 {
		v, err := storage.GetInt(m.tx, storage.SrvSeqPrefix+m.db)
		if err != nil {
			return "", err
		}
		m.seq = v
	}
	if m.seq >= storage.MaxSafeNumber {
		return "", &DocError{Code: errcode.OutOfKeys, Msg: "the server's id sequence has no values left"}
	}
	m.seq++
	return core.FormatNodeSeqID(req, uint64(m.seq), m.s.cfg.ServerTag), nil
}

// done writes the counters the batch used; call it only when the batch's
// documents are written too.
func (m *minter) done() error {
	for name, v := range m.idents {
		if err := storage.SetInt(m.tx, storage.IdentityKey(m.db, name), v); err != nil {
			return err
		}
	}
	if m.seq >= 0 {
		if err := storage.SetInt(m.tx, storage.SrvSeqPrefix+m.db, m.seq); err != nil {
			return err
		}
	}
	return nil
}
