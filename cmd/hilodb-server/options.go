package main

import (
	"github.com/hilodb/hilodb/auth"
	"github.com/hilodb/hilodb/syncserver/arangodoor"
	"github.com/hilodb/hilodb/syncserver/ravendoor"

	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/hilodb/hilodb/syncserver"
)

// options are the parsed settings of `hilodb-server` (serve).
type options struct {
	cfg       syncserver.Config
	addr      string
	static    string
	tlsCert   string
	tlsKey    string
	logLevel  string
	logFormat string
	warnings  []string // logged once the logger exists
}

// fileConfig is the JSON config file (-config). Every field is optional; a
// flag given on the command line wins over the file, the file over the
// environment variables' defaults.
type fileConfig struct {
	Tokens        map[string]string `json:"tokens"`
	AdminToken    string            `json:"adminToken"`
	Databases     []string          `json:"databases"`
	Origins       []string          `json:"origins"`
	AllowedHosts  []string          `json:"allowedHosts"`
	HelloTimeout  string            `json:"helloTimeout"`
	MaxConns      int               `json:"maxConns"`
	MaxConnsPer   int               `json:"maxConnsPerAddr"`
	MaxBuffered   int64             `json:"maxBuffered"`
	MaxBufferedDB int64             `json:"maxBufferedPerDB"`
	BodyTimeout   string            `json:"bodyTimeout"`
	AllowLowering bool              `json:"allowIdentityLowering"`
	MaxMessage    int64             `json:"maxMessage"`
	MaxBatch      int               `json:"maxBatch"`
	Rate          float64           `json:"rate"`
	Burst         int               `json:"burst"`
	Idle          string            `json:"idle"`
	TombstoneTTL  string            `json:"tombstoneTTL"`
	NoGroupCommit bool              `json:"noGroupCommit"`
	TLSCert       string            `json:"tlsCert"`
	TLSKey        string            `json:"tlsKey"`
}

func parseServeFlags(args []string, getenv func(string) string) (*options, error) {
	fs := flag.NewFlagSet("hilodb-server", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:8080", "listen address")
	data := fs.String("data", "./data", "data directory")
	tag := fs.String("node-tag", "", "this server's node tag, 1-8 upper-case letters and digits (default A; with -etcd, the tag this server took before, kept in -data, else the first of A…Z no live server holds)")
	etcd := fs.String("etcd", "", "comma-separated etcd members (host:port): keep all state in that etcd cluster instead of -data, shared with the other servers of the cluster (each with its own node tag)")
	etcdPrefix := fs.String("etcd-prefix", "hilodb/", "key prefix of this deployment in etcd")
	static := fs.String("static", "", "directory served at / (the demo app)")
	config := fs.String("config", "", "JSON config file (tokens, adminToken, databases, origins, limits; see docs/operations.md)")
	tokens := fs.String("tokens", "", "comma-separated db=token pairs (or env HILODB_TOKENS); * matches any db")
	jwtHS := fs.String("jwt-hs256-file", "", "file holding the HS256 secret (32 bytes or more) signed tokens may be checked with")
	jwks := fs.String("jwks-file", "", "JWKS file of the EdDSA, ES256 and RS256 public keys signed tokens are checked with; re-read when it changes")
	jwtIss := fs.String("jwt-issuer", "", "the iss a signed token must carry")
	jwtAud := fs.String("jwt-audience", "", "a value a signed token's aud must hold")
	maxDBsPerSub := fs.Int("max-databases-per-subject", 16, "most databases one signed token's subject makes on first use")
	maxConnsPerSub := fs.Int("max-conns-per-subject", 0, "most open websocket connections of one signed token's subject (0: no limit)")
	ratePerSub := fs.Float64("rate-per-subject", 0, "requests per second one signed token's subject may make over all its connections and the HTTP doors (0: no limit)")
	adminToken := fs.String("admin-token", "", "token for /dashboard and /admin/backup (or env HILODB_ADMIN_TOKEN)")
	databases := fs.String("databases", "", "comma-separated database names: serve only these (default: any name, created on first use)")
	origins := fs.String("origins", "", "comma-separated Origin host patterns allowed for browser connections")
	hosts := fs.String("allowed-hosts", "", "comma-separated Host names (path.Match patterns) answered besides localhost, 127.0.0.1 and [::1]; a server without tokens answers no others")
	helloTimeout := fs.Duration("hello-timeout", 10*time.Second, "close connections that have not completed hello this long")
	maxConns := fs.Int("max-conns", 10000, "most open websocket connections")
	maxConnsPer := fs.Int("max-conns-per-addr", 1024, "most open websocket connections from one IP address")
	maxBuffered := fs.Int64("max-buffered", 256<<20, "most bytes of incoming messages held at once, over all connections")
	maxBufferedDB := fs.Int64("max-buffered-per-db", 0, "most bytes of HTTP request bodies held at once for one database (default a quarter of -max-buffered, at least -max-message)")
	bodyTimeout := fs.Duration("body-timeout", 30*time.Second, "refuse an HTTP request body (408 body_timeout) still arriving this long after its headers")
	allowLowering := fs.Bool("allow-identity-lowering", false, "let identity.seed with force lower an identity (values can then repeat)")
	maxMsg := fs.Int64("max-message", 8<<20, "largest websocket message in bytes")
	maxBatch := fs.Int("max-batch", 10000, "most items in one request (identity.nextBatch names, push changes)")
	rate := fs.Float64("rate", 1000, "requests per second allowed per connection (negative: no limit)")
	burst := fs.Int("burst", 0, "requests allowed in a burst above -rate (default: the rate)")
	idle := fs.Duration("idle", 5*time.Minute, "close connections idle this long (negative: never)")
	tombTTL := fs.Duration("tombstone-ttl", 30*24*time.Hour, "keep tombstones of deleted documents in the change feed this long")
	noGroup := fs.Bool("no-group-commit", false, "one fsync per request instead of group commit (for measurements only)")
	tlsCert := fs.String("tls-cert", "", "TLS certificate file (PEM); with -tls-key, serve https/wss")
	tlsKey := fs.String("tls-key", "", "TLS private key file (PEM)")
	clientCerts := fs.String("client-certs", "", "JSON file mapping client certificate SHA-1 thumbprints to databases and roles, for the HTTP doors over TLS (needs -tls-cert)")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error")
	logFormat := fs.String("log-format", "text", "text or json")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q (commands: repair, restore, backup, set-counter)", fs.Arg(0))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })

	o := &options{addr: *addr, static: *static, logLevel: *logLevel, logFormat: *logFormat}
	var fc fileConfig
	if *config != "" {
		var err error
		if fc, err = readConfig(*config, &o.warnings); err != nil {
			return nil, err
		}
	}
	cfg := syncserver.Config{DataDir: *data, ServerTag: *tag, Etcd: splitList(*etcd), EtcdPrefix: *etcdPrefix,
		Doors: []syncserver.Door{arangodoor.Register, ravendoor.Register}}

	// Tokens: flag, else env, else file.
	switch {
	case set["tokens"]:
		m, err := parseTokens(*tokens)
		if err != nil {
			return nil, fmt.Errorf("-tokens: %w", err)
		}
		cfg.Tokens = m
	case getenv("HILODB_TOKENS") != "":
		m, err := parseTokens(getenv("HILODB_TOKENS"))
		if err != nil {
			return nil, fmt.Errorf("HILODB_TOKENS: %w", err)
		}
		cfg.Tokens = m
	default:
		cfg.Tokens = fc.Tokens
	}
	if *jwtHS != "" || *jwks != "" {
		ac := auth.Config{JWKSFile: *jwks, Issuer: *jwtIss, Audience: *jwtAud}
		if *jwtHS != "" {
			b, err := os.ReadFile(*jwtHS)
			if err != nil {
				return nil, fmt.Errorf("-jwt-hs256-file: %w", err)
			}
			ac.HS256Secret = bytes.TrimRight(b, "\r\n")
		}
		v, err := auth.NewVerifier(ac)
		if err != nil {
			return nil, err
		}
		cfg.Verifier = v
	} else if *jwtIss != "" || *jwtAud != "" {
		return nil, errors.New("-jwt-issuer and -jwt-audience need -jwt-hs256-file or -jwks-file")
	}
	cfg.MaxDatabasesPerSubject = *maxDBsPerSub
	cfg.MaxConnsPerSubject, cfg.RatePerSubject = *maxConnsPerSub, *ratePerSub
	if *maxConnsPerSub < 0 || *ratePerSub < 0 {
		return nil, errors.New("-max-conns-per-subject and -rate-per-subject must be 0 (no limit) or more")
	}
	cfg.AdminToken = pick(set["admin-token"], *adminToken, getenv("HILODB_ADMIN_TOKEN"), fc.AdminToken)
	cfg.Databases = fc.Databases
	if set["databases"] {
		cfg.Databases = splitList(*databases)
	}
	cfg.AllowedOrigins = fc.Origins
	if set["origins"] {
		cfg.AllowedOrigins = splitList(*origins)
	}
	cfg.AllowedHosts = fc.AllowedHosts
	if set["allowed-hosts"] {
		cfg.AllowedHosts = splitList(*hosts)
	}
	cfg.HelloTimeout = *helloTimeout
	if !set["hello-timeout"] && fc.HelloTimeout != "" {
		d, err := time.ParseDuration(fc.HelloTimeout)
		if err != nil {
			return nil, fmt.Errorf("config helloTimeout: %w", err)
		}
		cfg.HelloTimeout = d
	}
	cfg.MaxConns = orDefault(set["max-conns"] || fc.MaxConns == 0, *maxConns, fc.MaxConns)
	cfg.MaxConnsPerAddr = orDefault(set["max-conns-per-addr"] || fc.MaxConnsPer == 0, *maxConnsPer, fc.MaxConnsPer)
	cfg.MaxBufferedBytes = orDefault(set["max-buffered"] || fc.MaxBuffered == 0, *maxBuffered, fc.MaxBuffered)
	cfg.MaxBufferedPerDB = orDefault(set["max-buffered-per-db"] || fc.MaxBufferedDB == 0, *maxBufferedDB, fc.MaxBufferedDB)
	cfg.BodyTimeout = *bodyTimeout
	if !set["body-timeout"] && fc.BodyTimeout != "" {
		d, err := time.ParseDuration(fc.BodyTimeout)
		if err != nil {
			return nil, fmt.Errorf("config bodyTimeout: %w", err)
		}
		cfg.BodyTimeout = d
	}
	if cfg.MaxBufferedPerDB < 0 || cfg.BodyTimeout <= 0 {
		return nil, errors.New("-max-buffered-per-db must not be negative, -body-timeout must be positive")
	}
	cfg.AllowIdentityLowering = *allowLowering || fc.AllowLowering
	if cfg.HelloTimeout <= 0 || cfg.MaxConns <= 0 || cfg.MaxConnsPerAddr <= 0 || cfg.MaxBufferedBytes <= 0 {
		return nil, errors.New("-hello-timeout, -max-conns, -max-conns-per-addr and -max-buffered must be positive")
	}
	cfg.MaxMessageBytes = orDefault(set["max-message"] || fc.MaxMessage == 0, *maxMsg, fc.MaxMessage)
	cfg.MaxBatch = orDefault(set["max-batch"] || fc.MaxBatch == 0, *maxBatch, fc.MaxBatch)
	cfg.RateLimit = orDefault(set["rate"] || fc.Rate == 0, *rate, fc.Rate)
	cfg.RateBurst = orDefault(set["burst"] || fc.Burst == 0, *burst, fc.Burst)
	cfg.IdleTimeout = *idle
	if !set["idle"] && fc.Idle != "" {
		d, err := time.ParseDuration(fc.Idle)
		if err != nil {
			return nil, fmt.Errorf("config idle: %w", err)
		}
		cfg.IdleTimeout = d
	}
	if cfg.IdleTimeout == 0 {
		cfg.IdleTimeout = -1 // "0s" on the command line means never, too
	}
	cfg.TombstoneTTL = *tombTTL
	if !set["tombstone-ttl"] && fc.TombstoneTTL != "" {
		d, err := time.ParseDuration(fc.TombstoneTTL)
		if err != nil {
			return nil, fmt.Errorf("config tombstoneTTL: %w", err)
		}
		cfg.TombstoneTTL = d
	}
	if cfg.TombstoneTTL <= 0 {
		return nil, errors.New("-tombstone-ttl must be positive")
	}
	cfg.NoGroupCommit = *noGroup || fc.NoGroupCommit
	o.tlsCert = pick(set["tls-cert"], *tlsCert, "", fc.TLSCert)
	o.tlsKey = pick(set["tls-key"], *tlsKey, "", fc.TLSKey)
	if (o.tlsCert == "") != (o.tlsKey == "") {
		return nil, errors.New("-tls-cert and -tls-key go together")
	}
	if *clientCerts != "" {
		if o.tlsCert == "" {
			return nil, errors.New("-client-certs needs -tls-cert and -tls-key")
		}
		b, err := os.ReadFile(*clientCerts)
		if err != nil {
			return nil, fmt.Errorf("-client-certs: %w", err)
		}
		if cfg.ClientCerts, err = syncserver.ParseClientCerts(b); err != nil {
			return nil, fmt.Errorf("-client-certs: %w", err)
		}
	}
	if cfg.MaxMessageBytes <= 0 || cfg.MaxBatch <= 0 {
		return nil, errors.New("-max-message and -max-batch must be positive")
	}
	if !loopbackAddr(o.addr) && o.tlsCert == "" && len(cfg.Tokens) == 0 && cfg.Verifier == nil {
		o.warnings = append(o.warnings, fmt.Sprintf("listening on %s, beyond loopback, with no TLS and no tokens: only loopback clients are served, "+
			"and anyone on the network can read what they send; configure -tokens and -tls-cert/-tls-key", o.addr))
	}
	o.cfg = cfg
	return o, nil
}

// loopbackAddr reports whether the listen address addr binds only loopback.
func loopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func readConfig(path string, warnings *[]string) (fileConfig, error) {
	var fc fileConfig
	b, err := os.ReadFile(path)
	if err != nil {
		return fc, fmt.Errorf("read config: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&fc); err != nil {
		return fc, fmt.Errorf("config %s: %w", path, err)
	}
	if fi, err := os.Stat(path); err == nil && fi.Mode().Perm()&0o077 != 0 && (len(fc.Tokens) > 0 || fc.AdminToken != "") {
		*warnings = append(*warnings, fmt.Sprintf("config file %s holds tokens and is readable by others (mode %v); chmod 600 it", path, fi.Mode().Perm()))
	}
	return fc, nil
}

// pick returns the flag value if the flag was given, else the environment
// value, else the file value.
func pick(flagSet bool, flagVal, env, file string) string {
	switch {
	case flagSet:
		return flagVal
	case env != "":
		return env
	}
	return file
}

func orDefault[T any](useFlag bool, flagVal, fileVal T) T {
	if useFlag {
		return flagVal
	}
	return fileVal
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func parseTokens(s string) (map[string]string, error) {
	m := map[string]string{}
	for _, pair := range splitList(s) {
		db, token, ok := strings.Cut(pair, "=")
		if !ok || db == "" || token == "" {
			return nil, fmt.Errorf("want db=token pairs, got %q", pair)
		}
		m[db] = token
	}
	return m, nil
}
