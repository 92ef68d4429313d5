package cluster_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/hilodb/hilodb/client"
	"github.com/hilodb/hilodb/idgen"
	"github.com/hilodb/hilodb/internal/servertest"
)

// admin runs a hilodb-server admin command and returns its output and
// whether it succeeded.
func admin(t *testing.T, bin string, args ...string) (string, bool) {
	t.Helper()
	out, err := exec.Command(bin, args...).CombinedOutput()
	return string(out), err == nil
}

// etcdKeys reads every key under prefix (without it) with its value and
// mod revision.
func etcdKeys(t *testing.T, cli *clientv3.Client, prefix string) map[string][2]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, prefix, clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][2]string{}
	for _, kv := range resp.Kvs {
		out[strings.TrimPrefix(string(kv.Key), prefix)] = [2]string{string(kv.Value), strconv.FormatInt(kv.ModRevision, 10)}
	}
	return out
}

// TestRestoreIntoEtcd takes a backup from a server on etcd, restores it
// into fresh prefixes with `hilodb-server restore -etcd`, and starts a
// server on the copy: every document is there and every number goes on
// above those handed out before. The restore refuses a prefix in use or
// with data, is idempotent, finishes an interrupted run, and a server
// refuses to start on a half-restored prefix; set-counter and repair work
// on etcd too.
func TestRestoreIntoEtcd(t *testing.T) {
	ec := startEtcd(t)
	bin := servertest.BuildServer(t)
	eps := strings.Join(ec.Endpoints(), ",")
	cli := etcdClient(t, ec.Endpoints())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	// The original deployment: documents, HiLo ranges, identities.
	a := newNode(t, bin, "A", ec.Endpoints())
	a.prefix = "old/"
	a.start()
	ca, err := client.Dial(ctx, a.url(), client.Options{Database: "shop"})
	if err != nil {
		t.Fatal(err)
	}
	defer ca.Close()
	revs := map[string]string{}
	for i := range 40 {
		id := fmt.Sprintf("orders/%d-X", i)
		doc := fmt.Appendf(nil, `{"_id":%q,"n":%d}`, id, i)
		out, err := ca.Push(ctx, []client.PushItem{{ID: id, Rev: "_mAAAAAAAB-T", Doc: doc}})
		if err != nil || !out.Results[0].OK {
			t.Fatalf("push %s: %v %+v", id, err, out)
		}
		revs[id] = "_mAAAAAAAB-T"
	}
	var high int64
	for range 5 {
		r, err := ca.NextRange(ctx, "orders", idgen.Range{})
		if err != nil {
			t.Fatal(err)
		}
		high = max(high, r.High)
	}
	for range 2 {
		ravenNew(t, a.addr, "people/")
	}
	var ident int64
	for range 7 {
		if ident, err = ca.NextIdentity(ctx, "companies"); err != nil {
			t.Fatal(err)
		}
	}

	file := filepath.Join(t.TempDir(), "backup.db")
	if out, ok := admin(t, bin, "backup", "-url", "http://"+a.addr+"/admin/backup", "-out", file); !ok {
		t.Fatalf("backup: %s", out)
	}
	// A write after the backup: a forced restore over old/ removes it.
	if out, err := ca.Push(ctx, []client.PushItem{{ID: "late/1", Rev: "_mAAAAAAAB-T", Doc: []byte(`{"_id":"late/1"}`)}}); err != nil || !out.Results[0].OK {
		t.Fatalf("push late/1: %v %+v", err, out)
	}
	lateRange, err := ca.NextRange(ctx, "orders", idgen.Range{})
	if err != nil {
		t.Fatal(err)
	}
	var latePerson int64
	for range 3 {
		latePerson = ravenNew(t, a.addr, "people/")
	}

	// A prefix a server runs on is refused, forced or not.
	if out, ok := admin(t, bin, "restore", "-etcd", eps, "-etcd-prefix", "old/", "-force", file); ok || !strings.Contains(out, "sync servers are running") {
		t.Errorf("restore into a served prefix: ok=%v %s", ok, out)
	}

	// Into a fresh prefix, twice: the second run writes nothing.
	out, ok := admin(t, bin, "restore", "-etcd", eps, "-etcd-prefix", "new/", file)
	if !ok || !strings.Contains(out, "keys written") {
		t.Fatalf("restore into new/: %s", out)
	}
	restored := etcdKeys(t, cli, "new/")
	if out, ok := admin(t, bin, "restore", "-etcd", eps, "-etcd-prefix", "new/", "-from", file); !ok || !strings.Contains(out, "nothing written") {
		t.Errorf("restore again: %s", out)
	}
	if again := etcdKeys(t, cli, "new/"); fmt.Sprint(again) != fmt.Sprint(restored) {
		t.Errorf("the second restore changed keys:\nbefore %v\nafter  %v", restored, again)
	}
	for key := range restored {
		if strings.HasPrefix(key, "srvlive/") {
			t.Errorf("restored a live-tag key %s: the tag would look held for ever", key)
		}
	}

	// An interrupted restore: the marker says running and keys are missing.
	// A server refuses the prefix; running the restore again finishes it.
	if out, ok := admin(t, bin, "restore", "-etcd", eps, "-etcd-prefix", "half/", file); !ok {
		t.Fatalf("restore into half/: %s", out)
	}
	var marker map[string]string
	if err := json.Unmarshal([]byte(etcdKeys(t, cli, "half/")["sys/restore"][0]), &marker); err != nil {
		t.Fatal(err)
	}
	marker["state"] = "running"
	mb, _ := json.Marshal(marker)
	if _, err := cli.Put(ctx, "half/sys/restore", string(mb)); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Delete(ctx, "half/rdoc/shop/", clientv3.WithPrefix()); err != nil {
		t.Fatal(err)
	}
	h := newNode(t, bin, "H", ec.Endpoints())
	h.prefix = "half/"
	h.launch()
	if !h.exited(30*time.Second) || !strings.Contains(h.p.Out.String(), "did not finish") {
		t.Errorf("a server on a half-restored prefix: %s", h.p.Out)
	}
	if out, ok := admin(t, bin, "restore", "-etcd", eps, "-etcd-prefix", "half/", file); !ok || !strings.Contains(out, "finished") {
		t.Errorf("restore resumed: %s", out)
	}
	half := etcdKeys(t, cli, "half/")
	for key, v := range restored {
		if key != "sys/restore" && !strings.HasPrefix(key, "rpurged/") && half[key][0] != v[0] {
			t.Errorf("half/%s after the resumed restore: %q, want %q", key, half[key][0], v[0])
		}
	}
	// A database's purge mark is a revision past every document restored,
	// so every checkpoint from before is purged there.
	newest := int64(0)
	for key, v := range half {
		if strings.HasPrefix(key, "rdoc/shop/") {
			rev, _ := strconv.ParseInt(v[1], 10, 64)
			newest = max(newest, rev)
		}
	}
	if mark, err := strconv.ParseInt(half["rpurged/shop"][0], 10, 64); err != nil || mark < newest || newest == 0 {
		t.Errorf("half/rpurged/shop %q after the resumed restore; the newest document has revision %d", half["rpurged/shop"][0], newest)
	}

	// A server on the copy: every document, numbers above the old ones.
	b := newNode(t, bin, "A", ec.Endpoints())
	b.prefix = "new/"
	b.start()
	cb, err := client.Dial(ctx, b.url(), client.Options{Database: "shop"})
	if err != nil {
		t.Fatal(err)
	}
	defer cb.Close()
	var ids []string
	for id := range revs {
		ids = append(ids, id)
	}
	got, err := cb.Get(ctx, ids)
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, ch := range got {
		if !ch.Deleted && revs[ch.ID] == ch.Rev {
			found++
		}
	}
	if found != len(revs) {
		t.Errorf("%d of %d documents on the restored prefix: %+v", found, len(revs), got)
	}
	r, err := cb.NextRange(ctx, "orders", idgen.Range{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Low <= lateRange.High || r.Low <= high {
		t.Errorf("range %d-%d after the restore; ranges up to %d were handed out", r.Low, r.High, lateRange.High)
	}
	next, err := cb.NextIdentity(ctx, "companies")
	if err != nil {
		t.Fatal(err)
	}
	if next <= ident {
		t.Errorf("identity %d after the restore; %d was handed out", next, ident)
	}
	if n := ravenNew(t, b.addr, "people/"); n <= latePerson {
		t.Errorf("node-sequence id %d after the restore; %d was handed out", n, latePerson)
	}
	// Everything the backup holds comes to a client pulling from zero.
	pulled, err := cb.Pull(ctx, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(pulled.Changes) != len(revs)+3 {
		t.Errorf("pull from 0 on the copy: %d changes, want %d", len(pulled.Changes), len(revs)+3)
	}
	// The checkpoint that pull gave is one of the copy's: the purge mark
	// is below it, so the client goes on from it instead of pulling
	// everything again and again.
	again, err := cb.Pull(ctx, pulled.Last, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if again.PurgedSeq > pulled.Last || len(again.Changes) != 0 {
		t.Errorf("pull from the checkpoint %d after the restore: purged %d, %d changes; want a checkpoint the client can keep", pulled.Last, again.PurgedSeq, len(again.Changes))
	}

	// set-counter on etcd while the server runs: raising is taken at once,
	// lowering is refused.
	if out, ok := admin(t, bin, "set-counter", "-etcd", eps, "-etcd-prefix", "new/", "-db", "shop", "-identity", "companies", "-value", strconv.FormatInt(next+1000, 10)); !ok {
		t.Fatalf("set-counter: %s", out)
	}
	if v, err := cb.NextIdentity(ctx, "companies"); err != nil || v != next+1001 {
		t.Errorf("identity after set-counter %d: %d %v", next+1000, v, err)
	}
	if out, ok := admin(t, bin, "set-counter", "-etcd", eps, "-etcd-prefix", "new/", "-db", "shop", "-identity", "companies", "-value", "1"); ok || !strings.Contains(out, "refusing to lower") {
		t.Errorf("set-counter lowering: ok=%v %s", ok, out)
	}
	if out, ok := admin(t, bin, "set-counter", "-etcd", eps, "-etcd-prefix", "new/", "-db", "shop", "-identity", "companies", "-value", "1", "-force"); ok || !strings.Contains(out, "sync servers are running") {
		t.Errorf("set-counter lowering with -force while a server runs: ok=%v %s", ok, out)
	}

	// Over old/, once its server stopped: refused without -force; with it,
	// the documents written after the backup go, the counters stay at
	// least where they were.
	a.stop()
	before := etcdKeys(t, cli, "old/")
	waitNoLive(t, cli, "old/")
	if out, ok := admin(t, bin, "restore", "-etcd", eps, "-etcd-prefix", "old/", file); ok || !strings.Contains(out, "holds data already") {
		t.Errorf("restore into old/ without -force: ok=%v %s", ok, out)
	}
	if out, ok := admin(t, bin, "restore", "-etcd", eps, "-etcd-prefix", "old/", "-force", file); !ok {
		t.Fatalf("restore -force into old/: %s", out)
	}
	after := etcdKeys(t, cli, "old/")
	if _, ok := after["rdoc/shop/late/1"]; ok {
		t.Error("a forced restore kept a document the backup does not have")
	}
	for key, v := range before {
		if !isCounterKey(key) {
			continue
		}
		if counterOf(t, key, after[key][0]) < counterOf(t, key, v[0]) {
			t.Errorf("a forced restore lowered %s from %s to %s", key, v[0], after[key][0])
		}
	}

	// repair on etcd raises every counter by -bump.
	if out, ok := admin(t, bin, "repair", "-etcd", eps, "-etcd-prefix", "old/", "-bump", "1000"); !ok || !strings.Contains(out, "raised") {
		t.Fatalf("repair -etcd: %s", out)
	}
	repaired := etcdKeys(t, cli, "old/")
	for key, v := range after {
		if isCounterKey(key) && counterOf(t, key, repaired[key][0]) != counterOf(t, key, v[0])+1000 {
			t.Errorf("repair: %s went from %s to %s, want +1000", key, v[0], repaired[key][0])
		}
	}
	// Checkpoints from before an etcd rollback name another history: the
	// purge mark moves past every revision there was, so clients resync.
	newest = 0
	for _, v := range after {
		rev, _ := strconv.ParseInt(v[1], 10, 64)
		newest = max(newest, rev)
	}
	if mark, err := strconv.ParseInt(repaired["rpurged/shop"][0], 10, 64); err != nil || mark < newest {
		t.Errorf("repair: rpurged/shop %q, want at least %d (every revision before the repair)", repaired["rpurged/shop"][0], newest)
	}
}

// ravenNew stores a document through the RavenDB door under a
// server-side node-sequence id (prefix ending in "/") and returns the id's
// number.
func ravenNew(t *testing.T, addr, prefix string) int64 {
	t.Helper()
	req, err := http.NewRequest(http.MethodPut, "http://"+addr+"/databases/shop/docs?id="+prefix, strings.NewReader(`{"name":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out struct{ Id string }
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil || res.StatusCode != http.StatusCreated {
		t.Fatalf("PUT %s: %d %v", prefix, res.StatusCode, err)
	}
	num, _, _ := strings.Cut(strings.TrimPrefix(out.Id, prefix), "-")
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil {
		t.Fatalf("id %s: %v", out.Id, err)
	}
	return n
}

// waitNoLive waits until no server holds a tag under prefix.
func waitNoLive(t *testing.T, cli *clientv3.Client, prefix string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := cli.Get(context.Background(), prefix+"srvlive/", clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil {
			t.Fatal(err)
		}
		if resp.Count == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("a stopped server's tag is still live")
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func isCounterKey(key string) bool {
	for _, p := range []string{"hilo/", "ident/", "rctr/", "srvseq/", "meta/nodeseq"} {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return false
}

// counterOf reads a counter's value: a HiLo document's top, or a number.
func counterOf(t *testing.T, key, val string) int64 {
	t.Helper()
	if strings.HasPrefix(key, "hilo/") {
		var d struct{ Max, Top int64 }
		if err := json.Unmarshal([]byte(val), &d); err != nil {
			t.Fatalf("%s: %q", key, val)
		}
		return max(d.Max, d.Top)
	}
	n, err := strconv.ParseInt(val, 10, 64)
	if err != nil {
		t.Fatalf("%s: %q", key, val)
	}
	return n
}

// TestRestoreKilledMidway kills `hilodb-server restore -etcd` with SIGKILL
// in the middle of a large backup: no server starts on the half-written
// prefix, and running the restore again finishes it, with every document
// and the counters raised.
func TestRestoreKilledMidway(t *testing.T) {
	ec := startEtcd(t)
	bin := servertest.BuildServer(t)
	eps := strings.Join(ec.Endpoints(), ",")
	cli := etcdClient(t, ec.Endpoints())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	// A backup in the data-file format, written here: n documents of
	// database shop with their change index, and the counters.
	const n = 30000
	var b strings.Builder
	set := func(k, v string) {
		fmt.Fprintf(&b, "*3\r\n$3\r\nset\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n", len(k), k, len(v), v)
	}
	set("db/shop", "2026-11-25T00:00:00Z")
	for i := 1; i <= n; i++ {
		id := fmt.Sprintf("orders/%d-A", i)
		set("rdoc/shop/"+id, fmt.Sprintf(`{"rev":"_mAAAAAAAB-T","seq":%d,"doc":{"_id":%q,"n":%d,"pad":%q}}`, i, id, i, strings.Repeat("x", 100)))
		set(fmt.Sprintf("rseq/shop/%020d", i), id)
	}
	set("rctr/shop", strconv.Itoa(n))
	set("hilo/shop/orders", fmt.Sprintf(`{"Max":%d}`, n))
	set("ident/shop/companies", "77")
	set("sys/commit", "1")
	file := filepath.Join(t.TempDir(), "backup.db")
	if err := os.WriteFile(file, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}

	p := servertest.Launch(t, bin, "restore", "-etcd", eps, "-etcd-prefix", "big/", file)
	// Kill it once its first batches are in etcd.
	for {
		resp, err := cli.Get(ctx, "big/rdoc/", clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil {
			t.Fatal(err)
		}
		if resp.Count > 0 {
			break
		}
		if p.Exited(0) {
			t.Fatalf("the restore ended before any document was written: %s", p.Out)
		}
		time.Sleep(2 * time.Millisecond)
	}
	p.Kill()
	resp, err := cli.Get(ctx, "big/rdoc/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	if resp.Count >= n {
		t.Fatalf("the restore wrote all %d documents before it was killed; the test needs a bigger backup", resp.Count)
	}
	t.Logf("killed with %d of %d documents written", resp.Count, n)

	h := newNode(t, bin, "A", ec.Endpoints())
	h.prefix = "big/"
	h.launch()
	if !h.exited(30*time.Second) || !strings.Contains(h.p.Out.String(), "did not finish") {
		t.Fatalf("a server on a half-restored prefix: %s", h.p.Out)
	}
	// Without the same backup, the prefix is not taken over by accident.
	other := filepath.Join(t.TempDir(), "other.db")
	if err := os.WriteFile(other, []byte(strings.Replace(b.String(), "77", "78", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, ok := admin(t, bin, "restore", "-etcd", eps, "-etcd-prefix", "big/", other); ok || !strings.Contains(out, "holds data already") {
		t.Errorf("another backup into the half-restored prefix: ok=%v %s", ok, out)
	}
	if out, ok := admin(t, bin, "restore", "-etcd", eps, "-etcd-prefix", "big/", file); !ok || !strings.Contains(out, "finished") {
		t.Fatalf("restore again: ok=%v %s", ok, out)
	}
	resp, err = cli.Get(ctx, "big/rdoc/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil || resp.Count != n {
		t.Fatalf("after the second run: %d documents, %v; want %d", resp.Count, err, n)
	}

	s := newNode(t, bin, "A", ec.Endpoints())
	s.prefix = "big/"
	s.start()
	c, err := client.Dial(ctx, s.url(), client.Options{Database: "shop"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got, err := c.Get(ctx, []string{"orders/1-A", fmt.Sprintf("orders/%d-A", n/2), fmt.Sprintf("orders/%d-A", n)})
	if err != nil || len(got) != 3 {
		t.Fatalf("documents after the restore: %+v %v", got, err)
	}
	for _, ch := range got {
		if ch.Deleted || ch.Rev != "_mAAAAAAAB-T" {
			t.Errorf("%s after the restore: %+v", ch.ID, ch)
		}
	}
	r, err := c.NextRange(ctx, "orders", idgen.Range{})
	if err != nil || r.Low <= n {
		t.Errorf("range after the restore: %+v %v, want above %d", r, err, n)
	}
	if v, err := c.NextIdentity(ctx, "companies"); err != nil || v <= 77 {
		t.Errorf("identity after the restore: %d %v, want above 77", v, err)
	}
}
