package syncserver_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/hilodb/hilodb/client"
	"github.com/hilodb/hilodb/syncserver"
	"github.com/hilodb/hilodb/syncserver/storage"
)

func get(t *testing.T, url string, h http.Header) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	for k, v := range h {
		if k == "Host" {
			req.Host = v[0] // net/http sends req.Host, not a Host header
			continue
		}
		req.Header[k] = v
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// metric returns the value of the sample named name (with labels) in body.
func metric(t *testing.T, body, name string) float64 {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + ` (\S+)$`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("metric %s missing:\n%s", name, body)
	}
	v, _ := strconv.ParseFloat(m[1], 64)
	return v
}

func TestFsyncFailureMakesUnhealthy(t *testing.T) {
	ts := startServer(t, syncserver.Config{})
	r := dialRaw(t, ts)
	r.call(`{"id":1,"op":"hello","db":"shop","node":""}`)
	r.call(`{"id":2,"op":"identity.next","name":"c"}`)
	if code, _ := get(t, ts.hs.URL+"/healthz", nil); code != 200 {
		t.Fatalf("healthz before: %d", code)
	}
	syncserver.FailFsync(ts.srv, errors.New("EIO"))
	if got := r.call(`{"id":3,"op":"identity.next","name":"c"}`); errCode(got) != "unavailable" {
		t.Fatalf("identity.next with failing fsync: %v, want unavailable", got)
	}
	// The store stays stopped even though the next fsync might succeed.
	syncserver.FailFsync(ts.srv, nil)
	if got := r.call(`{"id":4,"op":"hilo.next","tag":"o","lastSize":0,"lastMax":0,"lastRangeAt":""}`); errCode(got) != "unavailable" {
		t.Fatalf("hilo.next after a failed fsync: %v, want unavailable", got)
	}
	code, body := get(t, ts.hs.URL+"/healthz", nil)
	if code != 503 || !strings.Contains(body, "fsync") {
		t.Errorf("healthz after failed fsync: %d %q, want 503 naming fsync", code, body)
	}
	_, body = get(t, ts.hs.URL+"/metrics", nil)
	if metric(t, body, "hilodb_store_healthy") != 0 {
		t.Error("hilodb_store_healthy should be 0")
	}
	// The refused value was never handed out: after a restart the next is 2.
	ts.restart()
	r = dialRaw(t, ts)
	r.call(`{"id":1,"op":"hello","db":"shop","node":""}`)
	if got := r.call(`{"id":2,"op":"identity.next","name":"c"}`); got["value"] != 2.0 && got["value"] != 3.0 {
		t.Errorf("after restart: %v", got)
	}
}

// TestGroupCommit checks that concurrent requests share fsyncs, and that
// with NoGroupCommit each gets its own.
func TestGroupCommit(t *testing.T) {
	for _, noGroup := range []bool{false, true} {
		t.Run(fmt.Sprintf("NoGroupCommit=%v", noGroup), func(t *testing.T) {
			ts := startServer(t, syncserver.Config{NoGroupCommit: noGroup})
			const clients, each = 40, 10
			var wg sync.WaitGroup
			for range clients {
				wg.Add(1)
				go func() {
					defer wg.Done()
					c := client.New(ts.url(), client.Options{Database: "shop"})
					defer c.Close()
					for range each {
						if _, err := c.NextIdentity(context.Background(), "n"); err != nil {
							t.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			_, body := get(t, ts.hs.URL+"/metrics", nil)
			txs := metric(t, body, "hilodb_group_commit_transactions_sum")
			commits := metric(t, body, "hilodb_group_commit_transactions_count")
			if txs < clients*each {
				t.Fatalf("%v transactions made durable, want at least %d", txs, clients*each)
			}
			if got := metric(t, body, "hilodb_identities_total"); got != clients*each {
				t.Errorf("hilodb_identities_total %v, want %d", got, clients*each)
			}
			if metric(t, body, "hilodb_fsync_seconds_count") != commits {
				t.Errorf("one fsync per commit expected")
			}
			if noGroup && commits != txs {
				t.Errorf("without group commit: %v commits for %v transactions, want one each", commits, txs)
			}
			if !noGroup && commits >= txs*0.9 {
				t.Errorf("group commit: %v commits for %v transactions, want them shared", commits, txs)
			}
			t.Logf("%v transactions in %v commits", txs, commits)
		})
	}
}

func TestMetricsFormat(t *testing.T) {
	ts := startServer(t, syncserver.Config{})
	r := dialRaw(t, ts)
	r.call(`{"id":1,"op":"hello","db":"shop","node":""}`)
	r.call(`{"id":2,"op":"identity.nextBatch","names":["a","b","a"]}`)
	r.call(`{"id":3,"op":"nope"}`)
	_, body := get(t, ts.hs.URL+"/metrics", nil)
	for name, want := range map[string]float64{
		"hilodb_identities_total":                           3,
		"hilodb_connections":                                1,
		"hilodb_connections_total":                          1,
		"hilodb_nodes_assigned_total":                       1,
		`hilodb_errors_total{code="unknown_op"}`:            1,
		`hilodb_fsync_seconds_bucket{le="+Inf"}`:            metric(t, body, "hilodb_fsync_seconds_count"),
		`hilodb_group_commit_transactions_bucket{le="256"}`: metric(t, body, "hilodb_group_commit_transactions_count"),
		"hilodb_store_healthy":                              1,
	} {
		if got := metric(t, body, name); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	// Every sample line belongs to a declared metric family.
	types := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(body), "\n") {
		if f := strings.Fields(line); len(f) == 4 && f[1] == "TYPE" {
			types[f[2]] = true
			continue
		}
		if strings.HasPrefix(line, "#") {
			continue
		}
		name := strings.FieldsFunc(line, func(r rune) bool { return r == '{' || r == ' ' })[0]
		base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_sum"), "_count")
		if !types[name] && !types[base] {
			t.Errorf("sample %q has no # TYPE line", line)
		}
	}
}

func TestDashboard(t *testing.T) {
	t.Run("loopback without tokens", func(t *testing.T) {
		ts := startServer(t, syncserver.Config{})
		r := dialRaw(t, ts)
		hello := r.call(`{"id":1,"op":"hello","db":"shop","node":""}`)
		r.call(`{"id":2,"op":"hilo.next","tag":"orders","lastSize":0,"lastMax":0,"lastRangeAt":""}`)
		r.call(`{"id":3,"op":"identity.seed","name":"companies","value":77,"force":false}`)
		r.call(`{"id":4,"op":"hilo.next","tag":"<script>x","lastSize":0,"lastMax":0,"lastRangeAt":""}`)
		last := r.call(`{"id":5,"op":"push","changes":[{"id":"a","baseRev":"","rev":"_mAAAAAAA-BT","doc":{}},{"id":"b","baseRev":"","rev":"_mAAAAAAA-BT","doc":{}}]}`)["last"]
		code, page := get(t, ts.hs.URL+"/dashboard", nil)
		if code != 200 {
			t.Fatalf("dashboard: %d", code)
		}
		for _, want := range []string{"Database shop", "<td>orders</td><td class=\"n\">32</td>", "<td>companies</td><td class=\"n\">77</td>", "<td>" + hello["node"].(string) + "</td>", "&lt;script&gt;x", fmt.Sprintf("Change sequence %v.", last)} {
			if !strings.Contains(page, want) {
				t.Errorf("dashboard lacks %q:\n%s", want, page)
			}
		}
		if strings.Contains(page, "<script>") {
			t.Error("dashboard does not escape names")
		}
		if code, _ := get(t, ts.hs.URL+"/dashboard", http.Header{"X-Forwarded-For": {"198.51.100.1"}}); code != 403 {
			t.Errorf("proxied dashboard request: %d, want 403", code)
		}
	})
	t.Run("tokens without admin token", func(t *testing.T) {
		ts := startServer(t, syncserver.Config{Tokens: map[string]string{"shop": "s"}})
		if code, _ := get(t, ts.hs.URL+"/dashboard", nil); code != 403 {
			t.Errorf("got %d, want 403", code)
		}
		if code, _ := get(t, ts.hs.URL+"/admin/backup", nil); code != 403 {
			t.Errorf("backup: got %d, want 403", code)
		}
	})
	t.Run("admin token", func(t *testing.T) {
		ts := startServer(t, syncserver.Config{Tokens: map[string]string{"shop": "s"}, AdminToken: "adm"})
		for _, tt := range []struct {
			h    http.Header
			want int
		}{
			{nil, 401},
			{http.Header{"Authorization": {"Bearer wrong"}}, 401},
			{http.Header{"Authorization": {"Bearer s"}}, 401},
			{http.Header{"Authorization": {"Bearer adm"}}, 200},
			{http.Header{"Authorization": {"Basic " + basic("admin", "adm")}}, 200},
			{http.Header{"Authorization": {"Basic " + basic("admin", "nope")}}, 401},
		} {
			if code, _ := get(t, ts.hs.URL+"/dashboard", tt.h); code != tt.want {
				t.Errorf("%v: got %d, want %d", tt.h, code, tt.want)
			}
		}
	})
}

func basic(user, pw string) string {
	req, _ := http.NewRequest(http.MethodGet, "/", nil)
	req.SetBasicAuth(user, pw)
	return strings.TrimPrefix(req.Header.Get("Authorization"), "Basic ")
}

// TestBackupRestore takes an online backup, hands out more numbers, restores
// the backup into a new data directory and checks that no number handed out
// after the backup comes again.
func TestBackupRestore(t *testing.T) {
	ts := startServer(t, syncserver.Config{})
	r := dialRaw(t, ts)
	r.call(`{"id":1,"op":"hello","db":"shop","node":""}`)
	r.call(`{"id":2,"op":"hilo.next","tag":"orders","lastSize":0,"lastMax":0,"lastRangeAt":""}`)
	r.call(`{"id":3,"op":"identity.next","name":"c"}`)
	r.call(`{"id":6,"op":"push","changes":[{"id":"a","baseRev":"","rev":"_mAAAAAAA-BT","doc":{}}]}`)
	code, backup := get(t, ts.hs.URL+"/admin/backup", nil)
	if code != 200 || !strings.Contains(backup, "hilo/shop/orders") {
		t.Fatalf("backup: %d %q", code, backup)
	}
	file := filepath.Join(t.TempDir(), "backup.db")
	if err := os.WriteFile(file, []byte(backup), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := storage.CheckBackup(file); err != nil {
		t.Fatal(err)
	}
	// Numbers handed out after the backup.
	later := r.call(`{"id":4,"op":"hilo.next","tag":"orders","lastSize":0,"lastMax":0,"lastRangeAt":""}`)
	laterID := r.call(`{"id":5,"op":"identity.next","name":"c"}`)

	dir := t.TempDir()
	if _, err := storage.Restore(file, dir, 1000, false); err != nil {
		t.Fatal(err)
	}
	if _, err := storage.Restore(file, dir, 1000, false); err == nil {
		t.Error("restore over an existing data file without force succeeded")
	}
	rep, err := storage.Restore(file, dir, 1000, true)
	if err != nil || rep.Kept == "" {
		t.Fatalf("forced restore: %v %+v", err, rep)
	}
	ts2 := startServer(t, syncserver.Config{DataDir: dir})
	r2 := dialRaw(t, ts2)
	r2.call(`{"id":1,"op":"hello","db":"shop","node":""}`)
	if got := r2.call(`{"id":2,"op":"hilo.next","tag":"orders","lastSize":0,"lastMax":0,"lastRangeAt":""}`); got["low"].(float64) <= later["high"].(float64) {
		t.Errorf("after restore: range %v overlaps %v handed out after the backup", got, later)
	}
	if got := r2.call(`{"id":3,"op":"identity.next","name":"c"}`); got["value"].(float64) <= laterID["value"].(float64) {
		t.Errorf("after restore: identity %v, want above %v", got, laterID)
	}
	// Documents may have rolled back: every client is told to resync, and
	// the sequence goes on past anything handed out before.
	pull := r2.call(`{"id":4,"op":"pull","since":1}`)
	if pull["purgedSeq"].(float64) <= 1 {
		t.Errorf("after restore: purgedSeq %v, want above every old checkpoint", pull["purgedSeq"])
	}
	push := r2.call(`{"id":5,"op":"push","changes":[{"id":"b","baseRev":"","rev":"_mAAAAAAA-BT","doc":{}}]}`)
	if seq := push["results"].([]any)[0].(map[string]any)["seq"].(float64); seq <= pull["purgedSeq"].(float64) {
		t.Errorf("after restore: new write got sequence %v, not past %v", seq, pull["purgedSeq"])
	}
	// A truncated backup is refused.
	if err := os.WriteFile(file, []byte(backup[:len(backup)-3]), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := storage.Restore(file, t.TempDir(), 1000, false); err == nil {
		t.Error("restore of a truncated backup succeeded")
	}
}
