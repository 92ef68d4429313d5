// Command hilodb-server runs the hilodb sync server.
//
//	hilodb-server [flags]                       serve (see -h)
//	hilodb-server repair -data DIR [-bump N]     rebuild a damaged data file
//	hilodb-server repair -etcd HOSTS [-etcd-prefix P] [-bump N]
//	                                             raise every counter after etcd was rolled back
//	hilodb-server restore -from FILE -data DIR [-bump N] [-force]
//	hilodb-server restore -from FILE -etcd HOSTS [-etcd-prefix P] [-bump N] [-force]
//	hilodb-server backup -url URL -out FILE      fetch an online backup
//	hilodb-server set-counter -data DIR -db DB (-hilo TAG | -identity NAME) -value N
//	                                             set a HiLo tag or identity, server stopped
//	hilodb-server set-counter -etcd HOSTS [-etcd-prefix P] -db DB (-hilo TAG | -identity NAME) -value N [-force]
//
// It stops cleanly on SIGINT and SIGTERM. docs/operations.md describes every
// flag, the config file, security, backups and recovery.
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/hilodb/hilodb/internal/gcfloor"
	"github.com/hilodb/hilodb/syncserver"
	"github.com/hilodb/hilodb/syncserver/storage"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "hilodb-server:", err)
		}
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) > 0 {
		switch args[0] {
		case "repair":
			return repair(args[1:], os.Stdout)
		case "restore":
			return restore(args[1:], os.Stdout)
		case "backup":
			return backup(args[1:], os.Stdout)
		case "set-counter":
			return setCounter(args[1:], os.Stdout)
		}
	}
	o, err := parseServeFlags(args, os.Getenv)
	if err != nil {
		return err
	}
	return serve(o)
}

// gcHeadroom is the collector's headroom (gcfloor): a server whose live
// heap is a few megabytes would otherwise collect every few megabytes a
// push or pull allocates, a push of 5,000 documents alone several times.
const gcHeadroom = 64 << 20

func serve(o *options) error {
	gcfloor.Start(gcHeadroom)
	log, err := newLogger(o.logLevel, o.logFormat)
	if err != nil {
		return err
	}
	cfg := o.cfg
	cfg.Logger = log
	if o.static != "" {
		st, err := newStaticFiles(o.static, cfg.DataDir)
		if err != nil {
			return err
		}
		cfg.Static = st
	}
	for _, w := range o.warnings {
		log.Warn(w)
	}
	srv, err := syncserver.New(cfg)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		srv.Close(context.Background())
		return fmt.Errorf("listen: %w", err)
	}
	hs := &http.Server{
		Handler:           srv,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 1)
	scheme := "http"
	if o.tlsCert != "" {
		scheme = "https"
		if cfg.ClientCerts != nil {
			// Asked for, not required: the thumbprint is checked per
			// request against -client-certs, with no CA; a request
			// without one is judged by its token.
			hs.TLSConfig = &tls.Config{ClientAuth: tls.RequestClientCert}
		}
		go func() { errc <- hs.ServeTLS(ln, o.tlsCert, o.tlsKey) }()
	} else {
		go func() { errc <- hs.Serve(ln) }()
	}
	log.Info("serving", "addr", scheme+"://"+ln.Addr().String(), "data", cfg.DataDir, "nodeTag", srv.Tag(),
		"tls", o.tlsCert != "", "groupCommit", !cfg.NoGroupCommit)
	select {
	case err := <-errc:
		srv.Close(context.Background())
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	log.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// Websocket connections are hijacked, so Shutdown does not wait for them;
	// srv.Close ends them and flushes the store.
	err = errors.Join(hs.Shutdown(sctx), srv.Close(sctx))
	if err != nil {
		return fmt.Errorf("shut down: %w", err)
	}
	return nil
}

func newLogger(level, format string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("-log-level: %w", err)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(os.Stderr, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(os.Stderr, opts)), nil
	}
	return nil, fmt.Errorf("-log-format: want text or json, got %q", format)
}

func repair(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("repair", flag.ContinueOnError)
	data := fs.String("data", "./data", "data directory holding hilodb.db")
	bump := fs.Int64("bump", storage.DefaultBump, "raise every HiLo Max, identity and the node-tag counter by this much past the highest value found")
	etcd, prefix := etcdFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if hosts := splitList(*etcd); len(hosts) > 0 {
		n, err := storage.RepairEtcd(context.Background(), hosts, *prefix, *bump)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "raised %d counters under %q by %d; clients resync\n", n, storage.EtcdPrefix(*prefix), *bump)
		return nil
	}
	rep, err := storage.Repair(*data, *bump)
	if err != nil {
		return err
	}
	fmt.Fprintln(out, rep)
	return nil
}

func setCounter(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("set-counter", flag.ContinueOnError)
	data := fs.String("data", "./data", "data directory holding hilodb.db (the server must be stopped)")
	db := fs.String("db", "", "database name")
	hilo := fs.String("hilo", "", "HiLo tag to set: its next range starts after -value")
	ident := fs.String("identity", "", "identity to set: its next value is -value plus one")
	value := fs.Int64("value", -1, "the new value")
	etcd, prefix := etcdFlags(fs)
	force := fs.Bool("force", false, "with -etcd: allow lowering the counter (every server of the prefix stopped)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	kind, name := storage.CounterHilo, *hilo
	switch {
	case (*hilo == "") == (*ident == ""):
		return errors.New("set-counter: give one of -hilo and -identity")
	case *ident != "":
		kind, name = storage.CounterIdentity, *ident
	}
	if *db == "" || *value < 0 {
		return errors.New("set-counter: -db and -value are required")
	}
	var old int64
	var err error
	if hosts := splitList(*etcd); len(hosts) > 0 {
		old, err = storage.SetCounterEtcd(context.Background(), hosts, *prefix, *db, kind, name, *value, *force)
	} else {
		old, err = storage.SetCounter(*data, *db, kind, name, *value)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "%s %q of database %s: %d → %d\n", kind, name, *db, old, *value)
	if *value < old {
		fmt.Fprintln(out, "lowered: numbers above the new value that clients still hold can be handed out again")
	}
	return nil
}

func restore(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("restore", flag.ContinueOnError)
	from := fs.String("from", "", "backup file (from /admin/backup or `hilodb-server backup`)")
	data := fs.String("data", "./data", "data directory to restore into")
	bump := fs.Int64("bump", storage.DefaultBump, "raise every counter by this much: numbers handed out after the backup was taken must not come again")
	force := fs.Bool("force", false, "replace an existing data file (it is kept beside as hilodb.db.replaced-…); with -etcd, restore into a prefix that holds data (its documents not in the backup are removed, its counters kept where higher)")
	etcd, prefix := etcdFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *from == "" && fs.NArg() == 1 {
		*from = fs.Arg(0)
	}
	if *from == "" || fs.NArg() > 1 {
		return errors.New("restore: -from (or one backup file argument) is required")
	}
	if hosts := splitList(*etcd); len(hosts) > 0 {
		rep, err := storage.RestoreEtcd(context.Background(), hosts, *prefix, *from, *bump, *force)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "restored %s into etcd prefix %q: %s\n", *from, storage.EtcdPrefix(*prefix), rep)
		return nil
	}
	rep, err := storage.Restore(*from, *data, *bump, *force)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "restored %s into %s; %d counters raised by %d\n", *from, rep.Path, rep.Raised, *bump)
	if rep.Kept != "" {
		fmt.Fprintf(out, "the previous data file is kept as %s\n", rep.Kept)
	}
	return nil
}

// etcdFlags adds -etcd and -etcd-prefix to an admin command: with -etcd it
// works on the cluster's etcd instead of a data directory.
func etcdFlags(fs *flag.FlagSet) (etcd, prefix *string) {
	etcd = fs.String("etcd", "", "comma-separated etcd members (host:port) of a cluster: work on its keys instead of -data")
	prefix = fs.String("etcd-prefix", "hilodb/", "with -etcd: the deployment's key prefix")
	return etcd, prefix
}

func backup(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("backup", flag.ContinueOnError)
	url := fs.String("url", "http://127.0.0.1:8080/admin/backup", "the server's backup endpoint")
	file := fs.String("out", "", "file to write the backup to")
	token := fs.String("admin-token", "", "admin token (or env HILODB_ADMIN_TOKEN)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *file == "" {
		return errors.New("backup: -out is required")
	}
	if *token == "" {
		*token = os.Getenv("HILODB_ADMIN_TOKEN")
	}
	req, err := http.NewRequest(http.MethodGet, *url, nil)
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	if *token != "" {
		req.Header.Set("Authorization", "Bearer "+*token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("fetch backup: %w", err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(res.Body, 1024))
		return fmt.Errorf("fetch backup: %s: %s", res.Status, msg)
	}
	tmp := *file + ".partial"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("create backup file: %w", err)
	}
	n, err := io.Copy(f, res.Body)
	if err = errors.Join(err, f.Sync(), f.Close()); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write backup: %w", err)
	}
	if err := storage.CheckBackup(tmp); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, *file); err != nil {
		return fmt.Errorf("install backup: %w", err)
	}
	fmt.Fprintf(out, "wrote %d bytes to %s\n", n, *file)
	return nil
}
