package database

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/hilodb/hilodb/idgen"
)

// Meta keeps what a DB needs beside its documents: the node tag the server
// gave it, and each HiLo tag's journal entry (its current range, how far it
// is handed out, its reserve), so ids go on after a reopen without a lease
// and are never handed out twice. A Storage that implements Meta keeps a
// DB's ranges across sessions; without it, a DB gives unused numbers back
// to the server when it closes.
type Meta interface {
	// LoadMeta returns the node tag ("" for none) and the journal entry of
	// every HiLo tag saved.
	LoadMeta() (node string, ranges map[string][]byte, err error)
	// SaveNode keeps node; it returns once node is durable.
	SaveNode(node string) error
	// SaveRange replaces tag's journal entry with entry; it returns once
	// entry is durable, and a failed save leaves the previous one.
	SaveRange(tag string, entry []byte) error
}

// rangeEntry is one tag's journal entry as Meta keeps it (JSON).
type rangeEntry struct {
	Range   idgen.Range   `json:"range"`
	Mark    int64         `json:"mark"`
	Reserve []idgen.Range `json:"reserve,omitempty"`
}

// rangeJournal is the idgen.Journal of a DB, over its Meta.
type rangeJournal struct {
	meta Meta

	mu     sync.Mutex
	ranges map[string]rangeEntry
}

var _ idgen.Journal = (*rangeJournal)(nil)

func newRangeJournal(m Meta, saved map[string][]byte) (*rangeJournal, error) {
	j := &rangeJournal{meta: m, ranges: make(map[string]rangeEntry, len(saved))}
	for tag, b := range saved {
		var e rangeEntry
		if err := json.Unmarshal(b, &e); err != nil {
			return nil, fmt.Errorf("load HiLo range of %q: %w", tag, err)
		}
		j.ranges[tag] = e
	}
	return j, nil
}

// SaveRanges implements idgen.Journal.
func (j *rangeJournal) SaveRanges(tag string, rs idgen.Ranges) error {
	e := rangeEntry{Range: rs.Current, Mark: rs.Mark, Reserve: rs.Reserve}
	b, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("encode HiLo range: %w", err)
	}
	if err := j.meta.SaveRange(tag, b); err != nil {
		return err
	}
	j.mu.Lock()
	j.ranges[tag] = e
	j.mu.Unlock()
	return nil
}

// LoadRanges implements idgen.Journal.
func (j *rangeJournal) LoadRanges(tag string) (idgen.Ranges, bool, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	e, ok := j.ranges[tag]
	return idgen.Ranges{Current: e.Range, Mark: e.Mark, Reserve: e.Reserve}, ok, nil
}

var _ Meta = (*Dir)(nil)

// LoadMeta implements Meta: files "node" and "ranges" (a JSON object of
// tag → entry).
func (d *Dir) LoadMeta() (string, map[string][]byte, error) {
	node, err := os.ReadFile(filepath.Join(d.path, "node"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", nil, fmt.Errorf("read node tag: %w", err)
	}
	ranges := map[string][]byte{}
	b, err := os.ReadFile(filepath.Join(d.path, "ranges"))
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return "", nil, fmt.Errorf("read HiLo ranges: %w", err)
	default:
		var m map[string]json.RawMessage
		if err := json.Unmarshal(b, &m); err != nil {
			return "", nil, fmt.Errorf("read HiLo ranges: %w", err)
		}
		for tag, e := range m {
			ranges[tag] = e
		}
	}
	d.metaMu.Lock()
	d.ranges = ranges
	d.metaMu.Unlock()
	return string(node), ranges, nil
}

// SaveNode implements Meta.
func (d *Dir) SaveNode(node string) error {
	return d.replace("node", []byte(node))
}

// SaveRange implements Meta: the whole ranges file is replaced.
func (d *Dir) SaveRange(tag string, entry []byte) error {
	d.metaMu.Lock()
	defer d.metaMu.Unlock()
	if d.ranges == nil {
		d.ranges = map[string][]byte{}
	}
	next := make(map[string]json.RawMessage, len(d.ranges)+1)
	for t, e := range d.ranges {
		next[t] = e
	}
	next[tag] = entry
	b, err := json.Marshal(next)
	if err != nil {
		return fmt.Errorf("encode HiLo ranges: %w", err)
	}
	if err := d.replace("ranges", b); err != nil {
		return err
	}
	d.ranges[tag] = entry
	return nil
}

// replace writes name durably: a temporary file, synced, renamed over it.
func (d *Dir) replace(name string, b []byte) error {
	tmp := filepath.Join(d.path, name+".new")
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o640)
	if err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	_, err = f.Write(b)
	if err = errors.Join(err, f.Sync(), f.Close()); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	if err := os.Rename(tmp, filepath.Join(d.path, name)); err != nil {
		return fmt.Errorf("install %s: %w", name, err)
	}
	return syncDir(d.path)
}
