package syncserver

import (
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hilodb/hilodb/syncserver/storage"
)

// metrics are the counters behind /metrics.
type metrics struct {
	connections      atomic.Int64
	connectionsTotal atomic.Int64
	rangesLeased     atomic.Int64
	identities       atomic.Int64
	nodesAssigned    atomic.Int64
	requests         atomic.Int64
	docsPushed       atomic.Int64
	docsPulled       atomic.Int64
	// txRetries counts etcd transactions run again after losing a compare
	// to another server's write (always 0 on buntdb).
	txRetries atomic.Int64
	// pullsByLog and pullsByRange count the pulls on etcd answered from
	// the change log (what changed) and by a range read (the database).
	pullsByLog, pullsByRange atomic.Int64

	mu        sync.Mutex
	errors    map[string]int64
	doors     map[string]int64 // HTTP requests by door (ravendb, arango)
	refusals  map[string]int64 // refused tokens by reason (auth.Error's)
	fsync     histogram        // seconds per fsync
	groupSize histogram        // transactions per commit
}

// histogram is a Prometheus histogram: counts per upper bound, plus sum and
// count.
type histogram struct {
	bounds []float64
	counts []int64 // len(bounds)+1; the last is +Inf
	sum    float64
	n      int64
}

func newHistogram(bounds ...float64) histogram {
	return histogram{bounds: bounds, counts: make([]int64, len(bounds)+1)}
}

func (h *histogram) observe(v float64) {
	i := sort.SearchFloat64s(h.bounds, v)
	h.counts[i]++
	h.sum += v
	h.n++
}

func (h *histogram) write(w io.Writer, name, help string) {
	fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name)
	var cum int64
	for i, b := range h.bounds {
		cum += h.counts[i]
		fmt.Fprintf(w, "%s_bucket{le=%q} %d\n", name, strconv.FormatFloat(b, 'g', -1, 64), cum)
	}
	fmt.Fprintf(w, "%s_bucket{le=\"+Inf\"} %d\n%s_sum %g\n%s_count %d\n", name, h.n, name, h.sum, name, h.n)
}

func newMetrics() *metrics {
	return &metrics{
		errors:    make(map[string]int64),
		doors:     make(map[string]int64),
		refusals:  make(map[string]int64),
		fsync:     newHistogram(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5),
		groupSize: newHistogram(1, 2, 4, 8, 16, 32, 64, 128, 256),
	}
}

// countDoor counts one HTTP request to an API door.
func (m *metrics) countDoor(door string) {
	m.mu.Lock()
	m.doors[door]++
	m.mu.Unlock()
}

// refused counts a refused token by its reason.
func (m *metrics) refused(reason string) {
	m.mu.Lock()
	m.refusals[reason]++
	m.mu.Unlock()
}

func (m *metrics) countError(code string) {
	m.mu.Lock()
	m.errors[code]++
	m.mu.Unlock()
}

// Commit records one commit: how long its fsync took and how many
// transactions it made durable.
func (m *metrics) Commit(d time.Duration, txs int) {
	m.mu.Lock()
	m.fsync.observe(d.Seconds())
	m.groupSize.observe(float64(txs))
	m.mu.Unlock()
}

// Retry counts an etcd transaction run again (storage.Metrics).
func (m *metrics) Retry() { m.txRetries.Add(1) }

// Pull counts a pull on etcd by how it was answered (storage.Metrics).
func (m *metrics) Pull(byLog bool) {
	if byLog {
		m.pullsByLog.Add(1)
	} else {
		m.pullsByRange.Add(1)
	}
}

var _ storage.Metrics = (*metrics)(nil)

func writeMetric(w io.Writer, name, typ, help string, v int64) {
	fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n%s %d\n", name, help, name, typ, name, v)
}

func (s *Server) serveMetrics(w http.ResponseWriter, r *http.Request) {
	m := s.metrics
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	writeMetric(w, "hilodb_connections", "gauge", "Open websocket connections.", m.connections.Load())
	writeMetric(w, "hilodb_connections_total", "counter", "Websocket connections accepted.", m.connectionsTotal.Load())
	writeMetric(w, "hilodb_buffered_bytes", "gauge", "Bytes of incoming messages held now, over all connections (bounded by -max-buffered).", s.buffered.used.Load())
	writeMetric(w, "hilodb_buffered_bytes_limit", "gauge", "The bound on buffered bytes (-max-buffered).", s.buffered.limit)
	writeMetric(w, "hilodb_connections_limit", "gauge", "The most open connections (-max-conns).", int64(s.cfg.MaxConns))
	writeMetric(w, "hilodb_connections_per_addr_limit", "gauge", "The most open connections from one address (-max-conns-per-addr).", int64(s.cfg.MaxConnsPerAddr))
	writeMetric(w, "hilodb_requests_total", "counter", "Requests received.", m.requests.Load())
	writeMetric(w, "hilodb_ranges_leased_total", "counter", "HiLo ranges leased.", m.rangesLeased.Load())
	writeMetric(w, "hilodb_docs_pushed_total", "counter", "Document writes accepted from clients.", m.docsPushed.Load())
	writeMetric(w, "hilodb_docs_pulled_total", "counter", "Document changes sent to clients.", m.docsPulled.Load())
	writeMetric(w, "hilodb_identities_total", "counter", "Identity values handed out.", m.identities.Load())
	writeMetric(w, "hilodb_nodes_assigned_total", "counter", "Node tags handed out.", m.nodesAssigned.Load())
	writeMetric(w, "hilodb_tx_retries_total", "counter", "Transactions run again after another server changed what they read (etcd only).", m.txRetries.Load())
	writeMetric(w, "hilodb_pulls_from_log_total", "counter", "Pulls on etcd answered from the writes this server's watch saw (cost: what changed).", m.pullsByLog.Load())
	writeMetric(w, "hilodb_pulls_by_range_total", "counter", "Pulls on etcd answered by a range read of the database (cost: the database's size).", m.pullsByRange.Load())
	healthy := int64(1)
	if s.store.Err() != nil {
		healthy = 0
	}
	writeMetric(w, "hilodb_store_healthy", "gauge", "1 while the store accepts writes, 0 after a failed fsync.", healthy)
	m.mu.Lock()
	defer m.mu.Unlock()
	writeMetric(w, "hilodb_fsync_total", "counter", "Group commits made durable (on etcd: committed etcd transactions).", m.fsync.n)
	writeMetric(w, "hilodb_fsync_transactions_total", "counter", "Transactions made durable by those fsyncs.", int64(m.groupSize.sum))
	m.fsync.write(w, "hilodb_fsync_seconds", "Time of one fsync of the data file (one per group commit); on etcd, of one commit round trip (the Txn, acknowledged once a majority of members fsynced it).")
	m.groupSize.write(w, "hilodb_group_commit_transactions", "Transactions made durable by one fsync.")
	fmt.Fprintf(w, "# HELP hilodb_errors_total Error replies and refusals by code.\n# TYPE hilodb_errors_total counter\n")
	codes := make([]string, 0, len(m.errors))
	for c := range m.errors {
		codes = append(codes, c)
	}
	sort.Strings(codes)
	for _, c := range codes {
		fmt.Fprintf(w, "hilodb_errors_total{code=%q} %d\n", c, m.errors[c])
	}
	fmt.Fprintf(w, "# HELP hilodb_auth_refusals_total Tokens refused, by reason.\n# TYPE hilodb_auth_refusals_total counter\n")
	reasons := make([]string, 0, len(m.refusals))
	for r := range m.refusals {
		reasons = append(reasons, r)
	}
	sort.Strings(reasons)
	for _, r := range reasons {
		fmt.Fprintf(w, "hilodb_auth_refusals_total{reason=%q} %d\n", r, m.refusals[r])
	}
	fmt.Fprintf(w, "# HELP hilodb_http_requests_total HTTP requests to the RavenDB and ArangoDB API doors.\n# TYPE hilodb_http_requests_total counter\n")
	for _, d := range []string{"arango", "ravendb"} {
		fmt.Fprintf(w, "hilodb_http_requests_total{door=%q} %d\n", d, m.doors[d])
	}
}
