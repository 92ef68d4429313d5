package storage

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Keys of the server registry in etcd. ServerTagPrefix+tag marks a tag as
// a server's for good (no client is ever given it); liveTagPrefix+tag is
// held under the lease of the server running with it now.
const (
	ServerTagPrefix = "srvtag/"
	liveTagPrefix   = "srvlive/"
	// tagLeaseTTL is how long a tag stays held after its server stopped
	// renewing it (a crash): a restarted server gets its tag back after
	// at most this long.
	tagLeaseTTL = 5
	// claimWait is how long a claim of a held tag waits: out the lease
	// of a crashed predecessor with the same tag.
	claimWait = 2*tagLeaseTTL*time.Second + 2*time.Second
)

// errTagHeld means another live server holds the tag this one asked for.
var errTagHeld = fmt.Errorf("node tag is held by another live server")

// errTagClient means the tag this server asked for was given to a client.
var errTagClient = errors.New("it was given to a client")

// ClaimTag takes tag for this server under a lease, unless ChooseTag
// took it already, waiting out the lease of a crashed predecessor with the
// same tag. HoldTag keeps it.
func (s *Etcd) ClaimTag(ctx context.Context, tag string) error {
	if s.lease != 0 {
		return nil
	}
	lease, err := s.claimTag(ctx, tag, claimWait)
	if err != nil {
		return err
	}
	s.lease = lease
	return nil
}

// claimTag takes tag for this server under a new lease: it succeeds only
// if no live server holds it and no client was given it. A tag whose
// server died is free again once that server's lease expires. The lease
// is kept alive until ctx ends; when it is lost the store refuses changes
// and claimTag's loop takes the tag again as soon as it can.
func (s *Etcd) claimTag(ctx context.Context, tag string, wait time.Duration) (clientv3.LeaseID, error) {
	deadline := time.Now().Add(wait)
	for {
		id, err := s.tryClaimTag(ctx, tag)
		if err == nil {
			return id, nil
		}
		if err != errTagHeld || time.Now().After(deadline) {
			return 0, err
		}
		select {
		case <-time.After(500 * time.Millisecond):
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}

func (s *Etcd) tryClaimTag(ctx context.Context, tag string) (clientv3.LeaseID, error) {
	cctx, cancel := context.WithTimeout(ctx, etcdOpTimeout)
	defer cancel()
	p := s.prefix
	// A tag a client holds (node/ without srvtag/) is not a server's to take.
	node, err := s.cli.Get(cctx, p+NodePrefix+tag)
	if err != nil {
		return 0, fmt.Errorf("read node tag %s: %w", tag, err)
	}
	var nodeRev int64
	if len(node.Kvs) > 0 {
		nodeRev = node.Kvs[0].ModRevision
		srv, err := s.cli.Get(cctx, p+ServerTagPrefix+tag)
		if err != nil {
			return 0, fmt.Errorf("read node tag %s: %w", tag, err)
		}
		if len(srv.Kvs) == 0 {
			return 0, fmt.Errorf("node tag %s: %w; choose another -node-tag", tag, errTagClient)
		}
	}
	lease, err := s.cli.Grant(cctx, tagLeaseTTL)
	if err != nil {
		return 0, fmt.Errorf("grant node tag lease: %w", err)
	}
	now := time.Now().UTC().Format(time.RFC3339)
	tr, err := s.cli.Txn(cctx).If(
		clientv3.Compare(clientv3.CreateRevision(p+liveTagPrefix+tag), "=", 0),
		clientv3.Compare(clientv3.ModRevision(p+NodePrefix+tag), "=", nodeRev),
	).Then(
		clientv3.OpPut(p+liveTagPrefix+tag, now, clientv3.WithLease(lease.ID)),
		clientv3.OpPut(p+ServerTagPrefix+tag, now),
		clientv3.OpPut(p+NodePrefix+tag, now),
	).Commit()
	if err != nil {
		_, _ = s.cli.Revoke(context.WithoutCancel(cctx), lease.ID)
		return 0, fmt.Errorf("claim node tag %s: %w", tag, err)
	}
	if !tr.Succeeded {
		_, _ = s.cli.Revoke(cctx, lease.ID)
		return 0, errTagHeld
	}
	return lease.ID, nil
}

// HoldTag keeps the lease on tag alive until ctx ends, then revokes it so a
// restarted server gets its tag at once. If the lease is lost (etcd out of
// reach past its time to live), every update is refused until the tag is
// claimed again.
func (s *Etcd) HoldTag(ctx context.Context, tag string, logf func(msg string, args ...any)) {
	lease := s.lease
	for {
		ch, err := s.cli.KeepAlive(ctx, lease)
		if err == nil {
			for range ch {
			}
		}
		if ctx.Err() != nil {
			rctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			_, _ = s.cli.Revoke(rctx, lease)
			cancel()
			return
		}
		s.setFailed(ErrNoTag)
		logf("node tag lease lost; claiming the tag again", "tag", tag)
		for {
			id, err := s.tryClaimTag(ctx, tag)
			if err == nil {
				lease = id
				s.setFailed(nil)
				logf("node tag held again", "tag", tag)
				break
			}
			select {
			case <-time.After(time.Second):
			case <-ctx.Done():
				return
			}
		}
	}
}

// WatchChanges calls changed with the database of every document written
// (through any server), until ctx ends: the live feeds of this server
// follow the writes made through the others. What it sees goes to the
// store's change log, for the proof behind a push's prevSeq. The watch
// resumes from the revision after the last one it delivered, so a broken
// watch loses nothing; if etcd compacted that revision away meanwhile, the
// change log starts afresh and every feed is woken.
func (s *Etcd) WatchChanges(ctx context.Context, changed func(db string)) {
	key := s.prefix + "rdoc/"
	var next int64 // the revision to watch from; 0: from now
	for ctx.Err() == nil {
		if next == 0 {
			rev, err := s.CurrentRev(ctx)
			if err != nil {
				s.changes.reset(0)
				select {
				case <-time.After(500 * time.Millisecond):
				case <-ctx.Done():
				}
				continue
			}
			s.changes.reset(rev)
			next = rev + 1
		}
		wch := s.cli.Watch(clientv3.WithRequireLeader(ctx), key, clientv3.WithPrefix(), clientv3.WithRev(next))
		for resp := range wch {
			if resp.CompactRevision != 0 {
				next = 0
				break
			}
			s.changes.record(key, resp.Events)
			dbs := map[string]bool{}
			for _, ev := range resp.Events {
				db, _, _ := strings.Cut(strings.TrimPrefix(string(ev.Kv.Key), key), "/")
				dbs[db] = true
				next = ev.Kv.ModRevision + 1
			}
			for db := range dbs {
				changed(db)
			}
		}
		// The watch ended (a lost leader, a compaction): wake every feed so
		// none waits on a signal lost meanwhile, then watch again.
		changed("")
		select {
		case <-time.After(200 * time.Millisecond):
		case <-ctx.Done():
		}
	}
	s.changes.reset(0)
}

// tagFile is the file in a server's data directory that keeps the tag it
// chose on etcd, so that a restart takes the same tag back.
const tagFile = "server-tag"

// ChooseTag is how a server on etcd started without a tag gets one: the
// tag kept in dataDir from an earlier start (waiting out the lease of its
// own crashed predecessor), else the first of A…Z that no live server holds
// and no client was given, which it keeps in dataDir before it serves.
func (s *Etcd) ChooseTag(dataDir string) (string, error) {
	ctx := context.Background()
	path := filepath.Join(dataDir, tagFile)
	if b, err := os.ReadFile(path); err == nil {
		tag := strings.TrimSpace(string(b))
		if !ValidNodeTag(tag) {
			return "", fmt.Errorf("node tag in %s: %q is not one", path, tag)
		}
		lease, err := s.claimTag(ctx, tag, claimWait)
		if err != nil {
			return "", fmt.Errorf("take node tag %s kept in %s: %w", tag, path, err)
		}
		s.lease = lease
		return tag, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("read node tag: %w", err)
	}
	for c := 'A'; c <= 'Z'; c++ {
		tag := string(c)
		lease, err := s.tryClaimTag(ctx, tag)
		if errors.Is(err, errTagHeld) || errors.Is(err, errTagClient) {
			continue
		}
		if err != nil {
			return "", err
		}
		if err := writeTagFile(dataDir, path, tag); err != nil {
			_, _ = s.cli.Revoke(ctx, lease)
			return "", err
		}
		s.lease = lease
		return tag, nil
	}
	return "", fmt.Errorf("choose a node tag: A to Z are all taken; give one with -node-tag")
}

// writeTagFile keeps tag in path durably: written, synced, renamed.
func writeTagFile(dir, path, tag string) error {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("keep node tag: %w", err)
	}
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o640)
	if err != nil {
		return fmt.Errorf("keep node tag: %w", err)
	}
	_, err = f.WriteString(tag + "\n")
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err == nil {
		if d, derr := os.Open(dir); derr == nil {
			_ = d.Sync()
			d.Close()
		}
	}
	if err != nil {
		return fmt.Errorf("keep node tag: %w", err)
	}
	return nil
}
