package uuid_test

import (
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/hilodb/hilodb/core/uuid"
)

var uuidv4Form = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

func TestNew(t *testing.T) {
	seen := map[string]bool{}
	for range 10000 {
		id := uuid.New()
		if !uuidv4Form.MatchString(id) || seen[id] {
			t.Fatalf("New() = %q (seen before: %v), want a new version 4 UUID", id, seen[id])
		}
		seen[id] = true
	}
}

func TestParse(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"bc151542-8fa7-45ac-bc04-509b343a8720", "bc151542-8fa7-45ac-bc04-509b343a8720", true},
		{"BC151542-8FA7-45AC-BC04-509B343A8720", "bc151542-8fa7-45ac-bc04-509b343a8720", true},
		{"bc151542-8fa7-45ac-bc04-509b343a872", "", false},
		{"bc151542x8fa7-45ac-bc04-509b343a8720", "", false},
		{"gc151542-8fa7-45ac-bc04-509b343a8720", "", false},
		{"", "", false},
	}
	for _, tc := range tests {
		u, err := uuid.Parse(tc.in)
		if tc.ok != (err == nil) || tc.ok && u.String() != tc.want {
			t.Errorf("Parse(%q) = %s, %v; want %s, ok %v", tc.in, u, err, tc.want, tc.ok)
		}
		if !tc.ok && !errors.Is(err, uuid.ErrMalformed) {
			t.Errorf("Parse(%q): %v does not wrap ErrMalformed", tc.in, err)
		}
	}
}

func TestUUIDText(t *testing.T) {
	var v struct{ ID uuid.UUID }
	if err := json.Unmarshal([]byte(`{"ID":"BC151542-8FA7-45AC-BC04-509B343A8720"}`), &v); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(v)
	if string(b) != `{"ID":"bc151542-8fa7-45ac-bc04-509b343a8720"}` {
		t.Errorf("round trip: %s", b)
	}
	if err := json.Unmarshal([]byte(`{"ID":"nope"}`), &v); !errors.Is(err, uuid.ErrMalformed) {
		t.Errorf("a malformed UUID: %v", err)
	}
}

func FuzzUUID(f *testing.F) {
	f.Add("bc151542-8fa7-45ac-bc04-509b343a8720")
	f.Add("BC151542-8FA7-45AC-BC04-509B343A8720")
	f.Add("not a uuid")
	f.Fuzz(func(t *testing.T, s string) {
		u, err := uuid.Parse(s)
		if err != nil {
			return
		}
		if u.String() != strings.ToLower(s) {
			t.Fatalf("Parse(%q) → %s", s, u)
		}
	})
}
