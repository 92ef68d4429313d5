package storage

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/hilodb/hilodb/internal/wire"
)

// Following etcd's watch instead of reading ranges: a range read by mod
// revision makes etcd read every document of the database (it has no index
// by mod revision), while a watch from a revision costs what changed since.
// A live feed therefore catches up with range reads once, then follows a
// watch of its own; and the proof behind a push's prevSeq looks at the
// writes this server's watch saw, not at the database.

// changeLog remembers, per database, the keys written in the last
// changeLogSize revisions that the server's watch delivered (see
// Etcd.watchChanges), to prove a push's prevSeq without reading the
// database.
type changeLog struct {
	mu       sync.Mutex
	floor    int64 // every write after it, up to seen, was delivered (0: watch not running)
	seen     int64 // the last revision delivered
	dbs      map[string]*dbLog
	advanced chan struct{} // closed and replaced whenever seen moves
}

// dbLog is one database's recent writes, oldest first; floor is the
// revision up to which older ones were forgotten.
type dbLog struct {
	floor   int64
	entries []logEntry
}

type logEntry struct {
	rev     int64
	key     string
	deleted bool
}

// changeLogSize bounds the writes remembered per database.
const changeLogSize = 4096

func newChangeLog() *changeLog {
	return &changeLog{dbs: map[string]*dbLog{}, advanced: make(chan struct{})}
}

// reset forgets everything: the watch starts again after rev.
func (l *changeLog) reset(rev int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.floor, l.seen = rev, rev
	clear(l.dbs)
	close(l.advanced)
	l.advanced = make(chan struct{})
}

// record adds the events of one watch response (whole revisions).
func (l *changeLog) record(prefix string, events []*clientv3.Event) {
	if len(events) == 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, ev := range events {
		rest := strings.TrimPrefix(string(ev.Kv.Key), prefix)
		db, id, ok := strings.Cut(rest, "/")
		if !ok {
			continue
		}
		d := l.dbs[db]
		if d == nil {
			d = &dbLog{floor: l.floor}
			l.dbs[db] = d
		}
		if len(d.entries) == changeLogSize {
			// Forget the older half (at once, so that adding stays cheap).
			half := changeLogSize / 2
			d.floor = d.entries[half-1].rev
			d.entries = append(d.entries[:0], d.entries[half:]...)
		}
		d.entries = append(d.entries, logEntry{rev: ev.Kv.ModRevision, key: id, deleted: ev.Type == clientv3.EventTypeDelete})
		l.seen = max(l.seen, ev.Kv.ModRevision)
	}
	close(l.advanced)
	l.advanced = make(chan struct{})
}

// awaitLocked waits up to wait for the watch to deliver rev, and reports
// whether it did with a watch running. Called with l.mu held; it is let go
// while waiting.
func (l *changeLog) awaitLocked(rev int64, wait time.Duration) bool {
	var deadline *time.Timer
	for l.seen < rev && l.floor != 0 {
		if deadline == nil {
			deadline = time.NewTimer(wait)
			defer deadline.Stop()
		}
		ch := l.advanced
		l.mu.Unlock()
		select {
		case <-ch:
		case <-deadline.C:
			l.mu.Lock()
			return false
		}
		l.mu.Lock()
	}
	return l.floor != 0
}

// onlyOwn reports whether every write to db after since, up to rev, was to
// a key in own (and none a deletion, which only tombstone compaction makes),
// waiting up to wait for the watch to deliver rev. Unknown is false.
func (l *changeLog) onlyOwn(db string, since, rev int64, own map[string]bool, wait time.Duration) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.awaitLocked(rev, wait) || since < l.floor {
		return false
	}
	d := l.dbs[db]
	if d == nil {
		return true // nothing written to db since the watch started
	}
	if since < d.floor {
		return false
	}
	for i := len(d.entries) - 1; i >= 0 && d.entries[i].rev > since; i-- {
		if e := d.entries[i]; e.rev <= rev && (e.deleted || !own[e.key]) {
			return false
		}
	}
	return true
}

// ProofWait bounds how long a read of the change log waits for this
// server's watch to deliver a revision it was told of (a push's own
// commit, a database's last write) before it answers without the log.
const ProofWait = 200 * time.Millisecond

// OnlyOwn reports whether every write to db after since, up to rev, was to
// a document in own (and none a deletion), waiting up to ProofWait for the
// watch to deliver rev: the proof behind a push's prevSeq. Unknown is
// false.
func (s *Etcd) OnlyOwn(db string, since, rev int64, own map[string]bool) bool {
	return s.changes.onlyOwn(db, since, rev, own, ProofWait)
}

// Follow sends db's changes after since to send as they are written,
// until ctx ends or send fails (its error is returned). It catches up with
// range reads (pullChanges) and then follows an etcd watch from the
// revision the catch-up read; if etcd compacted that revision meanwhile,
// it catches up again.
func (s *Etcd) Follow(ctx context.Context, db string, since int64, limit, maxBytes int, send func(changes []wire.Change, last int64) error) error {
	p := s.prefix + docPrefix(db)
	for {
		var at int64
		for {
			reply, rev, err := s.Pull(db, since, limit, maxBytes)
			if err != nil {
				return err
			}
			if len(reply.Changes) > 0 {
				if err := send(reply.Changes, reply.Last); err != nil {
					return err
				}
			}
			since = reply.Last
			if !reply.More {
				at = rev // every write of db up to rev is sent
				break
			}
		}
		wctx, cancel := context.WithCancel(ctx)
		wch := s.cli.Watch(clientv3.WithRequireLeader(wctx), p, clientv3.WithRange(clientv3.GetPrefixRangeEnd(p)),
			clientv3.WithRev(at+1), clientv3.WithFilterDelete())
		err := func() error {
			for resp := range wch {
				if resp.CompactRevision != 0 || resp.Canceled {
					return nil // catch up again
				}
				var changes []wire.Change
				for _, ev := range resp.Events {
					changes = append(changes, changeOf(string(ev.Kv.Key[len(p):]), ev.Kv))
				}
				if len(changes) == 0 {
					continue
				}
				last := changes[len(changes)-1].Seq
				if err := send(changes, last); err != nil {
					return err
				}
				since = last
			}
			return nil
		}()
		cancel()
		if err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(100 * time.Millisecond): // the watch was cut: catch up and watch again
		}
	}
}

// recent returns db's keys written after since, each once at its last write
// up to the revision upTo that the log has delivered everything through, in
// revision order; it first waits up to wait for the log to deliver atLeast.
// ok is false when the log cannot tell (it does not reach back to since, or
// the watch lags).
func (l *changeLog) recent(db string, since, atLeast int64, wait time.Duration) (entries []logEntry, upTo int64, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.awaitLocked(atLeast, wait) || since < l.floor {
		return nil, 0, false
	}
	d := l.dbs[db]
	if d == nil {
		return nil, l.seen, true
	}
	if since < d.floor {
		return nil, 0, false
	}
	// The last write of each key, newest first, then put in order.
	seen := map[string]bool{}
	for i := len(d.entries) - 1; i >= 0 && d.entries[i].rev > since; i-- {
		e := d.entries[i]
		if seen[e.key] {
			continue
		}
		seen[e.key] = true
		entries = append(entries, e)
	}
	slices.Reverse(entries)
	return entries, l.seen, true
}

// LastWriteKey is written (blindly: no transaction compares it, so pushes
// do not conflict on it) by every commit that writes db's documents on
// etcd; its mod revision tells a pull which revision the change log must
// have delivered for the pull to see every write acknowledged before it.
func LastWriteKey(db string) string { return "rlast/" + db }

// pullRecent is pullChanges served from the change log: the keys written
// after since come from the log, their values from one read per 128 keys
// at the revision the log is complete to. It costs what changed, where a
// range read costs the whole database; ok is false when the log cannot
// serve since (then pullChanges does).
func (s *Etcd) pullRecent(db string, since int64, limit, maxBytes int) (out wire.PullReply, rev int64, ok bool, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), etcdOpTimeout)
	defer cancel()
	out = wire.PullReply{OK: true, Changes: []wire.Change{}, Last: since}
	head, err := s.cli.Txn(ctx).Then(clientv3.OpGet(s.prefix+LastWriteKey(db)), clientv3.OpGet(s.prefix+PurgedKey(db))).Commit()
	if err != nil {
		return out, 0, false, fmt.Errorf("read changes: %w: %w", ErrUnavailable, err)
	}
	var lastWrite int64
	if kvs := head.Responses[0].GetResponseRange().Kvs; len(kvs) > 0 {
		lastWrite = kvs[0].ModRevision
	}
	if kvs := head.Responses[1].GetResponseRange().Kvs; len(kvs) > 0 {
		out.PurgedSeq, _ = strconv.ParseInt(string(kvs[0].Value), 10, 64)
	}
	if lastWrite <= since {
		return out, head.Header.Revision, true, nil // nothing written after since
	}
	entries, upTo, ok := s.changes.recent(db, since, lastWrite, ProofWait)
	if !ok {
		return out, 0, false, nil
	}
	// Whole revisions, up to limit keys (one revision bigger than that
	// comes whole).
	n := min(len(entries), limit)
	if n < len(entries) && n > 0 && entries[n].rev == entries[n-1].rev {
		j := n - 1
		for j > 0 && entries[j-1].rev == entries[n-1].rev {
			j--
		}
		if j > 0 {
			n = j
		} else {
			for n < len(entries) && entries[n].rev == entries[0].rev {
				n++
			}
		}
	}
	more := n < len(entries)
	entries = entries[:n]
	// The values, at the revision the log is complete to.
	vals := make(map[string]*mvccpb.KeyValue, len(entries))
	for start := 0; start < len(entries); start += etcdPrefetch {
		chunk := entries[start:min(len(entries), start+etcdPrefetch)]
		ops := make([]clientv3.Op, len(chunk))
		for i, e := range chunk {
			ops[i] = clientv3.OpGet(s.prefix+DocKey(db, e.key), clientv3.WithRev(upTo))
		}
		resp, err := s.cli.Txn(ctx).Then(ops...).Commit()
		if errors.Is(err, rpctypes.ErrCompacted) {
			return out, 0, false, nil
		}
		if err != nil {
			return out, 0, false, fmt.Errorf("read changes: %w: %w", ErrUnavailable, err)
		}
		for i, e := range chunk {
			if kvs := resp.Responses[i].GetResponseRange().Kvs; len(kvs) > 0 {
				vals[e.key] = kvs[0]
			}
		}
	}
	// About maxBytes, cut between revisions (the first comes whole).
	size := 0
	for i, e := range entries {
		if size >= maxBytes && i > 0 && e.rev != entries[i-1].rev {
			more = true
			break
		}
		out.Last = e.rev
		kv := vals[e.key]
		if kv == nil {
			continue // removed since: a compacted tombstone
		}
		if kv.ModRevision != e.rev {
			return out, 0, false, nil // not as logged: let a range read answer
		}
		out.Changes = append(out.Changes, changeOf(e.key, kv))
		size += len(kv.Value) + 64
	}
	out.More = more
	return out, upTo, true, nil
}

// Pull answers a pull from the change log when it reaches back to since,
// else with a range read; rev is a revision through which every write of
// db is in the reply or before since, when the reply has no more.
func (s *Etcd) Pull(db string, since int64, limit, maxBytes int) (wire.PullReply, int64, error) {
	out, rev, ok, err := s.pullRecent(db, since, limit, maxBytes)
	if err != nil || ok {
		if ok {
			s.metrics.Pull(true)
		}
		return out, rev, err
	}
	s.metrics.Pull(false)
	return s.pullChangesAt(db, since, limit, maxBytes)
}
