package syncserver_test

import (
	"testing"

	"github.com/hilodb/hilodb/auth"
	"github.com/hilodb/hilodb/syncserver"
)

func TestParseClientCerts(t *testing.T) {
	const tp = "CD35A550E21A8E10868C8E90A718845FD241F1FC"
	tests := []struct {
		name, in string
		ok       bool
		role     auth.Role
	}{
		{"upper case", `{"` + tp + `": {"shop": "write"}}`, true, auth.Write},
		{"lower case with colons", `{"cd:35:a5:50:e2:1a:8e:10:86:8c:8e:90:a7:18:84:5f:d2:41:f1:fc": {"shop": "read"}}`, true, auth.Read},
		{"not hex", `{"xyz": {"shop": "read"}}`, false, 0},
		{"SHA-256 length", `{"` + tp + tp + `": {"shop": "read"}}`, false, 0},
		{"unknown role", `{"` + tp + `": {"shop": "owner"}}`, false, 0},
		{"illegal database", `{"` + tp + `": {"../x": "read"}}`, false, 0},
		{"empty", `{}`, false, 0},
		{"not JSON", `[`, false, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := syncserver.ParseClientCerts([]byte(tc.in))
			if (err == nil) != tc.ok {
				t.Fatalf("got %v, %v; want ok %v", got, err, tc.ok)
			}
			if tc.ok && got[tp]["shop"] != tc.role {
				t.Fatalf("role %v, want %v", got[tp]["shop"], tc.role)
			}
		})
	}
}

func FuzzParseClientCerts(f *testing.F) {
	f.Add([]byte(`{"CD35A550E21A8E10868C8E90A718845FD241F1FC": {"shop": "write", "*": "read"}}`))
	f.Add([]byte(`{"cd:35": {}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		certs, err := syncserver.ParseClientCerts(b)
		if err != nil {
			return
		}
		for tp, roles := range certs {
			if len(tp) != 40 {
				t.Fatalf("thumbprint %q kept", tp)
			}
			for _, r := range roles {
				if r == auth.None {
					t.Fatal("a none role kept")
				}
			}
		}
	})
}
