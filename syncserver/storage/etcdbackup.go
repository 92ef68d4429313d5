package storage

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/tidwall/buntdb"
	"go.etcd.io/etcd/api/v3/mvccpb"
)

// Backup copies every key, read at one revision, into an in-memory buntdb
// and saves it: the same format as the embedded store's backup, so it
// restores into a single server. The single server's sequence is a counter
// with an index key per sequence, which etcd does not keep (its sequence is
// the revision, shared by every document of one commit): the copy numbers
// each database's documents 1, 2, … in revision order and writes that
// index and counter. The purged mark becomes the counter when it was set,
// so every client of a restored server resyncs (as a restore makes them do
// anyway).
func (s *Etcd) Backup(w io.Writer) error {
	mem, err := buntdb.Open(":memory:")
	if err != nil {
		return fmt.Errorf("open backup buffer: %w", err)
	}
	defer mem.Close()
	type doc struct {
		db, id, value string
		rev           int64
	}
	var docs []doc
	values := map[string]string{}
	ctx := context.Background()
	err = scanAt(ctx, s.cli, s.prefix, func(kv *mvccpb.KeyValue) {
		key := string(kv.Key[len(s.prefix):])
		switch {
		case strings.HasPrefix(key, "rdoc/"):
			db, id, ok := strings.Cut(key[len("rdoc/"):], "/")
			if ok {
				docs = append(docs, doc{db: db, id: id, value: string(kv.Value), rev: kv.ModRevision})
			}
		case strings.HasPrefix(key, "rseq/"), strings.HasPrefix(key, SeqCounterPrefix), strings.HasPrefix(key, "rlast/"):
			// Made afresh below.
		default:
			values[key] = string(kv.Value)
		}
	})
	if err != nil {
		return fmt.Errorf("copy etcd keys: %w", err)
	}
	slices.SortFunc(docs, func(a, b doc) int {
		return cmp.Or(strings.Compare(a.db, b.db), cmp.Compare(a.rev, b.rev), strings.Compare(a.id, b.id))
	})
	counters := map[string]int64{}
	err = mem.Update(func(tx *buntdb.Tx) error {
		for _, d := range docs {
			counters[d.db]++
			seq := counters[d.db]
			// A one-key view, to read the record as the server does.
			rec, _, err := GetRecord(mapTx{DocKey(d.db, d.id): d.value}, d.db, d.id)
			if err != nil {
				return err
			}
			rec.Seq = seq
			if _, _, err := tx.Set(DocKey(d.db, d.id), rec.Encode(), nil); err != nil {
				return err
			}
			if _, _, err := tx.Set(SeqKey(d.db, seq), d.id, nil); err != nil {
				return err
			}
		}
		for db, n := range counters {
			if _, _, err := tx.Set(SeqCounterKey(db), strconv.FormatInt(n, 10), nil); err != nil {
				return err
			}
			if _, ok := values[PurgedKey(db)]; ok {
				values[PurgedKey(db)] = strconv.FormatInt(n, 10)
			}
		}
		for k, v := range values {
			if _, _, err := tx.Set(k, v, nil); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("copy etcd keys: %w", err)
	}
	if err := mem.Save(w); err != nil {
		return fmt.Errorf("save backup: %w", err)
	}
	return nil
}

// mapTx is a read-only Tx over a map (Gets only).
type mapTx map[string]string

// errReadOnly refuses a write to a mapTx.
var errReadOnly = errors.New("write in a read-only view")

func (m mapTx) Get(key string, _ ...bool) (string, error) {
	if v, ok := m[key]; ok {
		return v, nil
	}
	return "", buntdb.ErrNotFound
}

func (m mapTx) Set(string, string, *buntdb.SetOptions) (string, bool, error) {
	return "", false, errReadOnly
}

func (m mapTx) Delete(string) (string, error) { return "", errReadOnly }

func (m mapTx) AscendRange(_, _, _ string, _ func(key, value string) bool) error { return nil }

func (m mapTx) AscendKeys(_ string, _ func(key, value string) bool) error { return nil }

var _ Tx = mapTx(nil)
