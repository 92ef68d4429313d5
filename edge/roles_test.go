package main

import (
	"encoding/json"
	"testing"
)

func TestRefuse(t *testing.T) {
	tests := []struct {
		method, path, query string
		have                role
		status, num         int // 0: served
	}{
		{"GET", "/_api/document/notes/k1", "", roleRead, 0, 0},
		{"HEAD", "/docs/notes/1-A", "", roleRead, 0, 0},
		{"GET", "/_db/shop/_api/version", "", roleRead, 0, 0},
		{"POST", "/_api/cursor", "", roleRead, 0, 0},
		{"PUT", "/_api/cursor/7", "", roleRead, 0, 0},
		{"DELETE", "/_db/shop/_api/cursor/7", "", roleRead, 0, 0},
		{"PUT", "/_api/document/notes", "onlyget=true", roleRead, 0, 0},
		{"GET", "/elsewhere", "", roleRead, 0, 0}, // served: 404 unknown path
		{"PUT", "/_api/document/notes", "onlyget=false", roleRead, 403, 1907},
		{"PUT", "/_api/document/notes", "x=1&onlyget=true%", roleRead, 403, 1907},
		{"PUT", "/_api/document/notes/k1", "onlyget=true", roleRead, 403, 1907},
		{"POST", "/_api/document/notes", "", roleRead, 403, 1907},
		{"POST", "/docs/notes", "", roleRead, 403, 1907},
		{"PATCH", "/_db/shop/_api/document/notes/k1", "", roleRead, 403, 1907},
		{"DELETE", "/_api/document/notes", "", roleRead, 403, 1907},
		{"DELETE", "/_api/document/notes", "", roleWrite, 0, 0},
		{"POST", "/docs/notes", "", roleWrite, 0, 0},
		{"GET", "/_edge/status", "", roleWrite, 403, 1907},
		{"GET", "/_edge/status", "", roleAdmin, 0, 0},
		{"GET", "/_api/document/notes/k1", "", roleNone, 401, 401},
	}
	for _, tt := range tests {
		t.Run(tt.have.String()+" "+tt.method+" "+tt.path+"?"+tt.query, func(t *testing.T) {
			res := refuse(&request{method: tt.method, path: tt.path, query: tt.query}, tt.have)
			if tt.status == 0 {
				if res != nil {
					t.Fatalf("refused: %d %s", res.status, res.body)
				}
				return
			}
			if res == nil {
				t.Fatalf("served; want %d", tt.status)
			}
			var body struct {
				Error    bool   `json:"error"`
				Code     int    `json:"code"`
				ErrorNum int    `json:"errorNum"`
				Message  string `json:"errorMessage"`
			}
			if err := json.Unmarshal(res.body, &body); err != nil {
				t.Fatal(err)
			}
			if res.status != tt.status || !body.Error || body.Code != tt.status || body.ErrorNum != tt.num || body.Message == "" {
				t.Errorf("got %d %s; want %d with errorNum %d", res.status, res.body, tt.status, tt.num)
			}
		})
	}
}

func TestParseRole(t *testing.T) {
	for _, name := range []string{"none", "read", "write", "admin"} {
		if got := parseRole(name).String(); got != name {
			t.Errorf("parseRole(%q) = %s", name, got)
		}
	}
	for _, name := range []string{"", "Admin", "owner", "admin "} {
		if got := parseRole(name); got != roleNone {
			t.Errorf("parseRole(%q) = %s, want none", name, got)
		}
	}
}
