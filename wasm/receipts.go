//go:build js && wasm

package main

import (
	"context"
	"encoding/json"
	"strings"
	"syscall/js"

	"github.com/hilodb/hilodb/core"
)

// receiptArg is the receipt a tab's write asks to be stored, from
// args[i] (its key) and args[i+1] (its sequence): how a write through a
// shared store's host can be told made or not after the host went away
// (js/host.js). nil when args[i] is undefined.
type receiptArg struct {
	key string
	seq int64
}

func receiptArgAt(args []js.Value, i int) (*receiptArg, error) {
	key := arg(args, i)
	if key.Type() == js.TypeUndefined {
		return nil, nil
	}
	seq := arg(args, i+1)
	if key.Type() != js.TypeString || key.String() == "" || seq.Type() != js.TypeNumber {
		return nil, &argError{"receipt: want a key string and a sequence number"}
	}
	return &receiptArg{key: key.String(), seq: int64(seq.Float())}, nil
}

// on returns ctx asking its write to store the receipt (ctx as it is for
// none).
func (r *receiptArg) on(ctx context.Context) context.Context {
	if r == nil {
		return ctx
	}
	return core.WithReceipt(ctx, r.key, r.seq)
}

// onAnswer is on for a collection write, whose answer (with the new and old
// documents it was asked to return) is rebuilt from its receipt alone.
func (r *receiptArg) onAnswer(ctx context.Context) context.Context {
	if r == nil {
		return ctx
	}
	return core.WithAnswerReceipt(ctx, r.key, r.seq)
}

// receiptArgs: receipt(key) resolves to the JSON text of the receipt stored
// under key ({seq, items: [{id, key, rev, oldRev?, new?, old?} | {code,
// num, message, key?, rev?}]}, core.Receipt), or undefined.
func (a *api) receiptArgs(args []js.Value) (func() (any, error), error) {
	return a.withString(args, "receipt: key", func(h *handle, key string) (any, error) {
		r, ok, err := h.store.ReceiptOf(key)
		if err != nil || !ok {
			return nil, err
		}
		text, err := json.Marshal(r)
		if err != nil {
			return nil, err
		}
		return string(text), nil
	})
}

// dropReceiptsArgs: dropReceipts(mode, prefixes) deletes the receipts
// whose key starts with one of prefixes (mode 'only') or with none of them
// (mode 'except'), and resolves to how many.
func (a *api) dropReceiptsArgs(args []js.Value) (func() (any, error), error) {
	id, err := storeNumber(args)
	if err != nil {
		return nil, err
	}
	mode, err := stringArg(args, 1, "dropReceipts: mode")
	if err != nil {
		return nil, err
	}
	if mode != "only" && mode != "except" {
		return nil, &argError{"dropReceipts: mode must be 'only' or 'except'"}
	}
	list := arg(args, 2)
	if list.Type() != js.TypeObject {
		return nil, &argError{"dropReceipts: prefixes must be an array of strings"}
	}
	prefixes := make([]string, list.Length())
	for i := range prefixes {
		p := list.Index(i)
		if p.Type() != js.TypeString {
			return nil, &argError{"dropReceipts: prefixes must be an array of strings"}
		}
		prefixes[i] = p.String()
	}
	return func() (any, error) {
		return a.call(id, func(h *handle) (any, error) {
			return h.store.DropReceipts(func(key string) bool {
				for _, p := range prefixes {
					if strings.HasPrefix(key, p) {
						return mode == "only"
					}
				}
				return mode == "except"
			})
		})
	}, nil
}
