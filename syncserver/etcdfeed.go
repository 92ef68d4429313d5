package syncserver

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/hilodb/hilodb/internal/wire"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Following etcd's watch instead of reading ranges: a range read by mod
// revision makes etcd read every document of the database (it has no index
// by mod revision), while a watch from a revision costs what changed since.
// A live feed therefore catches up with range reads once, then follows a
// watch of its own; and the proof behind a push's prevSeq looks at the
// writes this server's watch saw, not at the database.

// changeLog remembers, per database, the keys written in the last
// changeLogSize revisions that the server's watch delivered (see
// etcdStore.watchChanges), to prove a push's prevSeq without reading the
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

// onlyOwn reports whether every write to db after since, up to rev, was to
// a key in own (and none a deletion, which only tombstone compaction makes),
// waiting up to wait for the watch to deliver rev. Unknown is false.
func (l *changeLog) onlyOwn(db string, since, rev int64, own map[string]bool, wait time.Duration) bool {
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	l.mu.Lock()
	defer l.mu.Unlock()
	for l.seen < rev {
		if l.floor == 0 {
			return false // no watch running
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
	if l.floor == 0 || since < l.floor {
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

// follow sends db's changes after since to send as they are written,
// until ctx ends or send fails (its error is returned). It catches up with
// range reads (pullChanges) and then follows an etcd watch from the
// revision the catch-up read; if etcd compacted that revision meanwhile,
// it catches up again.
func (s *etcdStore) follow(ctx context.Context, db string, since int64, send func(changes []wire.Change, last int64) error) error {
	p := s.prefix + docPrefix(db)
	for {
		var at int64
		for {
			reply, rev, err := s.pullChangesAt(db, since, defaultPullLimit, defaultPullBytes)
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
