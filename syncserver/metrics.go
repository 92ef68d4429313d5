package syncserver

import (
	"fmt"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// metrics are the counters behind /metrics.
type metrics struct {
	connections   atomic.Int64
	rangesLeased  atomic.Int64
	identities    atomic.Int64
	nodesAssigned atomic.Int64

	mu           sync.Mutex
	errors       map[string]int64
	fsyncs       int64
	fsyncSeconds float64
	fsyncTxs     int64
}

func newMetrics() *metrics { return &metrics{errors: make(map[string]int64)} }

func (m *metrics) countError(code string) {
	m.mu.Lock()
	m.errors[code]++
	m.mu.Unlock()
}

func (m *metrics) observeFsync(d time.Duration, txs int) {
	m.mu.Lock()
	m.fsyncs++
	m.fsyncSeconds += d.Seconds()
	m.fsyncTxs += int64(txs)
	m.mu.Unlock()
}

func (s *Server) serveMetrics(w http.ResponseWriter, r *http.Request) {
	m := s.metrics
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	fmt.Fprintf(w, "# HELP hilodb_connections Open websocket connections.\n# TYPE hilodb_connections gauge\nhilodb_connections %d\n", m.connections.Load())
	fmt.Fprintf(w, "# HELP hilodb_ranges_leased_total HiLo ranges leased.\n# TYPE hilodb_ranges_leased_total counter\nhilodb_ranges_leased_total %d\n", m.rangesLeased.Load())
	fmt.Fprintf(w, "# HELP hilodb_identities_total Identity values handed out.\n# TYPE hilodb_identities_total counter\nhilodb_identities_total %d\n", m.identities.Load())
	fmt.Fprintf(w, "# HELP hilodb_nodes_assigned_total Node tags handed out.\n# TYPE hilodb_nodes_assigned_total counter\nhilodb_nodes_assigned_total %d\n", m.nodesAssigned.Load())
	m.mu.Lock()
	defer m.mu.Unlock()
	fmt.Fprintf(w, "# HELP hilodb_fsync_total Group commits made durable.\n# TYPE hilodb_fsync_total counter\nhilodb_fsync_total %d\n", m.fsyncs)
	fmt.Fprintf(w, "# HELP hilodb_fsync_seconds_total Time spent in fsync.\n# TYPE hilodb_fsync_seconds_total counter\nhilodb_fsync_seconds_total %g\n", m.fsyncSeconds)
	fmt.Fprintf(w, "# HELP hilodb_fsync_transactions_total Transactions made durable by those fsyncs.\n# TYPE hilodb_fsync_transactions_total counter\nhilodb_fsync_transactions_total %d\n", m.fsyncTxs)
	fmt.Fprintf(w, "# HELP hilodb_errors_total Error replies by code.\n# TYPE hilodb_errors_total counter\n")
	codes := make([]string, 0, len(m.errors))
	for c := range m.errors {
		codes = append(codes, c)
	}
	sort.Strings(codes)
	for _, c := range codes {
		fmt.Fprintf(w, "hilodb_errors_total{code=%q} %d\n", c, m.errors[c])
	}
}
