package replica

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"

	"github.com/hilodb/hilodb/client"
	"github.com/hilodb/hilodb/core"
	"github.com/tidwall/gjson"
)

// versionOf reads a document as the server stores it (or its tombstone).
func versionOf(id string, doc json.RawMessage) core.Version {
	v := core.Version{ID: id, Rev: gjson.GetBytes(doc, "_rev").String()}
	if gjson.GetBytes(doc, "_deleted").Bool() {
		v.Deleted = true
	} else {
		v.Doc = doc
	}
	return v
}

// versionOfChange is the version a get reply's change describes.
func versionOfChange(c client.Change) core.Version {
	return core.Version{ID: c.ID, Rev: c.Rev, Deleted: c.Deleted, Doc: c.Doc}
}

// apply applies remote changes and returns how many changed the store.
func (r *Replicator) apply(changes []core.RemoteChange, last int64) (int, error) {
	res, err := r.store.ApplyRemote(changes, last, r.opts.Resolve)
	if err != nil {
		return 0, err
	}
	if r.opts.OnConflict != nil {
		for _, c := range res.Conflicts {
			r.opts.OnConflict(c)
		}
	}
	if r.opts.OnApply != nil && (len(res.Changed) > 0 || len(res.Conflicts) > 0) {
		r.opts.OnApply(res)
	}
	return len(res.Changed), nil
}

func remoteChanges(changes []client.Change) []core.RemoteChange {
	out := make([]core.RemoteChange, len(changes))
	for i, c := range changes {
		out[i] = core.RemoteChange{Version: versionOfChange(c), Seq: c.Seq, DocHasRev: c.DocHasRev}
		if len(c.Lost) > 0 {
			out[i].Lost = lostVersions(c.ID, c.Lost)
		}
	}
	return out
}

// lostVersions are the writes the server refused against a change's
// version, as versions of document id.
func lostVersions(id string, lost []client.LostWrite) []core.Version {
	out := make([]core.Version, len(lost))
	for i, l := range lost {
		out[i] = core.Version{ID: id, Rev: l.Rev, Doc: l.Doc, Deleted: l.Deleted}
	}
	return out
}

// Pull applies every change the server has after the store's checkpoint and
// returns how many changed the local store (this store's own writes coming
// back are not counted). When the server has compacted away tombstones
// newer than the checkpoint, the deletions they carried can no longer be
// learnt one by one: Pull then resyncs, fetching the whole database and
// dropping the synced documents the server no longer has.
// It then adopts the server's collection definitions.
func (r *Replicator) Pull(ctx context.Context) (int, error) {
	r.pullMu.Lock()
	defer r.pullMu.Unlock()
	total := 0
	var seen map[string]bool // ids seen during a resync
	// ahead is the next page, asked for before this one is applied, so
	// that the server reads and sends it meanwhile; taken when the
	// checkpoint after applying is where it was asked from.
	var ahead chan pulled
	var aheadSince int64
	if e := r.early.Swap(nil); e != nil {
		ahead, aheadSince = e.page, e.since
	}
	for {
		since, err := r.store.Checkpoint()
		if err != nil {
			return total, err
		}
		var (
			reply client.PullReply
			defs  []client.CollectionDef // with the last page, from a server that sends them
		)
		if ahead != nil && aheadSince == since {
			select {
			case p := <-ahead:
				reply, defs, err = p.reply, p.defs, p.err
			case <-ctx.Done():
				return total, ctx.Err()
			}
		} else {
			reply, defs, err = r.cli.PullWithCollections(ctx, since, r.opts.PullLimit)
		}
		ahead = nil
		if err != nil {
			return total, err
		}
		if seen == nil && since > 0 && reply.PurgedSeq > since {
			if err := r.store.ResetCheckpoint(); err != nil {
				return total, err
			}
			seen = map[string]bool{}
			continue
		}
		if reply.More && reply.Last > since {
			ahead, aheadSince = make(chan pulled, 1), reply.Last
			go func(since int64, ch chan<- pulled) {
				reply, defs, err := r.cli.PullWithCollections(ctx, since, r.opts.PullLimit)
				ch <- pulled{reply, defs, err}
			}(reply.Last, ahead)
			// Under WebAssembly the request goes out once this goroutine
			// waits: let it go before the page is applied.
			runtime.Gosched()
		}
		for _, c := range reply.Changes {
			if seen != nil && !c.Deleted {
				seen[c.ID] = true
			}
		}
		if len(reply.Changes) > 0 || reply.Last > since {
			n, err := r.apply(remoteChanges(reply.Changes), reply.Last)
			total += n
			if err != nil {
				return total, err
			}
		}
		if !reply.More {
			if seen != nil {
				n, err := r.store.DropUnseen(seen)
				if err != nil {
					return total + n, err
				}
				total += n
			}
			if defs != nil {
				err = r.adoptAll(defs)
			} else {
				err = r.pullCollections(ctx)
			}
			if err != nil {
				return total, err
			}
			if reply.Indexes != nil {
				var list []core.CollectionIndexes
				if err := json.Unmarshal(reply.Indexes, &list); err != nil {
					return total, fmt.Errorf("pull: indexes in the reply: %w", err)
				}
				return total, r.adoptIndexes(list)
			}
			return total, r.pullIndexes(ctx)
		}
	}
}

// pulled is a pull's reply as the client returned it.
type pulled struct {
	reply client.PullReply
	defs  []client.CollectionDef
	err   error
}
