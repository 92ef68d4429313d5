package core_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/hilodb/hilodb/core"
)

func TestValidateKey(t *testing.T) {
	tests := []struct {
		key string
		ok  bool
	}{
		{"1-A", true},
		{"abc_DEF-09.@()+,=;$!*'%:", true},
		{strings.Repeat("k", 254), true},
		{strings.Repeat("k", 255), false},
		{"", false},
		{"a b", false},
		{"a/b", false},
		{"a|b", false},
		{"a#b", false},
		{"a?b", false},
		{"äbc", false},
		{"a\x00b", false},
		{"a\nb", false},
		{"a\"b", false},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			err := core.ValidateKey(tt.key)
			if (err == nil) != tt.ok {
				t.Fatalf("ValidateKey(%q) = %v, want ok=%v", tt.key, err, tt.ok)
			}
			if err != nil {
				var e *core.Error
				if !errors.As(err, &e) || e.Num != 1221 || !errors.Is(err, core.ErrIllegalKey) {
					t.Errorf("got %#v, want *core.Error with number 1221", err)
				}
			}
		})
	}
}

func TestValidateCollectionName(t *testing.T) {
	tests := []struct {
		name string
		ok   bool
	}{
		{"orders", true},
		{"Line_Items-2", true},
		{strings.Repeat("c", 256), true},
		{strings.Repeat("c", 257), false},
		{"", false},
		{"1orders", false},
		{"_orders", false},
		{"or ders", false},
		{"or/ders", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := core.ValidateCollectionName(tt.name)
			if (err == nil) != tt.ok {
				t.Fatalf("got %v, want ok=%v", err, tt.ok)
			}
			if err != nil && !errors.Is(err, core.ErrIllegalName) {
				t.Errorf("got %v, want ErrIllegalName", err)
			}
		})
	}
}

func FuzzValidateKey(f *testing.F) {
	for _, s := range []string{"1-A", "a b", "", "x/y", "ok@(x)"} {
		f.Add(s)
	}
	const legal = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.@()+,=;$!*'%:"
	f.Fuzz(func(t *testing.T, key string) {
		err := core.ValidateKey(key)
		want := len(key) >= 1 && len(key) <= 254
		for i := 0; i < len(key) && want; i++ {
			want = strings.IndexByte(legal, key[i]) >= 0
		}
		if (err == nil) != want {
			t.Fatalf("ValidateKey(%q) = %v, want ok=%v", key, err, want)
		}
	})
}
