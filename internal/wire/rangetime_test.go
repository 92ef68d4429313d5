package wire_test

import (
	"testing"
	"time"

	"github.com/hilodb/hilodb/internal/wire"
)

func TestRangeTime(t *testing.T) {
	for _, tc := range []time.Time{
		time.Date(2026, 11, 26, 16, 5, 9, 123456789, time.UTC),
		time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC),
		time.Date(1999, 12, 31, 23, 59, 59, 999999999, time.FixedZone("x", -7*3600)),
		time.Date(1, 1, 1, 0, 0, 0, 1e6, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC),
	} {
		got := wire.FormatRangeTime(tc)
		if want := tc.UTC().Format(wire.TimeLayout); got != want {
			t.Errorf("FormatRangeTime(%v) = %q, want %q", tc, got, want)
		}
		back, ok := wire.ParseRangeTime(got)
		if want := tc.UTC().Truncate(time.Millisecond); !ok || !back.Equal(want) {
			t.Errorf("ParseRangeTime(%q) = %v, %v; want %v", got, back, ok, want)
		}
	}
	// Other RFC 3339 spellings go through time.Parse; the rest is refused.
	for s, want := range map[string]string{
		"2026-11-26T16:05:09Z":           "2026-11-26T16:05:09Z",
		"2026-11-26T16:05:09.5+01:00":    "2026-11-26T15:05:09.5Z",
		"2026-11-26T16:05:09.123456789Z": "2026-11-26T16:05:09.123456789Z",
	} {
		got, ok := wire.ParseRangeTime(s)
		w, _ := time.Parse(time.RFC3339Nano, want)
		if !ok || !got.Equal(w) {
			t.Errorf("ParseRangeTime(%q) = %v, %v; want %v", s, got, ok, w)
		}
	}
	for _, bad := range []string{"", "yesterday", "2026-02-31T00:00:00.000Z", "2026-13-01T00:00:00.000Z", "2026-11-26T24:00:00.000Z", "2026-11-26T16:05:09.12xZ", "2026-11-26T16:05:09.000Y"} {
		if _, ok := wire.ParseRangeTime(bad); ok {
			t.Errorf("ParseRangeTime(%q) was taken", bad)
		}
	}
}

func FuzzParseRangeTime(f *testing.F) {
	f.Add("2026-11-26T16:05:09.123Z")
	f.Add("2026-02-30T00:00:00.000Z")
	f.Add("2026-11-26T16:05:09+01:00")
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := wire.ParseRangeTime(s)
		if !ok {
			return
		}
		// What it takes, it takes as time.Parse would.
		want, err := time.Parse(time.RFC3339Nano, s)
		if err != nil || !got.Equal(want) {
			t.Fatalf("ParseRangeTime(%q) = %v, time.Parse = %v, %v", s, got, want, err)
		}
	})
}
