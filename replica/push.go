package replica

import (
	"context"
	"errors"
	"fmt"
	"runtime"

	"github.com/hilodb/hilodb/client"
	"github.com/hilodb/hilodb/core"
	"github.com/hilodb/hilodb/errcode"
)

// ErrRejected is returned when the server refuses a write for a reason other
// than a conflict (an invalid document, say); the write stays pending.
var ErrRejected = errors.New("server rejected a write")

// Push sends every pending local write, in batches, and returns how many the
// server accepted. Conflicts are settled on the way; writes that result from
// a settlement are pushed in the same call.
//
// When the server takes pushes pipelined (client.PipelinesPushes), the next
// batch is read and sent while the server works on the last one, so that
// the server's transaction overlaps the client's reading and recording of
// acknowledgements; replies are settled in the order sent, and a batch
// never holds a document an unsettled batch holds (each pass over the
// pending writes goes on after the last id sent).
func (r *Replicator) Push(ctx context.Context) (int, error) {
	return r.push(ctx, false)
}

// push is Push; with pullAfter (a sync, whose pull follows), the last
// reply's settling first asks for the pull's first page (see settle).
func (r *Replicator) push(ctx context.Context, pullAfter bool) (int, error) {
	r.pushMu.Lock()
	defer r.pushMu.Unlock()
	if err := r.pushCollections(ctx); err != nil {
		return 0, err
	}
	if err := r.pushIndexes(ctx); err != nil {
		return 0, err
	}
	depth := 1
	if r.cli.PipelinesPushes() {
		depth = 2
	}
	total := 0
	var sent []*flight // in the order sent
	after := ""        // the last id sent in this pass over the pending writes
	passDone := false
	for rounds := 0; ; rounds++ {
		for !passDone && len(sent) < depth {
			f, err := r.send(ctx, after)
			if err != nil {
				return total, err
			}
			if f == nil {
				passDone = true
				break
			}
			after = f.items[len(f.items)-1].ID
			sent = append(sent, f)
			// Under WebAssembly the send runs once this goroutine waits:
			// let it go out before the next batch is read.
			runtime.Gosched()
		}
		if len(sent) == 0 {
			if after == "" {
				// A pass from the start found nothing.
				return total, r.pushLost(ctx)
			}
			// Writes made or settled during this pass, before its cursor,
			// are still pending: pass again from the start.
			after, passDone = "", false
			continue
		}
		n, err := r.settle(ctx, sent[0], pullAfter && passDone && len(sent) == 1)
		sent = sent[1:]
		total += n
		if err != nil {
			return total, err
		}
		if rounds > 1000 {
			return total, errors.New("push: no progress after 1000 rounds")
		}
	}
}

// pushLost pushes, once, the local writes that lost to a version of the
// feed before they were pushed (core.Store.LostWrites), on their old base:
// the server refuses each as a conflict and notes it against the version
// that won, whose client then hears of it. Whatever the server answers,
// they are not pushed again.
func (r *Replicator) pushLost(ctx context.Context) error {
	for {
		lost, err := r.store.LostWrites(r.opts.PushBatch)
		if err != nil || len(lost) == 0 {
			return err
		}
		items := make([]client.PushItem, len(lost))
		for i, w := range lost {
			items[i] = client.PushItem{ID: w.ID, BaseRev: w.BaseRev, Rev: w.Rev, Doc: w.Doc, Deleted: w.Deleted}
		}
		// No checkpoint: the notes this makes are not this store's to skip.
		if _, err := r.cli.PushChecked(ctx, -1, items); err != nil {
			return fmt.Errorf("push lost writes: %w", err)
		}
		if err := r.store.DropLostWrites(lost); err != nil {
			return err
		}
	}
}

// flight is one push sent and not yet settled.
type flight struct {
	items []client.PushItem
	done  chan pushed // buffered: the sender never waits for a reader
}

// pushed is a push's outcome as the client returned it.
type pushed struct {
	out client.PushOutcome
	err error
}

// send reads the next batch of pending writes after the id after and sends
// it; nil when there is none.
func (r *Replicator) send(ctx context.Context, after string) (*flight, error) {
	pend, err := r.store.PendingWritesAfter(after, r.opts.PushBatch)
	if err != nil || len(pend) == 0 {
		return nil, err
	}
	if r.opts.BeforePush != nil {
		if err := r.opts.BeforePush(ctx); err != nil {
			return nil, fmt.Errorf("push: %w", err)
		}
	}
	items := make([]client.PushItem, 0, len(pend))
	size := 0
	for _, p := range pend {
		n := len(p.Doc) + len(p.ID) + len(p.BaseRev) + len(p.Rev) + 64
		if len(items) > 0 && size+n > r.opts.PushBytes {
			break // the rest goes in the next batch
		}
		size += n
		items = append(items, client.PushItem{ID: p.ID, BaseRev: p.BaseRev, Rev: p.Rev, Doc: p.Doc, Deleted: p.Deleted})
	}
	// The checkpoint now: the reply's PrevSeq equals it only if nothing
	// but this push changed the database after it (or, pipelined, nothing
	// but this push and those sent before it).
	since, err := r.store.Checkpoint()
	if err != nil {
		return nil, err
	}
	f := &flight{items: items, done: make(chan pushed, 1)}
	go func() {
		// Read from the store, which checked each document when it was
		// written.
		out, err := r.cli.PushChecked(ctx, since, items)
		f.done <- pushed{out, err}
	}()
	return f, nil
}

// settle waits for a push's reply and records it: acknowledgements, the
// checkpoint, and conflicts settled. It returns how many writes the server
// accepted. With pullNext (the last reply of a sync's push, all of it
// accepted), it first asks for the pull's first page from where the
// checkpoint will be, so that the server answers while the
// acknowledgements are recorded (10 ms or more for thousands under
// WebAssembly); Pull takes that page if its checkpoint is where it was
// asked from.
func (r *Replicator) settle(ctx context.Context, f *flight, pullNext bool) (int, error) {
	var p pushed
	select {
	case p = <-f.done:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	if p.err != nil {
		return 0, p.err
	}
	out, items := p.out, f.items
	results := out.Results
	if pullNext && allAccepted(results) {
		if err := r.pullEarly(ctx, out); err != nil {
			return 0, err
		}
	}
	acks := make([]core.Ack, 0, len(results))
	var remote []core.RemoteChange
	var rejected error
	for i, res := range results {
		switch {
		case res.OK:
			acks = append(acks, core.Ack{ID: items[i].ID, Rev: items[i].Rev})
		case res.Error != nil && res.Error.Code == "conflict" && res.CurrentOmitted:
			// The reply left the server's version out (sent with an
			// earlier result, or past the reply bound): ask for it.
			cur, err := r.cli.Get(ctx, []string{items[i].ID})
			if err != nil {
				return 0, err
			}
			if c := cur[0]; c.Rev == "" {
				if err := r.store.Rebase(items[i].ID); err != nil {
					return 0, err
				}
			} else {
				remote = append(remote, core.RemoteChange{Version: versionOfChange(c), Seq: c.Seq, PushConflict: true})
			}
		case res.Error != nil && res.Error.Code == errcode.StaleRev.Name:
			// The server holds a newer revision than ours (our clock ran
			// behind): the same write, with a revision past it, goes out
			// again in this push's next pass.
			seen := versionOf(items[i].ID, res.Current).Rev
			if len(res.Current) == 0 {
				cur, err := r.cli.Get(ctx, []string{items[i].ID})
				if err != nil {
					return 0, err
				}
				seen = cur[0].Rev
			}
			if err := r.store.Rerev(items[i].ID, items[i].Rev, seen); err != nil {
				return 0, err
			}
		case res.Error != nil && res.Error.Code == "conflict":
			if len(res.Current) == 0 || string(res.Current) == "null" {
				if err := r.store.Rebase(items[i].ID); err != nil {
					return 0, err
				}
				continue
			}
			remote = append(remote, core.RemoteChange{Version: versionOf(items[i].ID, res.Current), Seq: res.Seq, PushConflict: true})
		default:
			rejected = fmt.Errorf("%w: %s: %v", ErrRejected, items[i].ID, res.Error)
		}
	}
	if err := r.store.Acknowledge(acks...); err != nil {
		return 0, err
	}
	if r.opts.OnAck != nil && len(acks) > 0 {
		r.opts.OnAck(acks)
	}
	// Nothing but this push happened since the checkpoint: its own
	// writes need not come back through a pull.
	if err := r.store.AdvanceCheckpoint(out.PrevSeq, out.Last); err != nil {
		return len(acks), err
	}
	if len(remote) > 0 {
		if _, err := r.apply(remote, 0); err != nil {
			return len(acks), err
		}
	}
	return len(acks), rejected
}

// allAccepted reports whether the server accepted every write of a push.
func allAccepted(results []client.PushResult) bool {
	for _, res := range results {
		if !res.OK {
			return false
		}
	}
	return true
}

// pullEarly asks for the first pull page from the checkpoint the push
// whose reply is out leaves (AdvanceCheckpoint's rule).
func (r *Replicator) pullEarly(ctx context.Context, out client.PushOutcome) error {
	since, err := r.store.Checkpoint()
	if err != nil {
		return err
	}
	if out.Last > out.PrevSeq && since == out.PrevSeq {
		since = out.Last
	}
	e := &earlyPull{since: since, page: make(chan pulled, 1)}
	r.early.Store(e)
	go func() {
		reply, defs, err := r.cli.PullWithCollections(ctx, since, r.opts.PullLimit)
		e.page <- pulled{reply, defs, err}
	}()
	// Under WebAssembly the request goes out once this goroutine waits.
	runtime.Gosched()
	return nil
}
