package syncserver

import (
	"context"
	"fmt"
	"strings"

	"github.com/hilodb/hilodb/syncserver/storage"
)

// openStore opens the store cfg asks for: etcd when cfg.Etcd lists
// members, the data file in cfg.DataDir otherwise.
func openStore(cfg Config, m *metrics) (storage.Store, error) {
	if len(cfg.Etcd) == 0 {
		return storage.OpenFile(cfg.DataDir, !cfg.NoGroupCommit, m, cfg.Logger)
	}
	prefix := cfg.EtcdPrefix
	if prefix == "" {
		prefix = "hilodb/"
	}
	return storage.OpenEtcd(cfg.Etcd, prefix, m)
}

// joinCluster takes this server's tag in etcd unless it holds it already
// (es.ChooseTag), keeps it, and lets the live feeds follow the writes of
// every server.
func (s *Server) joinCluster(es *storage.Etcd) error {
	if err := es.ClaimTag(s.ctx, s.cfg.ServerTag); err != nil {
		return fmt.Errorf("take node tag %s: %w", s.cfg.ServerTag, err)
	}
	s.log.Info("joined the cluster", "tag", s.cfg.ServerTag, "etcd", strings.Join(s.cfg.Etcd, ","))
	s.spawn(func(ctx context.Context) { es.HoldTag(ctx, s.cfg.ServerTag, s.log.Warn) })
	s.spawn(func(ctx context.Context) {
		es.WatchChanges(ctx, func(db string) {
			if db == "" {
				s.hub.notifyAll()
				return
			}
			s.hub.notify(db)
		})
	})
	return nil
}
