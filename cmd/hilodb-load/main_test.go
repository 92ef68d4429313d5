package main

import (
	"strings"
	"testing"
	"time"
)

// TestShortLoad is the short version of `make load`: 20 clients for 3
// seconds with group commit, in process, over loopback.
func TestShortLoad(t *testing.T) {
	var out strings.Builder
	if err := run([]string{"-clients", "20", "-duration", "3s", "-mode", "group"}, &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	t.Log(out.String())
	if !strings.Contains(out.String(), "errors 0  duplicates 0") {
		t.Errorf("report: %s", out.String())
	}
}

func TestDriveCountsRequests(t *testing.T) {
	res, err := loadOnce(options{clients: 4, duration: 500 * time.Millisecond}, true)
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests < 20 || res.Errors != 0 || res.Duplicates != 0 || res.P50 <= 0 || res.P99 < res.P50 || res.Ranges == 0 || res.Identities == 0 {
		t.Errorf("result %+v", res)
	}
}
