package core

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unsafe"

	"github.com/hilodb/hilodb/internal/jsontext"
	"github.com/tidwall/buntdb"
)

// receiptPrefix holds receipts: rcpt/<key> → a write's sequence and results.
const receiptPrefix = "rcpt/"

// receiptKey is the context key of a *receipt.
type receiptKey struct{}

// receipt is what WithReceipt asks a write to store.
type receipt struct {
	key  string
	seq  int64
	docs bool // keep each result's New and Old (WithAnswerReceipt)
}

// Receipt is what a write made under WithReceipt stored: its sequence and,
// per document, the id written or the error it failed with.
type Receipt struct {
	Seq   int64         `json:"seq"`
	Items []ReceiptItem `json:"items"`
}

// ReceiptItem is one document's outcome in a Receipt: its Result without
// the error (ID, Key, Rev, OldRev, and, under WithAnswerReceipt, New and
// Old when the write was asked to return them), or the Code, Num, Message,
// Key and Rev of its error.
// They are what a collection write's answer is rebuilt from (js/host.js):
// the stored document may have changed since, and the old one is gone.
type ReceiptItem struct {
	ID      string          `json:"id,omitempty"`
	Key     string          `json:"key,omitempty"`
	Rev     string          `json:"rev,omitempty"`
	OldRev  string          `json:"oldRev,omitempty"`
	New     json.RawMessage `json:"new,omitempty"`
	Old     json.RawMessage `json:"old,omitempty"`
	Code    string          `json:"code,omitempty"`
	Num     int             `json:"num,omitempty"`
	Message string          `json:"message,omitempty"`
}

// WithReceipt returns a context under which a document write (Put,
// SaveBatch, DeleteContext, the collection writes Insert, InsertMany,
// Replace, ReplaceMany, Update, UpdateMany, Remove, RemoveMany, and
// CreateCollectionContext) also stores, in
// that same transaction, a receipt under key: seq and each document's
// outcome. Whoever made the write can then tell, after losing its answer
// (the process that ran it was killed), whether it was made: it was if and
// only if ReceiptOf(key) holds seq. A later write under the same key
// replaces the receipt. Receipts are local: never pushed, never in the
// change feed.
//
// The receipt keeps each document's id, key and revisions, not the
// document: Put and InsertMany under ReturnNew (the wasm bridge's put and
// putMany) answer again by reading the store. WithAnswerReceipt keeps the
// documents too.
func WithReceipt(ctx context.Context, key string, seq int64) context.Context {
	return context.WithValue(ctx, receiptKey{}, &receipt{key: key, seq: seq})
}

// WithAnswerReceipt is WithReceipt for a write whose answer must be rebuilt
// from its receipt alone: the receipt also keeps each result's New and Old
// (when the write was asked to return them), the documents as they were
// written and as they were before it, which the store may no longer hold.
func WithAnswerReceipt(ctx context.Context, key string, seq int64) context.Context {
	return context.WithValue(ctx, receiptKey{}, &receipt{key: key, seq: seq, docs: true})
}

// storeReceipt writes ctx's receipt, if any, for results in tx.
func storeReceipt(ctx context.Context, tx *txn, results []Result) error {
	rc, ok := ctx.Value(receiptKey{}).(*receipt)
	if !ok {
		return nil
	}
	// Built by hand: a receipt is written with every put of a shared store,
	// and encoding/json's reflection costs more than the rest of it.
	// Sized for what it will hold: a bulk write's receipt is about a
	// megabyte, and growing it would allocate and copy it twice more.
	size := 32
	for _, res := range results {
		// {"id":"…","key":"…","rev":"…"}, and ,"oldRev":"…" when there
		// is one (an error's text makes it grow).
		size += 28 + len(res.ID) + len(res.Key) + len(res.Rev)
		if res.OldRev != "" {
			size += 12 + len(res.OldRev)
		}
		if rc.docs {
			size += 14 + len(res.New) + len(res.Old)
		}
	}
	text := make([]byte, 0, size)
	text = append(text, `{"seq":`...)
	text = strconv.AppendInt(text, rc.seq, 10)
	text = append(text, `,"items":[`...)
	for i, res := range results {
		if i > 0 {
			text = append(text, ',')
		}
		if res.Err == nil {
			// A silent result has no id: the write's options tell it.
			text = append(text, `{"id":`...)
			text = jsontext.AppendString(text, res.ID)
			text = appendField(text, "key", res.Key)
			text = appendField(text, "rev", res.Rev)
			text = appendField(text, "oldRev", res.OldRev)
			// Only there when the write was asked to return them and its
			// answer is rebuilt from the receipt: the old document cannot be
			// read again once it is replaced.
			if rc.docs {
				text = appendRaw(text, "new", res.New)
				text = appendRaw(text, "old", res.Old)
			}
			text = append(text, '}')
			continue
		}
		text = append(text, `{"code":`...)
		text = jsontext.AppendString(text, res.Err.Code)
		text = append(text, `,"num":`...)
		text = strconv.AppendInt(text, int64(res.Err.Num), 10)
		text = append(text, `,"message":`...)
		text = jsontext.AppendString(text, res.Err.Message)
		text = appendField(text, "key", res.Err.Key)
		text = appendField(text, "rev", res.Err.Rev)
		text = append(text, '}')
	}
	text = append(text, "]}"...)
	// text is not written again: the stored value is its bytes rather
	// than a copy (a bulk write's receipt is most of a megabyte), unless
	// it grew past its estimate and would keep much room it does not use.
	var value string
	if cap(text)-len(text) <= len(text)/8 {
		value = unsafe.String(unsafe.SliceData(text), len(text))
	} else {
		value = string(text)
	}
	_, _, err := tx.Set(receiptPrefix+rc.key, value, nil)
	return err
}

// appendField appends ,"name":"value" to text, nothing for an empty value.
func appendField(text []byte, name, value string) []byte {
	if value == "" {
		return text
	}
	return jsontext.AppendString(appendName(text, name), value)
}

// appendRaw appends ,"name":raw to text, nothing for an empty raw (JSON
// text, as a write's Result holds it).
func appendRaw(text []byte, name string, raw json.RawMessage) []byte {
	if len(raw) == 0 {
		return text
	}
	return append(appendName(text, name), raw...)
}

// appendName appends ,"name": to text.
func appendName(text []byte, name string) []byte {
	text = append(text, ',', '"')
	text = append(text, name...)
	return append(text, '"', ':')
}

// ReceiptOf returns the receipt stored under key; ok is false when there is
// none.
func (s *Store) ReceiptOf(key string) (r Receipt, ok bool, err error) {
	var text string
	err = s.view(func(tx *txn) error {
		var err error
		text, err = tx.Get(receiptPrefix + key)
		return err
	})
	if errors.Is(err, buntdb.ErrNotFound) {
		return Receipt{}, false, nil
	}
	if err != nil {
		return Receipt{}, false, fmt.Errorf("read receipt: %w", err)
	}
	if err := json.Unmarshal([]byte(text), &r); err != nil {
		return Receipt{}, false, fmt.Errorf("read receipt %q: %w", key, err)
	}
	return r, true, nil
}

// DropReceipts deletes the receipts whose key drop reports true for, in one
// transaction, and returns how many.
func (s *Store) DropReceipts(drop func(key string) bool) (int, error) {
	n := 0
	err := s.update(func(tx *txn) error {
		var keys []string
		err := tx.AscendGreaterOrEqual("", receiptPrefix, func(k, _ string) bool {
			key, ok := strings.CutPrefix(k, receiptPrefix)
			if ok && drop(key) {
				keys = append(keys, k)
			}
			return ok
		})
		if err != nil {
			return err
		}
		for _, k := range keys {
			if _, err := tx.Delete(k); err != nil {
				return err
			}
		}
		n = len(keys)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("drop receipts: %w", err)
	}
	return n, nil
}
