package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseServeFlags(t *testing.T) {
	dir := t.TempDir()
	cfgFile := filepath.Join(dir, "c.json")
	os.WriteFile(cfgFile, []byte(`{"tokens":{"shop":"file"},"adminToken":"fileadm","databases":["shop","crm"],"origins":["a.example"],"maxBatch":7,"rate":50,"idle":"30s"}`), 0o644)
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }

	o, err := parseServeFlags([]string{"-config", cfgFile}, getenv)
	if err != nil {
		t.Fatal(err)
	}
	c := o.cfg
	if c.Tokens["shop"] != "file" || c.AdminToken != "fileadm" || !reflect.DeepEqual(c.Databases, []string{"shop", "crm"}) ||
		c.MaxBatch != 7 || c.RateLimit != 50 || c.IdleTimeout != 30*time.Second || !reflect.DeepEqual(c.AllowedOrigins, []string{"a.example"}) {
		t.Errorf("from file: %+v", c)
	}
	if len(o.warnings) != 1 || !strings.Contains(o.warnings[0], "chmod 600") {
		t.Errorf("world-readable config with tokens: warnings %v", o.warnings)
	}

	env["HILODB_TOKENS"] = "shop=env"
	env["HILODB_ADMIN_TOKEN"] = "envadm"
	o, _ = parseServeFlags([]string{"-config", cfgFile}, getenv)
	if o.cfg.Tokens["shop"] != "env" || o.cfg.AdminToken != "envadm" {
		t.Errorf("env over file: %+v", o.cfg)
	}
	o, _ = parseServeFlags([]string{"-config", cfgFile, "-tokens", "shop=flag,crm=x=y", "-admin-token", "flagadm", "-max-batch", "9", "-databases", "a, b", "-idle", "0"}, getenv)
	if o.cfg.Tokens["shop"] != "flag" || o.cfg.Tokens["crm"] != "x=y" || o.cfg.AdminToken != "flagadm" || o.cfg.MaxBatch != 9 ||
		!reflect.DeepEqual(o.cfg.Databases, []string{"a", "b"}) || o.cfg.IdleTimeout >= 0 {
		t.Errorf("flags over env and file: %+v", o.cfg)
	}

	for _, args := range [][]string{
		{"-tokens", "nodb"},
		{"-tls-cert", "c.pem"},
		{"-max-batch", "-1"},
		{"-config", filepath.Join(dir, "missing.json")},
		{"stray"},
	} {
		if _, err := parseServeFlags(args, getenv); err == nil {
			t.Errorf("%v: accepted", args)
		}
	}
	os.WriteFile(cfgFile, []byte(`{"tokenz":{}}`), 0o600)
	if _, err := parseServeFlags([]string{"-config", cfgFile}, getenv); err == nil || !strings.Contains(err.Error(), "tokenz") {
		t.Errorf("unknown config field: %v", err)
	}
}

// TestOpenListenerWarns checks the warning for a listener beyond loopback
// without TLS and tokens (parsed only: tests never bind beyond loopback).
func TestOpenListenerWarns(t *testing.T) {
	none := func(string) string { return "" }
	for _, tt := range []struct {
		args []string
		warn bool
	}{
		{[]string{"-addr", "0.0.0.0:8080"}, true},
		{[]string{"-addr", ":8080"}, true},
		{[]string{"-addr", "192.0.2.7:8080"}, true},
		{[]string{"-addr", "0.0.0.0:8080", "-tokens", "shop=s3cret"}, false},
		{[]string{"-addr", "127.0.0.1:8080"}, false},
		{[]string{"-addr", "[::1]:8080"}, false},
		{[]string{"-addr", "localhost:8080"}, false},
	} {
		o, err := parseServeFlags(tt.args, none)
		if err != nil {
			t.Fatal(err)
		}
		warned := len(o.warnings) == 1 && strings.Contains(o.warnings[0], "beyond loopback")
		if warned != tt.warn || len(o.warnings) > 1 {
			t.Errorf("%v: warnings %v, want a warning: %v", tt.args, o.warnings, tt.warn)
		}
	}
}

func TestLimitFlags(t *testing.T) {
	o, err := parseServeFlags([]string{"-allowed-hosts", "a.test, *.b.test", "-hello-timeout", "3s", "-max-conns", "9", "-max-conns-per-addr", "4", "-max-buffered", "99999999", "-max-buffered-per-db", "12345678", "-body-timeout", "7s", "-allow-identity-lowering"}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	c := o.cfg
	if !reflect.DeepEqual(c.AllowedHosts, []string{"a.test", "*.b.test"}) || c.HelloTimeout != 3*time.Second || c.MaxConns != 9 ||
		c.MaxConnsPerAddr != 4 || c.MaxBufferedBytes != 99999999 || c.MaxBufferedPerDB != 12345678 || c.BodyTimeout != 7*time.Second || !c.AllowIdentityLowering {
		t.Errorf("parsed %+v", c)
	}
	for _, bad := range [][]string{{"-max-conns", "0"}, {"-hello-timeout", "-1s"}, {"-max-buffered", "-5"}, {"-body-timeout", "0s"}, {"-max-buffered-per-db", "-1"}} {
		if _, err := parseServeFlags(bad, func(string) string { return "" }); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}
