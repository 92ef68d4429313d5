package storage

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/tidwall/gjson"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/hilodb/hilodb/internal/wire"
)

// On etcd a database's change sequence is etcd's revision: a document's
// sequence is the mod revision of its key (rdoc/<db>/<id>), which etcd sets
// when the push's Txn commits. No counter and no index is written, so
// pushes of different documents through different servers never compare
// the same key. Every document of one Txn (one push, or a group of pushes
// committed together) has the same revision; sequences rise but leave gaps
// (the revisions of other databases' and other keys' writes).

// ModRev implements RevTx.
func (tx *etcdTx) ModRev(key string) int64 {
	if _, own := tx.writes[key]; own {
		return 0
	}
	return tx.cache[key].rev
}

// AfterCommit implements RevTx.
func (tx *etcdTx) AfterCommit(fn func(rev int64)) { tx.hooks = append(tx.hooks, fn) }

// committed runs the afterCommit hooks once.
func (tx *etcdTx) committed(rev int64) {
	hooks := tx.hooks
	tx.hooks = nil
	for _, fn := range hooks {
		fn(rev)
	}
}

// docPrefix is the key prefix of db's documents (and tombstones).
func docPrefix(db string) string { return "rdoc/" + db + "/" }

// CurrentRev is etcd's revision now: the highest sequence any database
// can have.
func (s *Etcd) CurrentRev(ctx context.Context) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, etcdOpTimeout)
	defer cancel()
	resp, err := s.cli.Get(ctx, s.prefix+"sys/ping", clientv3.WithCountOnly())
	if err != nil {
		return 0, fmt.Errorf("read etcd revision: %w: %w", ErrUnavailable, err)
	}
	return resp.Header.Revision, nil
}

// LastSeq is db's last change sequence: the newest mod revision among its
// documents (0 when it has none). etcd sorts the whole range for it: for the
// dashboard, not for every request.
func (s *Etcd) LastSeq(db string) (int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), etcdOpTimeout)
	defer cancel()
	p := s.prefix + docPrefix(db)
	resp, err := s.cli.Get(ctx, p, clientv3.WithRange(clientv3.GetPrefixRangeEnd(p)), clientv3.WithKeysOnly(),
		clientv3.WithSort(clientv3.SortByModRevision, clientv3.SortDescend), clientv3.WithLimit(1))
	if err != nil {
		return 0, fmt.Errorf("read last sequence: %w: %w", ErrUnavailable, err)
	}
	if len(resp.Kvs) == 0 {
		return 0, nil
	}
	return resp.Kvs[0].ModRevision, nil
}

// pullChangesAt reads the documents of db whose mod revision is above since,
// in revision order: at most limit of them and about maxBytes of documents,
// cut only between revisions (a page never ends inside one commit, whose
// documents share a sequence; a commit bigger than the page comes whole).
// The purged mark is read at the same revision.
// It also returns the revision it read at.
func (s *Etcd) pullChangesAt(db string, since int64, limit, maxBytes int) (out wire.PullReply, rev int64, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), etcdOpTimeout)
	defer cancel()
	out = wire.PullReply{OK: true, Changes: []wire.Change{}, Last: since}
	p := s.prefix + docPrefix(db)
	end := clientv3.GetPrefixRangeEnd(p)
	// etcd filters by mod revision and sorts before it applies the limit,
	// so the first limit documents above since come back, oldest first.
	resp, err := s.cli.Txn(ctx).Then(
		clientv3.OpGet(s.prefix+PurgedKey(db)),
		clientv3.OpGet(p, clientv3.WithRange(end), clientv3.WithMinModRev(since+1),
			clientv3.WithSort(clientv3.SortByModRevision, clientv3.SortAscend), clientv3.WithLimit(int64(limit))),
	).Commit()
	if err != nil {
		return out, 0, fmt.Errorf("read changes: %w: %w", ErrUnavailable, err)
	}
	if pk := resp.Responses[0].GetResponseRange().Kvs; len(pk) > 0 {
		fmt.Sscan(string(pk[0].Value), &out.PurgedSeq)
	}
	page := resp.Responses[1].GetResponseRange()
	kvs := page.Kvs
	more := page.More
	// Take whole revisions while they fit.
	n, size := 0, 0
	for n < len(kvs) && size < maxBytes {
		size += len(kvs[n].Value) + 64
		n++
	}
	if n < len(kvs) {
		more = true
	}
	if more && n > 0 {
		last := kvs[n-1].ModRevision
		// Does the last revision taken go on past the page?
		cut := n < len(kvs) && kvs[n].ModRevision == last || n == len(kvs)
		if cut {
			j := n
			for j > 0 && kvs[j-1].ModRevision == last {
				j--
			}
			if j > 0 {
				n = j // end the page before that revision
			} else {
				// One revision fills the page: read all of it.
				all, err := s.cli.Get(ctx, p, clientv3.WithRange(end), clientv3.WithRev(resp.Header.Revision),
					clientv3.WithMinModRev(last), clientv3.WithMaxModRev(last))
				if err != nil {
					return out, 0, fmt.Errorf("read changes: %w: %w", ErrUnavailable, err)
				}
				sort.Slice(all.Kvs, func(a, b int) bool { return string(all.Kvs[a].Key) < string(all.Kvs[b].Key) })
				kvs, n = all.Kvs, len(all.Kvs)
			}
		}
	}
	for _, kv := range kvs[:n] {
		out.Changes = append(out.Changes, changeOf(string(kv.Key[len(p):]), kv))
		out.Last = kv.ModRevision
	}
	out.More = more
	return out, resp.Header.Revision, nil
}

// changeOf is the change a stored record's key-value describes.
func changeOf(id string, kv *mvccpb.KeyValue) wire.Change {
	m := gjson.ParseBytes(kv.Value)
	c := wire.Change{Seq: kv.ModRevision, ID: id, Rev: m.Get("rev").String(), Deleted: m.Get("deleted").Bool()}
	if d := m.Get("doc"); d.Exists() {
		c.Doc = []byte(d.Raw)
	}
	if l := m.Get("lost"); l.IsArray() {
		c.Lost = decodeLost(l)
	}
	return c
}

// compactedRev finds etcd's compacted revision: the oldest revision a read
// can still be taken at (1 when etcd was never compacted). etcd does not
// report it, but a read below it fails with ErrCompacted, so a binary
// search over [1, now] finds it in about 30 small reads.
func (s *Etcd) compactedRev(ctx context.Context) (int64, error) {
	hi, err := s.CurrentRev(ctx)
	if err != nil {
		return 0, err
	}
	lo := int64(1) // lo is below or at it, hi at or above it
	readable := func(rev int64) (bool, error) {
		cctx, cancel := context.WithTimeout(ctx, etcdOpTimeout)
		defer cancel()
		_, err := s.cli.Get(cctx, s.prefix+"sys/ping", clientv3.WithRev(rev), clientv3.WithCountOnly())
		if errors.Is(err, rpctypes.ErrCompacted) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("read etcd at revision %d: %w: %w", rev, ErrUnavailable, err)
		}
		return true, nil
	}
	if ok, err := readable(lo); err != nil || ok {
		return lo, err
	}
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		ok, err := readable(mid)
		if err != nil {
			return 0, err
		}
		if ok {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi, nil
}

// Tombstone is a tombstone found for compaction: its database, document
// id and sequence (mod revision on etcd).
type Tombstone struct {
	DB, ID string
	Seq    int64
}

// DueTombstones lists the tombstones that compaction may remove now: those
// below etcd's compacted revision, which it returns too. Once a pass went
// through at a compacted revision (MarkSwept), the next waits for etcd to
// compact further: no write can make a tombstone below it again.
func (s *Etcd) DueTombstones(ctx context.Context) (due []Tombstone, compacted int64, err error) {
	compacted, err = s.compactedRev(ctx)
	if err != nil || compacted <= 1 || compacted == s.swept.Load() {
		return nil, compacted, err
	}
	if due, err = s.tombstonesBefore(ctx, compacted); err == nil && len(due) == 0 {
		s.swept.Store(compacted)
	}
	return due, compacted, err
}

// MarkSwept records that every tombstone below compacted is removed.
func (s *Etcd) MarkSwept(compacted int64) { s.swept.Store(compacted) }

// tombstonesBefore lists the tombstones of every database whose mod
// revision is below rev, a page of keys at a time, read at one revision.
// (A mod revision filter would make etcd read the whole rest of the range
// for each page; the records are read once here and filtered.)
func (s *Etcd) tombstonesBefore(ctx context.Context, rev int64) ([]Tombstone, error) {
	p := s.prefix + "rdoc/"
	var out []Tombstone
	err := scanAt(ctx, s.cli, p, func(kv *mvccpb.KeyValue) {
		if kv.ModRevision >= rev || !gjson.GetBytes(kv.Value, "deleted").Bool() {
			return
		}
		if db, id, ok := strings.Cut(string(kv.Key[len(p):]), "/"); ok {
			out = append(out, Tombstone{DB: db, ID: id, Seq: kv.ModRevision})
		}
	})
	if err != nil {
		return nil, fmt.Errorf("scan tombstones: %w", err)
	}
	return out, nil
}

// scanAt visits every key under prefix in key order, a page at a time, all
// read at the revision of the first page.
func scanAt(ctx context.Context, cli *clientv3.Client, prefix string, visit func(kv *mvccpb.KeyValue)) error {
	cursor, end, at := prefix, clientv3.GetPrefixRangeEnd(prefix), int64(0)
	for {
		opts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithLimit(etcdPage)}
		if at > 0 {
			opts = append(opts, clientv3.WithRev(at))
		}
		cctx, cancel := context.WithTimeout(ctx, etcdOpTimeout)
		resp, err := cli.Get(cctx, cursor, opts...)
		cancel()
		if err != nil {
			return fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
		at = resp.Header.Revision
		for _, kv := range resp.Kvs {
			visit(kv)
		}
		if !resp.More || len(resp.Kvs) == 0 {
			return nil
		}
		cursor = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
}
