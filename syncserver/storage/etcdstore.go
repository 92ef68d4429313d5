package storage

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidwall/buntdb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// ErrContention is returned when a transaction lost to other servers'
// writes more often than maxTxAttempts allows.
var ErrContention = errors.New("transaction kept conflicting with other servers' writes")

// ErrUnavailable wraps a failed etcd call: the cluster's store is out
// of reach (no quorum, no member answering), which a client may retry here
// or through another server.
var ErrUnavailable = errors.New("the cluster's store (etcd) is out of reach")

// ErrNoTag is the store's state while this server holds no live lease on
// its node tag: it hands out nothing until it has the tag again.
var ErrNoTag = errors.New("this server's node tag lease is lost; it accepts no changes until it holds the tag again")

const (
	// maxTxAttempts bounds how often one update runs again after losing a
	// compare to another server's write.
	maxTxAttempts = 1000
	// etcdPage is how many keys one range read fetches at a time.
	etcdPage = 512
	// etcdPrefetch is how many Gets one prefetch Txn holds (etcd's default
	// --max-txn-ops is 128).
	etcdPrefetch = 128
	// etcdOpTimeout bounds one etcd call.
	etcdOpTimeout = 10 * time.Second
)

// Etcd keeps the server's keys in an etcd cluster, under a prefix, so
// that any number of sync servers share one state. An update is an
// optimistic transaction: its reads are taken at one etcd revision and
// recorded with their mod revisions, its writes are buffered, and the commit
// is one etcd Txn that applies the writes only if every key read still has
// the mod revision it was read at (a compare-and-swap over the whole read
// set; for a range read, no key in the range changed since). A transaction
// that loses runs again from scratch. Two servers can therefore never both
// hand out a number read from the same counter value: the second commit
// fails its compare and reads the first one's result.
//
// etcd acknowledges a Txn once a majority of its members have it in their
// fsynced logs, so an update that returned survives the loss of any
// minority of members and of this process.
type Etcd struct {
	cli     *clientv3.Client
	prefix  string
	metrics Metrics
	changes *changeLog // what the watch of watchChanges saw
	// swept is the compacted revision below which no tombstone was left
	// at the last compaction pass (0: none yet).
	swept atomic.Int64
	// lease is the etcd lease on this server's node tag (ClaimTag,
	// ChooseTag), kept alive by HoldTag.
	lease clientv3.LeaseID

	failed  atomic.Pointer[error]
	reqs    chan *txReq
	quit    chan struct{}
	stopped chan struct{}
	once    sync.Once
}

var _ Store = (*Etcd)(nil)

// OpenEtcd connects to the etcd members at endpoints and checks that
// the cluster answers and that no restore into prefix is unfinished
// (ErrRestoreUnfinished).
func OpenEtcd(endpoints []string, prefix string, m Metrics) (*Etcd, error) {
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:          endpoints,
		DialTimeout:        5 * time.Second,
		DialKeepAliveTime:  5 * time.Second,
		MaxCallSendMsgSize: 64 << 20,
		Logger:             zap.NewNop(),
	})
	if err != nil {
		return nil, fmt.Errorf("connect to etcd %s: %w", strings.Join(endpoints, ","), err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), etcdOpTimeout)
	defer cancel()
	if _, err := cli.Get(ctx, prefix+"sys/ping"); err != nil {
		cli.Close()
		return nil, fmt.Errorf("reach etcd %s: %w", strings.Join(endpoints, ","), err)
	}
	// Never serve from half a restore (see RestoreEtcd).
	if err := checkRestoreMarker(cli, prefix); err != nil {
		cli.Close()
		return nil, err
	}
	s := &Etcd{cli: cli, prefix: prefix, metrics: m, changes: newChangeLog(), reqs: make(chan *txReq, maxGroup), quit: make(chan struct{}), stopped: make(chan struct{})}
	go s.commitLoop()
	return s, nil
}

// Err is the failure that keeps the store from accepting changes (a lost
// node tag lease), or nil.
func (s *Etcd) Err() error {
	if p := s.failed.Load(); p != nil {
		return *p
	}
	return nil
}

// setFailed stops (err != nil) or resumes (nil) every update.
func (s *Etcd) setFailed(err error) {
	if err == nil {
		s.failed.Store(nil)
		return
	}
	s.failed.Store(&err)
}

// Update queues fn for the committer and waits for its outcome.
func (s *Etcd) Update(ctx context.Context, fn func(tx Tx) error) error {
	if err := s.Err(); err != nil {
		return err
	}
	return queue(ctx, s.reqs, s.quit, fn)
}

// commitLoop runs the updates queued meanwhile in one optimistic
// transaction, one after another (each sees the writes of those before
// it), and commits them with one etcd Txn: many clients of this server
// share one round through etcd's log, as they share one fsync on buntdb.
func (s *Etcd) commitLoop() {
	defer close(s.stopped)
	runGroups(s.reqs, s.quit, maxGroup, s.commit)
}

func (s *Etcd) commit(batch []*txReq) {
	err := s.runBatch(batch)
	for _, r := range batch {
		if err != nil {
			r.err = err
		}
		close(r.done)
	}
}

// runBatch runs the batch until its transaction commits; each request's
// own error is left in its err.
func (s *Etcd) runBatch(batch []*txReq) error {
	tx := s.newTx()
	for attempt := 0; ; attempt++ {
		if err := s.Err(); err != nil {
			return err
		}
		if attempt == maxTxAttempts {
			return ErrContention
		}
		s.warm(tx, batch)
		for _, r := range batch {
			r.err = runEtcdTx(r.fn, tx)
		}
		if len(tx.writes) == 0 {
			tx.committed(0)
			return nil
		}
		start := time.Now()
		ok, next, err := tx.commit()
		if err != nil {
			return err
		}
		if ok {
			// The commit round trip is what an fsync is on buntdb: the
			// moment the group's writes became durable (on a majority).
			s.metrics.Commit(time.Since(start), len(batch))
			tx.committed(tx.commitRev)
			return nil
		}
		s.metrics.Retry()
		tx = next
		// Another server wrote what this transaction read: wait a little
		// (more after each loss) and run it again on the new state.
		wait := time.Duration(rand.Int64N(int64(time.Millisecond) * int64(min(attempt+1, 20))))
		select {
		case <-time.After(wait):
		case <-s.quit:
			return ErrClosed
		}
	}
}

// View runs fn in a read-only transaction.
func (s *Etcd) View(fn func(tx Tx) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), etcdOpTimeout)
	defer cancel()
	tx := &etcdTx{ctx: ctx, s: s, readOnly: true, writes: map[string]*string{}}
	return runEtcdTx(fn, tx)
}

// Close stops the committer and closes the etcd client.
func (s *Etcd) Close() error {
	var err error
	s.once.Do(func() {
		close(s.quit)
		<-s.stopped
		err = s.cli.Close()
	})
	return err
}

// runEtcdTx runs fn, turning a panic into an error as runTx does.
func runEtcdTx(fn func(tx Tx) error, tx *etcdTx) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("transaction panicked: %v", p)
		}
	}()
	return fn(tx)
}

// etcdTx is one optimistic transaction of an Etcd (see there).
type etcdTx struct {
	ctx      context.Context
	s        *Etcd
	readOnly bool
	rev      int64              // the revision every read is taken at; 0 before the first
	reads    map[string]int64   // key → mod revision when read (0: absent)
	cache    map[string]cached  // key → what it held at rev
	flight   *readFlight        // scratch runs of one warm share their reads
	ranges   [][2]string        // ranges read, [from, to)
	writes   map[string]*string // key → new value; nil deletes
	hooks    []func(rev int64)  // run once committed (afterCommit)
	// commitRev is the revision the commit made (every write of one etcd
	// Txn gets the same mod revision).
	commitRev int64
}

var _ Tx = (*etcdTx)(nil)

// cached is a key's value (nil: absent) and mod revision at a transaction's
// revision.
type cached struct {
	v   *string
	rev int64
}

func (tx *etcdTx) get(key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	if tx.rev > 0 {
		opts = append(opts, clientv3.WithRev(tx.rev))
	}
	ctx, cancel := context.WithTimeout(tx.ctx, etcdOpTimeout)
	defer cancel()
	resp, err := tx.s.cli.Get(ctx, tx.s.prefix+key, opts...)
	if err != nil {
		return nil, fmt.Errorf("read etcd: %w: %w", ErrUnavailable, err)
	}
	if tx.rev == 0 {
		tx.rev = resp.Header.Revision
	}
	return resp, nil
}

// Get implements Tx.
func (tx *etcdTx) Get(key string, _ ...bool) (string, error) {
	if v, ok := tx.writes[key]; ok {
		if v == nil {
			return "", buntdb.ErrNotFound
		}
		return *v, nil
	}
	if c, ok := tx.cache[key]; ok {
		if !tx.readOnly {
			tx.reads[key] = c.rev
		}
		if c.v == nil {
			return "", buntdb.ErrNotFound
		}
		return *c.v, nil
	}
	var kv *mvccpb.KeyValue
	if tx.flight != nil {
		var err error
		if kv, err = tx.flight.get(tx, key); err != nil {
			return "", err
		}
	} else {
		resp, err := tx.get(key)
		if err != nil {
			return "", err
		}
		if len(resp.Kvs) > 0 {
			kv = resp.Kvs[0]
		}
	}
	v := tx.remember(key, kv)
	if !tx.readOnly {
		tx.reads[key] = tx.cache[key].rev
	}
	if v == nil {
		return "", buntdb.ErrNotFound
	}
	return *v, nil
}

// remember keeps what key held (kv nil: absent) for the Gets that follow,
// which record it for the commit's compares, and returns its value.
func (tx *etcdTx) remember(key string, kv *mvccpb.KeyValue) *string {
	if tx.cache == nil {
		tx.cache = map[string]cached{}
	}
	var c cached
	if kv != nil {
		s := string(kv.Value)
		c = cached{v: &s, rev: kv.ModRevision}
	}
	tx.cache[key] = c
	return c.v
}

// Prefetch reads keys in a few round trips (read-only Txns of up to
// etcdPrefetch Gets each, at the transaction's revision), so the Gets that
// follow need none.
func (tx *etcdTx) Prefetch(keys []string) error {
	var todo []string
	for _, k := range keys {
		if _, ok := tx.writes[k]; ok {
			continue
		}
		if _, ok := tx.cache[k]; ok {
			continue
		}
		todo = append(todo, k)
	}
	for len(todo) > 0 {
		n := min(len(todo), etcdPrefetch)
		chunk := todo[:n]
		todo = todo[n:]
		ops := make([]clientv3.Op, len(chunk))
		for i, k := range chunk {
			if tx.rev > 0 {
				ops[i] = clientv3.OpGet(tx.s.prefix+k, clientv3.WithRev(tx.rev))
			} else {
				ops[i] = clientv3.OpGet(tx.s.prefix + k)
			}
		}
		ctx, cancel := context.WithTimeout(tx.ctx, etcdOpTimeout)
		resp, err := tx.s.cli.Txn(ctx).Then(ops...).Commit()
		cancel()
		if err != nil {
			return fmt.Errorf("read etcd: %w: %w", ErrUnavailable, err)
		}
		if tx.rev == 0 {
			tx.rev = resp.Header.Revision
		}
		for i, k := range chunk {
			var kv *mvccpb.KeyValue
			if r := resp.Responses[i].GetResponseRange(); r != nil && len(r.Kvs) > 0 {
				kv = r.Kvs[0]
			}
			tx.remember(k, kv)
		}
	}
	return nil
}

// Set implements Tx; the write is applied at commit.
func (tx *etcdTx) Set(key, value string, _ *buntdb.SetOptions) (string, bool, error) {
	if tx.readOnly {
		return "", false, errors.New("write in a read-only transaction")
	}
	tx.writes[key] = &value
	return "", false, nil
}

// Delete implements Tx; the delete is applied at commit. Deleting an
// absent key is not an error here.
func (tx *etcdTx) Delete(key string) (string, error) {
	if tx.readOnly {
		return "", errors.New("write in a read-only transaction")
	}
	tx.writes[key] = nil
	return "", nil
}

// AscendKeys implements Tx for a pattern of a prefix and "*".
func (tx *etcdTx) AscendKeys(pattern string, iterator func(key, value string) bool) error {
	prefix, ok := strings.CutSuffix(pattern, "*")
	if !ok || strings.ContainsAny(prefix, "*?") {
		return fmt.Errorf("key pattern %q: only a prefix and * is supported", pattern)
	}
	return tx.AscendRange("", prefix, clientv3.GetPrefixRangeEnd(prefix), iterator)
}

// AscendRange implements Tx: the keys are fetched a page at a time, at
// the transaction's revision, merged with its own writes.
func (tx *etcdTx) AscendRange(_ string, from, to string, iterator func(key, value string) bool) error {
	if !tx.readOnly {
		tx.ranges = append(tx.ranges, [2]string{from, to})
	}
	// This transaction's own writes in the range, in key order.
	var mine []string
	for k := range tx.writes {
		if k >= from && k < to {
			mine = append(mine, k)
		}
	}
	sort.Strings(mine)
	emitMine := func(upTo string, inclusive bool) bool {
		for len(mine) > 0 && (mine[0] < upTo || inclusive && mine[0] == upTo) {
			k := mine[0]
			mine = mine[1:]
			if v := tx.writes[k]; v != nil && !iterator(k, *v) {
				return false
			}
		}
		return true
	}
	cursor := from
	for {
		resp, err := tx.get(cursor, clientv3.WithRange(tx.s.prefix+to), clientv3.WithLimit(etcdPage))
		if err != nil {
			return err
		}
		for _, kv := range resp.Kvs {
			key := string(kv.Key[len(tx.s.prefix):])
			if !emitMine(key, false) {
				return nil
			}
			if _, own := tx.writes[key]; own {
				if len(mine) > 0 && mine[0] == key {
					mine = mine[1:]
				}
				if v := tx.writes[key]; v != nil && !iterator(key, *v) {
					return nil
				}
				continue
			}
			if !iterator(key, string(kv.Value)) {
				return nil
			}
		}
		if !resp.More || len(resp.Kvs) == 0 {
			break
		}
		cursor = string(resp.Kvs[len(resp.Kvs)-1].Key[len(tx.s.prefix):]) + "\x00"
	}
	emitMine(to, false)
	return nil
}

// commit applies the writes if nothing read has changed since; ok is false
// when a compare failed and the transaction must run again.
//
// When it fails, the values of the keys it read as the winning write left
// them come back with it (Else), and next is a transaction that starts
// from them: a lost race costs one round trip, not two.
func (tx *etcdTx) commit() (ok bool, next *etcdTx, err error) {
	p := tx.s.prefix
	cmps := make([]clientv3.Cmp, 0, len(tx.reads)+len(tx.ranges))
	for k, rev := range tx.reads {
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(p+k), "=", rev))
	}
	for _, r := range tx.ranges {
		// No key of the range was written after the read revision. A key
		// deleted from the range since is not seen by this compare; the
		// server's updates read ranges only of keys never deleted
		// (collection definitions) or re-read each key they act on.
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(p+r[0]).WithRange(p+r[1]), "<", tx.rev+1))
	}
	ops := make([]clientv3.Op, 0, len(tx.writes))
	for k, v := range tx.writes {
		if v == nil {
			ops = append(ops, clientv3.OpDelete(p+k))
		} else {
			ops = append(ops, clientv3.OpPut(p+k, *v))
		}
	}
	// Once sent, wait for the outcome even if the request ends: the
	// transaction may already be committed.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(tx.ctx), etcdOpTimeout)
	defer cancel()
	var again []string
	var elseOps []clientv3.Op
	if len(tx.reads) <= etcdPrefetch {
		for k := range tx.reads {
			again = append(again, k)
			elseOps = append(elseOps, clientv3.OpGet(p+k))
		}
	}
	resp, err := tx.s.cli.Txn(ctx).If(cmps...).Then(ops...).Else(elseOps...).Commit()
	if err != nil {
		return false, nil, fmt.Errorf("commit etcd transaction: %w: %w", ErrUnavailable, err)
	}
	if resp.Succeeded {
		tx.commitRev = resp.Header.Revision
		return true, nil, nil
	}
	next = tx.s.newTx()
	next.rev = resp.Header.Revision
	for i, k := range again {
		var kv *mvccpb.KeyValue
		if r := resp.Responses[i].GetResponseRange(); r != nil && len(r.Kvs) > 0 {
			kv = r.Kvs[0]
		}
		next.remember(k, kv)
	}
	return false, next, nil
}

// warm reads, all at once, what the batch's updates will read: each runs
// first on a scratch transaction of its own, concurrently, and what they
// read lands in tx's cache. The real runs that follow, one after another,
// then find their keys there instead of waiting for one round trip each (a
// read that depends on an earlier update's write still goes to etcd). The
// scratch runs' writes are thrown away; updates may run more than once
// anyway (see Store). Values read at different revisions are safe: the
// commit compares every key read against the mod revision it was read at,
// so it succeeds only if all of them still hold.
func (s *Etcd) warm(tx *etcdTx, batch []*txReq) {
	if len(batch) < 2 {
		return
	}
	scratch := make([]*etcdTx, len(batch))
	flight := &readFlight{calls: map[string]*flightCall{}}
	var wg sync.WaitGroup
	for i, r := range batch {
		sc := &etcdTx{ctx: tx.ctx, s: s, rev: tx.rev, reads: map[string]int64{}, writes: map[string]*string{}, cache: map[string]cached{}, flight: flight}
		for k, c := range tx.cache {
			sc.cache[k] = c
		}
		scratch[i] = sc
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = runEtcdTx(r.fn, sc)
		}()
	}
	wg.Wait()
	if tx.cache == nil {
		tx.cache = map[string]cached{}
	}
	for _, sc := range scratch {
		if tx.rev == 0 || sc.rev > tx.rev {
			// Later reads at the newest revision seen: fewer lost compares.
			tx.rev = sc.rev
		}
		for k, c := range sc.cache {
			if _, ok := tx.cache[k]; !ok {
				tx.cache[k] = c
			}
		}
	}
}

// readFlight lets the scratch runs of one warm read each key once: the
// first to ask reads it, the others wait for that answer.
type readFlight struct {
	mu    sync.Mutex
	calls map[string]*flightCall
}

type flightCall struct {
	done chan struct{}
	kv   *mvccpb.KeyValue
	err  error
}

func (f *readFlight) get(tx *etcdTx, key string) (*mvccpb.KeyValue, error) {
	f.mu.Lock()
	c, ok := f.calls[key]
	if !ok {
		c = &flightCall{done: make(chan struct{})}
		f.calls[key] = c
	}
	f.mu.Unlock()
	if ok {
		<-c.done
		return c.kv, c.err
	}
	resp, err := tx.get(key)
	if err == nil && len(resp.Kvs) > 0 {
		c.kv = resp.Kvs[0]
	}
	c.err = err
	close(c.done)
	return c.kv, c.err
}

// newTx starts an update transaction.
func (s *Etcd) newTx() *etcdTx {
	return &etcdTx{ctx: context.Background(), s: s, reads: map[string]int64{}, writes: map[string]*string{}}
}
