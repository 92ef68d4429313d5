package database

import "testing"

// TestRangeEntries: entries load as saved, reserve and all, and an entry
// saved before there was a reserve (range and mark only) still loads.
func TestRangeEntries(t *testing.T) {
	j, err := newRangeJournal(nil, map[string][]byte{
		"orders": []byte(`{"range":{"Prefix":"orders/","Low":1,"High":32,"LastSize":32,"ServerTag":"A","LastRangeAt":"0001-01-01T00:00:00Z"},"mark":16}`),
		"users":  []byte(`{"range":{"Prefix":"users/","Low":33,"High":64,"LastSize":32,"ServerTag":"A"},"mark":40,"reserve":[{"Prefix":"users/","Low":65,"High":128,"LastSize":64,"ServerTag":"B"}]}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	rs, ok, err := j.LoadRanges("orders")
	if err != nil || !ok || rs.Mark != 16 || rs.Current.High != 32 || rs.Reserve != nil {
		t.Errorf("old entry = %+v, %v, %v; want 1…32 at mark 16 and no reserve", rs, ok, err)
	}
	rs, ok, _ = j.LoadRanges("users")
	if !ok || rs.Mark != 40 || len(rs.Reserve) != 1 || rs.Reserve[0].High != 128 || rs.Reserve[0].ServerTag != "B" {
		t.Errorf("entry with a reserve = %+v", rs)
	}
	if _, ok, _ := j.LoadRanges("none"); ok {
		t.Error("a tag never saved: ok = true")
	}
	if _, err := newRangeJournal(nil, map[string][]byte{"x": []byte("{")}); err == nil {
		t.Error("a damaged entry loaded")
	}
}
