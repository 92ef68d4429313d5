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
