package aqlcursor

import (
	"errors"
	"strconv"
	"sync"
	"time"
)

// Errors of a Table.
var (
	// ErrNotFound: no such cursor (fetched to its end, deleted, expired,
	// or another database's).
	ErrNotFound = errors.New("cursor not found")
	// ErrTooMany: the table holds as many cursors, or bytes, as it may.
	ErrTooMany = errors.New("too many open cursors")
)

// Limits bound a Table.
type Limits struct {
	PerDB      int           // open cursors per database
	Total      int           // open cursors in all
	Bytes      int           // result bytes held in all
	DefaultTTL time.Duration // how long an idle cursor lives unless the request says
	MaxTTL     time.Duration // the longest a request may ask for
}

// DefaultLimits are the bounds docs/http.md states.
var DefaultLimits = Limits{PerDB: 64, Total: 1024, Bytes: 256 << 20, DefaultTTL: 30 * time.Second, MaxTTL: 10 * time.Minute}

// Table holds the open cursors: results not yet fetched. An idle cursor
// expires after its ttl; a cursor fetched to its end is dropped at once.
type Table struct {
	mu      sync.Mutex
	lim     Limits
	now     func() time.Time
	seq     int64
	cursors map[string]*cursor
	perDB   map[string]int
	bytes   int
}

type cursor struct {
	db       string
	rows     [][]byte
	pos      int
	batch    int
	count    int
	hasCount bool
	stats    stats
	ttl      time.Duration
	expires  time.Time
	size     int
}

type stats struct {
	scanned   int
	fullCount int
	full      bool
}

// NewTable returns an empty Table with the limits lim; now is the clock
// (time.Now when nil).
func NewTable(lim Limits, now func() time.Time) *Table {
	if now == nil {
		now = time.Now
	}
	return &Table{lim: lim, now: now, cursors: map[string]*cursor{}, perDB: map[string]int{}}
}

// sweep drops expired cursors; t.mu is held.
func (t *Table) sweep(now time.Time) {
	for id, c := range t.cursors {
		if now.After(c.expires) {
			t.drop(id, c)
		}
	}
}

func (t *Table) drop(id string, c *cursor) {
	delete(t.cursors, id)
	t.perDB[c.db]--
	if t.perDB[c.db] <= 0 {
		delete(t.perDB, c.db)
	}
	t.bytes -= c.size
}

// Open answers a query's first batch (the body of ArangoDB's 201) and
// keeps the rest in a cursor. It fails with ErrTooMany when a cursor is
// needed and the table is full.
func (t *Table) Open(db string, req Request, res Result) ([]byte, error) {
	c := &cursor{db: db, rows: res.Rows, batch: req.BatchSize, count: len(res.Rows), hasCount: req.Count,
		stats: stats{scanned: res.Scanned, fullCount: res.FullCount, full: req.FullCount}}
	if c.batch <= 0 {
		c.batch = DefaultBatchSize
	}
	if len(c.rows) <= c.batch {
		return c.body(201, ""), nil
	}
	for _, r := range c.rows[c.batch:] {
		c.size += len(r) + 1
	}
	c.ttl = t.lim.DefaultTTL
	if req.TTL > 0 {
		c.ttl = min(time.Duration(req.TTL*float64(time.Second)), t.lim.MaxTTL)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	t.sweep(now)
	if t.perDB[db] >= t.lim.PerDB || len(t.cursors) >= t.lim.Total || t.bytes+c.size > t.lim.Bytes {
		return nil, ErrTooMany
	}
	t.seq++
	id := strconv.FormatInt(t.seq, 10)
	c.expires = now.Add(c.ttl)
	t.cursors[id] = c
	t.perDB[db]++
	t.bytes += c.size
	return c.body(201, id), nil
}

// Next answers the next batch of db's cursor id (the body of ArangoDB's
// 200); a cursor fetched to its end is dropped.
func (t *Table) Next(db, id string) ([]byte, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	t.sweep(now)
	c, ok := t.cursors[id]
	if !ok || c.db != db {
		return nil, ErrNotFound
	}
	c.pos += c.batch
	for _, r := range c.rows[c.pos:min(c.pos+c.batch, len(c.rows))] {
		c.size -= len(r) + 1
		t.bytes -= len(r) + 1
	}
	c.expires = now.Add(c.ttl)
	if c.pos+c.batch >= len(c.rows) {
		t.drop(id, c) // its last batch: nothing is held for it now
		return c.body(200, ""), nil
	}
	return c.body(200, id), nil
}

// Drop deletes db's cursor id.
func (t *Table) Drop(db, id string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.sweep(t.now())
	c, ok := t.cursors[id]
	if !ok || c.db != db {
		return ErrNotFound
	}
	t.drop(id, c)
	return nil
}

// Len returns the open cursors.
func (t *Table) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.cursors)
}

// body renders the batch at c.pos: ArangoDB's cursor answer. id is ""
// when no batch follows.
func (c *cursor) body(code int, id string) []byte {
	end := min(c.pos+c.batch, len(c.rows))
	b := make([]byte, 0, 256)
	b = append(b, `{"result":[`...)
	for i, r := range c.rows[c.pos:end] {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, r...)
	}
	b = append(b, `],"hasMore":`...)
	b = strconv.AppendBool(b, id != "")
	if id != "" {
		b = append(b, `,"id":`...)
		b = strconv.AppendQuote(b, id)
	}
	if c.hasCount {
		b = append(b, `,"count":`...)
		b = strconv.AppendInt(b, int64(c.count), 10)
	}
	b = append(b, `,"extra":{"stats":{"writesExecuted":0,"writesIgnored":0,"scannedFull":`...)
	b = strconv.AppendInt(b, int64(c.stats.scanned), 10)
	b = append(b, `,"scannedIndex":0,"filtered":0,"httpRequests":0,"executionTime":0,"peakMemoryUsage":0`...)
	if c.stats.full {
		b = append(b, `,"fullCount":`...)
		b = strconv.AppendInt(b, int64(c.stats.fullCount), 10)
	}
	b = append(b, `},"warnings":[]},"cached":false,"error":false,"code":`...)
	b = strconv.AppendInt(b, int64(code), 10)
	return append(b, '}')
}
