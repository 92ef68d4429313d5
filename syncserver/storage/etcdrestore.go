package storage

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// The admin commands on a cluster's etcd (restore, set-counter, repair)
// write with a client of their own rather than through Etcd: a restore
// is far more keys than one transaction may hold, so it writes in batches,
// guarded by a marker key that says a restore is under way. A server does
// not start on a prefix whose marker says so (checkRestoreMarker), and
// running the restore again finishes it.

// restoreMarkerKey marks a restore into the prefix: its backup's digest
// and whether it finished.
const restoreMarkerKey = "sys/restore"

// Restore marker states.
const (
	restoreRunning = "running"
	restoreDone    = "done"
)

// etcdBatchOps and etcdBatchBytes bound one write transaction of a restore
// (etcd's defaults: 128 operations, 1.5 MiB a request).
const (
	etcdBatchOps   = 100
	etcdBatchBytes = 1 << 20
)

// ErrPrefixNotEmpty is returned by RestoreEtcd for a prefix that holds keys
// already, unless it is forced.
var ErrPrefixNotEmpty = errors.New("the etcd prefix holds data already")

// ErrServersLive is returned by the admin commands that must not run while
// a sync server serves the prefix.
var ErrServersLive = errors.New("sync servers are running on this etcd prefix")

// ErrRestoreUnfinished is returned when a server starts on a prefix whose
// restore did not finish.
var ErrRestoreUnfinished = errors.New("a restore into this etcd prefix did not finish")

// restoreMarker is the value of restoreMarkerKey.
type restoreMarker struct {
	Digest string `json:"digest"` // sha256 of the backup and the bump
	State  string `json:"state"`
	At     string `json:"at"` // when the state was set
}

// EtcdRestoreReport says what RestoreEtcd did.
type EtcdRestoreReport struct {
	Written     int  // keys written (counters included)
	Deleted     int  // keys removed (a forced restore over older data)
	Raised      int  // counters raised
	Resumed     bool // an unfinished restore of the same backup was finished
	AlreadyDone bool // the same backup was restored before: nothing written
}

// String describes the report for an operator.
func (r *EtcdRestoreReport) String() string {
	if r.AlreadyDone {
		return "this backup was restored into the prefix before; nothing written"
	}
	s := fmt.Sprintf("%d keys written, %d counters raised, %d keys removed", r.Written, r.Raised, r.Deleted)
	if r.Resumed {
		s += " (an unfinished restore of the same backup was finished)"
	}
	return s
}

// dialEtcd connects an admin command to the etcd members at endpoints.
func dialEtcd(endpoints []string) (*clientv3.Client, error) {
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:          endpoints,
		DialTimeout:        5 * time.Second,
		MaxCallSendMsgSize: 64 << 20,
		Logger:             zap.NewNop(),
	})
	if err != nil {
		return nil, fmt.Errorf("connect to etcd %s: %w", strings.Join(endpoints, ","), err)
	}
	return cli, nil
}

// EtcdPrefix returns the key prefix a server on etcd uses for prefix
// (the default when it is empty).
func EtcdPrefix(prefix string) string {
	if prefix == "" {
		return "hilodb/"
	}
	return prefix
}

// RestoreEtcd installs a backup (from /admin/backup of a server on etcd or
// on its data file) under prefix in the etcd cluster at endpoints, for
// servers started on it afterwards. Every HiLo Max, identity, node-sequence
// and change-sequence counter is set to the highest value the backup holds
// plus bump, and never lower than the prefix holds already; clients resync
// from the start (their checkpoints may be past what the backup has).
//
// It refuses while a server serves the prefix, and a prefix with data in it
// unless force (then the documents and definitions not in the backup are
// removed; counters and the node-tag registry stay, raised where the backup
// is higher). It is idempotent: run again with the same backup and bump it
// does nothing if it finished, and finishes what it did not.
func RestoreEtcd(ctx context.Context, endpoints []string, prefix, backup string, bump int64, force bool) (*EtcdRestoreReport, error) {
	b, res, err := readBackup(backup, bump)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(append(b, strconv.FormatInt(bump, 10)...))
	digest := hex.EncodeToString(sum[:])
	state := replay(res.records)

	cli, err := dialEtcd(endpoints)
	if err != nil {
		return nil, err
	}
	defer cli.Close()
	w := &etcdWriter{cli: cli, prefix: EtcdPrefix(prefix)}
	if err := w.refuseLive(ctx); err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	rep := &EtcdRestoreReport{}
	mk, markRev, err := w.marker(ctx)
	if err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	switch {
	case mk != nil && mk.Digest == digest && mk.State == restoreDone:
		rep.AlreadyDone = true
		return rep, nil
	case mk != nil && mk.Digest == digest:
		rep.Resumed = true
	case !force:
		n, err := w.count(ctx)
		if err != nil {
			return nil, fmt.Errorf("restore: %w", err)
		}
		if n > 0 {
			return nil, fmt.Errorf("restore: %w (%d keys under %q); restore into a fresh -etcd-prefix, or pass -force to replace its documents (its counters are kept where higher)", ErrPrefixNotEmpty, n, w.prefix)
		}
	}
	// Claim the prefix: a restore running beside this one changes the
	// marker, and every batch below then fails its compare.
	markRev, err = w.setMarker(ctx, restoreMarker{Digest: digest, State: restoreRunning, At: time.Now().UTC().Format(time.RFC3339)}, markRev)
	if err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	existing, err := w.readAll(ctx)
	if err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	// Counters first: the highest of the backup's peak plus bump and what
	// the prefix holds, so no number handed out from either comes again.
	var ops []clientv3.Op
	for key, peak := range state.peak {
		target := min(peak+min(bump, MaxSafeNumber), MaxSafeNumber)
		if cur, ok := existing[key]; ok {
			if v, ok := CounterValue(key, cur); ok && v > target {
				target = v
			}
		}
		cops := w.counterOps(key, target)
		if len(cops) == 0 {
			continue
		}
		ops = append(ops, cops...)
		rep.Raised++
	}
	sort.Slice(ops, func(i, j int) bool { return string(ops[i].KeyBytes()) < string(ops[j].KeyBytes()) })
	// Then the documents, definitions and registries of the backup.
	var rest []string
	for key := range state.values {
		// A single server's change counter and sequence index have no
		// place on etcd, whose sequence is its revision.
		if !isCounter(key) && !hasPrefix(key, "rpurged/") && !hasPrefix(key, "rseq/") && restorable(key) {
			rest = append(rest, key)
		}
	}
	sort.Strings(rest)
	for _, key := range rest {
		ops = append(ops, clientv3.OpPut(w.prefix+key, state.values[key]))
	}
	rep.Written = len(ops)
	// Last, what the prefix held that the backup does not (forced only).
	var stale []string
	for key := range existing {
		if _, ok := state.values[key]; !ok && removable(key) {
			stale = append(stale, key)
		}
	}
	sort.Strings(stale)
	for _, key := range stale {
		ops = append(ops, clientv3.OpDelete(w.prefix+key))
	}
	rep.Deleted = len(stale)
	if err := w.apply(ctx, ops, markRev); err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	// Every checkpoint a client holds from before (a single server's
	// sequence, or revisions of this cluster before the restore) is below
	// the revision the restore ended at: that is each database's purge
	// mark, so those clients pull everything again, once, and then go on
	// from revisions of the copy.
	if err := w.markPurged(ctx, state, markRev); err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	if _, err := w.setMarker(ctx, restoreMarker{Digest: digest, State: restoreDone, At: time.Now().UTC().Format(time.RFC3339)}, markRev); err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	return rep, nil
}

// restorable reports whether a key of a backup is written into etcd: not
// the live-tag keys (they belong to a running server's lease) and not the
// data file's own bookkeeping.
func restorable(key string) bool {
	return !hasPrefix(key, liveTagPrefix) && !hasPrefix(key, "sys/")
}

// removable reports whether a forced restore removes a key the backup does
// not have: documents and definitions go; counters and the node-tag
// registry (a tag given to a client or a server is never given again) stay.
func removable(key string) bool {
	return restorable(key) && !isCounter(key) && !hasPrefix(key, "rpurged/") &&
		!hasPrefix(key, NodePrefix) && !hasPrefix(key, ServerTagPrefix)
}

// etcdWriter is an admin command's access to one prefix of an etcd cluster.
type etcdWriter struct {
	cli    *clientv3.Client
	prefix string
}

// refuseLive fails with ErrServersLive while a server holds a tag under the
// prefix.
func (w *etcdWriter) refuseLive(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, etcdOpTimeout)
	defer cancel()
	resp, err := w.cli.Get(cctx, w.prefix+liveTagPrefix, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		return fmt.Errorf("read live servers: %w", err)
	}
	if len(resp.Kvs) > 0 {
		var tags []string
		for _, kv := range resp.Kvs {
			tags = append(tags, strings.TrimPrefix(string(kv.Key), w.prefix+liveTagPrefix))
		}
		return fmt.Errorf("%w (%s); stop them first (a stopped server's tag lease expires within %d s)", ErrServersLive, strings.Join(tags, ", "), tagLeaseTTL)
	}
	return nil
}

// marker reads the restore marker and its mod revision (0: none).
func (w *etcdWriter) marker(ctx context.Context) (*restoreMarker, int64, error) {
	cctx, cancel := context.WithTimeout(ctx, etcdOpTimeout)
	defer cancel()
	resp, err := w.cli.Get(cctx, w.prefix+restoreMarkerKey)
	if err != nil {
		return nil, 0, fmt.Errorf("read restore marker: %w", err)
	}
	if len(resp.Kvs) == 0 {
		return nil, 0, nil
	}
	var m restoreMarker
	if err := json.Unmarshal(resp.Kvs[0].Value, &m); err != nil {
		return nil, 0, fmt.Errorf("decode restore marker: %w", err)
	}
	return &m, resp.Kvs[0].ModRevision, nil
}

// setMarker writes the marker if it still has mod revision rev, and returns
// its new mod revision.
func (w *etcdWriter) setMarker(ctx context.Context, m restoreMarker, rev int64) (int64, error) {
	b, _ := json.Marshal(m)
	cctx, cancel := context.WithTimeout(ctx, etcdOpTimeout)
	defer cancel()
	key := w.prefix + restoreMarkerKey
	resp, err := w.cli.Txn(cctx).If(clientv3.Compare(clientv3.ModRevision(key), "=", rev)).Then(clientv3.OpPut(key, string(b))).Commit()
	if err != nil {
		return 0, fmt.Errorf("write restore marker: %w", err)
	}
	if !resp.Succeeded {
		return 0, errors.New("another restore into the prefix is running")
	}
	return resp.Header.Revision, nil
}

// count returns how many keys the prefix holds.
func (w *etcdWriter) count(ctx context.Context) (int64, error) {
	cctx, cancel := context.WithTimeout(ctx, etcdOpTimeout)
	defer cancel()
	resp, err := w.cli.Get(cctx, w.prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return 0, fmt.Errorf("count keys: %w", err)
	}
	return resp.Count, nil
}

// readAll returns every key under the prefix (without it) and its value,
// read at one revision.
func (w *etcdWriter) readAll(ctx context.Context) (map[string]string, error) {
	out := map[string]string{}
	err := scanAt(ctx, w.cli, w.prefix, func(kv *mvccpb.KeyValue) {
		out[strings.TrimPrefix(string(kv.Key), w.prefix)] = string(kv.Value)
	})
	if err != nil {
		return nil, fmt.Errorf("read keys: %w", err)
	}
	return out, nil
}

// counterOps are the writes that set the counter key to v: a HiLo document
// with Max v (and no range a client may return), or the number. A single
// server's change counter is not written: on etcd the sequence is the
// revision (markPurged moves the purge marks instead).
func (w *etcdWriter) counterOps(key string, v int64) []clientv3.Op {
	if hasPrefix(key, HiloPrefix) {
		b, _ := json.Marshal(HiloDoc{Max: v})
		return []clientv3.Op{clientv3.OpPut(w.prefix+key, string(b))}
	}
	if hasPrefix(key, SeqCounterPrefix) {
		return nil
	}
	return []clientv3.Op{clientv3.OpPut(w.prefix+key, strconv.FormatInt(v, 10))}
}

// markPurged sets the purge mark of every database of the backup to etcd's
// revision now, past every document the restore wrote.
func (w *etcdWriter) markPurged(ctx context.Context, state *logState, markRev int64) error {
	dbs := map[string]bool{}
	for key := range state.peak {
		if db, ok := strings.CutPrefix(key, SeqCounterPrefix); ok {
			dbs[db] = true
		}
	}
	return w.markPurgedNow(ctx, dbs, markRev)
}

// markPurgedNow sets the purge mark of each database of dbs to etcd's
// revision now.
func (w *etcdWriter) markPurgedNow(ctx context.Context, set map[string]bool, markRev int64) error {
	if len(set) == 0 {
		return nil
	}
	dbs := make([]string, 0, len(set))
	for db := range set {
		dbs = append(dbs, db)
	}
	sort.Strings(dbs)
	now, err := w.cli.Get(ctx, w.prefix+restoreMarkerKey)
	if err != nil {
		return fmt.Errorf("read revision: %w", err)
	}
	rev := strconv.FormatInt(now.Header.Revision, 10)
	ops := make([]clientv3.Op, 0, len(dbs))
	for _, db := range dbs {
		ops = append(ops, clientv3.OpPut(w.prefix+PurgedKey(db), rev))
	}
	return w.apply(ctx, ops, markRev)
}

// apply commits ops in transactions of bounded size, each only while the
// restore marker still has mod revision markRev.
func (w *etcdWriter) apply(ctx context.Context, ops []clientv3.Op, markRev int64) error {
	guard := clientv3.Compare(clientv3.ModRevision(w.prefix+restoreMarkerKey), "=", markRev)
	for len(ops) > 0 {
		n, size := 0, 0
		for n < len(ops) && n < etcdBatchOps {
			s := len(ops[n].KeyBytes()) + len(ops[n].ValueBytes())
			if n > 0 && size+s > etcdBatchBytes {
				break
			}
			size += s
			n++
		}
		cctx, cancel := context.WithTimeout(ctx, etcdOpTimeout)
		resp, err := w.cli.Txn(cctx).If(guard).Then(ops[:n]...).Commit()
		cancel()
		if err != nil {
			return fmt.Errorf("write keys: %w", err)
		}
		if !resp.Succeeded {
			return errors.New("another restore into the prefix took it over")
		}
		ops = ops[n:]
	}
	return nil
}

// checkRestoreMarker fails with ErrRestoreUnfinished when a restore into
// the store's prefix started and did not finish: serving from half a
// restore could lose documents or hand out numbers again.
func checkRestoreMarker(cli *clientv3.Client, prefix string) error {
	m, _, err := (&etcdWriter{cli: cli, prefix: prefix}).marker(context.Background())
	if err != nil {
		return fmt.Errorf("open etcd store: %w", err)
	}
	if m != nil && m.State != restoreDone {
		return fmt.Errorf("open etcd store: %w (marked %s); run the same `hilodb-server restore` again to finish it", ErrRestoreUnfinished, m.At)
	}
	return nil
}

// SetCounterEtcd sets one counter under prefix in the etcd cluster at
// endpoints, as SetCounter does in a data file, in one transaction that
// applies only if the counter did not change since it was read (a running
// server may lease from it meanwhile: then it reads again). Raising is safe
// while servers run. Lowering can hand out numbers again: it is refused
// unless force, and even then while a server serves the prefix. It returns
// the value before.
func SetCounterEtcd(ctx context.Context, endpoints []string, prefix, db, kind, name string, value int64, force bool) (int64, error) {
	key, val, err := counterSetting(db, kind, name, value)
	if err != nil {
		return 0, err
	}
	cli, err := dialEtcd(endpoints)
	if err != nil {
		return 0, err
	}
	defer cli.Close()
	w := &etcdWriter{cli: cli, prefix: EtcdPrefix(prefix)}
	for range maxTxAttempts {
		cctx, cancel := context.WithTimeout(ctx, etcdOpTimeout)
		resp, err := cli.Get(cctx, w.prefix+key)
		cancel()
		if err != nil {
			return 0, fmt.Errorf("set counter: read %s: %w", key, err)
		}
		var old, rev int64
		if len(resp.Kvs) > 0 {
			old, _ = CounterValue(key, string(resp.Kvs[0].Value))
			rev = resp.Kvs[0].ModRevision
		}
		if value < old {
			if !force {
				return old, fmt.Errorf("set counter: %w: %s is at %d; numbers up to it may be held by clients and would be handed out again (pass -force, with every server stopped, if none is)", ErrLowering, key, old)
			}
			if err := w.refuseLive(ctx); err != nil {
				return old, fmt.Errorf("set counter: lowering: %w", err)
			}
		}
		cctx, cancel = context.WithTimeout(ctx, etcdOpTimeout)
		tr, err := cli.Txn(cctx).If(clientv3.Compare(clientv3.ModRevision(w.prefix+key), "=", rev)).
			Then(clientv3.OpPut(w.prefix+key, val)).Commit()
		cancel()
		if err != nil {
			return old, fmt.Errorf("set counter: write %s: %w", key, err)
		}
		if tr.Succeeded {
			return old, nil
		}
	}
	return 0, fmt.Errorf("set counter: %w", ErrContention)
}

// ErrLowering is returned by SetCounterEtcd for a value below the
// counter's, without force.
var ErrLowering = errors.New("refusing to lower a counter")

// RepairEtcd raises every counter under prefix (HiLo Max, identities, the
// node-tag and node-sequence counters, change sequences) by bump, and
// makes every client resync. It is the repair for a prefix whose etcd was
// rolled back (restored from an etcd snapshot, `etcdutl snapshot restore`):
// numbers handed out after the snapshot must not come again. etcd keeps its
// own log and refuses a damaged one, so there is no data file to rebuild.
// Every server of the prefix must be stopped.
func RepairEtcd(ctx context.Context, endpoints []string, prefix string, bump int64) (int, error) {
	if bump < 0 {
		return 0, errors.New("repair: bump must not be negative")
	}
	cli, err := dialEtcd(endpoints)
	if err != nil {
		return 0, err
	}
	defer cli.Close()
	w := &etcdWriter{cli: cli, prefix: EtcdPrefix(prefix)}
	if err := w.refuseLive(ctx); err != nil {
		return 0, fmt.Errorf("repair: %w", err)
	}
	mk, markRev, err := w.marker(ctx)
	if err != nil {
		return 0, fmt.Errorf("repair: %w", err)
	}
	if mk != nil && mk.State != restoreDone {
		return 0, fmt.Errorf("repair: %w; run the restore again first", ErrRestoreUnfinished)
	}
	existing, err := w.readAll(ctx)
	if err != nil {
		return 0, fmt.Errorf("repair: %w", err)
	}
	var ops []clientv3.Op
	raised := 0
	for key, val := range existing {
		if !isCounter(key) {
			continue
		}
		v, ok := CounterValue(key, val)
		if !ok {
			return 0, fmt.Errorf("repair: counter %s holds %q, not a number", key, val)
		}
		if hasPrefix(key, HiloPrefix) {
			var d HiloDoc
			_ = json.Unmarshal([]byte(val), &d)
			v = d.Highest()
		}
		cops := w.counterOps(key, min(v+min(bump, MaxSafeNumber), MaxSafeNumber))
		if len(cops) == 0 {
			continue
		}
		ops = append(ops, cops...)
		raised++
	}
	if err := w.apply(ctx, ops, markRev); err != nil {
		return 0, fmt.Errorf("repair: %w", err)
	}
	// Checkpoints from before the rollback name revisions of another
	// history: every database's purge mark moves to now, so clients
	// resync.
	dbs := map[string]bool{}
	for key := range existing {
		if rest, ok := strings.CutPrefix(key, "rdoc/"); ok {
			if db, _, ok := strings.Cut(rest, "/"); ok {
				dbs[db] = true
			}
		} else if db, ok := strings.CutPrefix(key, "rpurged/"); ok {
			dbs[db] = true
		}
	}
	if err := w.markPurgedNow(ctx, dbs, markRev); err != nil {
		return 0, fmt.Errorf("repair: %w", err)
	}
	return raised, nil
}
