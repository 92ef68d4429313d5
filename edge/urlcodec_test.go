//go:build !(js && wasm)

package main

import (
	"net/url"
	"reflect"
	"strings"
	"testing"
)

// checkURLCodec holds the worker's decoding to net/url's for s, as a query,
// a path segment and a path.
func checkURLCodec(t *testing.T, s string) {
	t.Helper()
	want, wantErr := url.ParseQuery(s)
	got, gotErr := parseQuery(s)
	if (wantErr == nil) != (gotErr == nil) || wantErr != nil && wantErr.Error() != gotErr.Error() {
		t.Fatalf("parseQuery(%q): error %v, net/url %v", s, gotErr, wantErr)
	}
	if len(want) != len(got) || len(want) > 0 && !reflect.DeepEqual(map[string][]string(want), map[string][]string(got)) {
		t.Fatalf("parseQuery(%q) = %v, net/url %v", s, got, want)
	}
	for k := range want {
		if got.Get(k) != want.Get(k) {
			t.Fatalf("parseQuery(%q).Get(%q) = %q, net/url %q", s, k, got.Get(k), want.Get(k))
		}
	}
	wantP, wantErr := url.PathUnescape(s)
	gotP, gotErr := pathUnescape(s)
	if wantP != gotP || (wantErr == nil) != (gotErr == nil) || wantErr != nil && wantErr.Error() != gotErr.Error() {
		t.Fatalf("pathUnescape(%q) = %q, %v; net/url %q, %v", s, gotP, gotErr, wantP, wantErr)
	}
	if want, got := (&url.URL{Path: s}).EscapedPath(), escapePath(s); want != got {
		t.Fatalf("escapePath(%q) = %q, net/url %q", s, got, want)
	}
}

func TestURLCodec(t *testing.T) {
	for _, s := range []string{
		"", "a=1", "a=1&b=2&a=3", "waitForSync=true&returnNew=false", "a+b=c+d", "a%20b=%2Fx", "onlyget=true",
		"a=%zz", "a=%4", "%", "a;b=1", "a=1;b=2&c=3", "&&a=&=b", "k=%E2%82%AC", "x=%41%42+%2B",
		"/docs/orders/1-A", "/docs/a b?c#d", "*", "/docs/ü/é", "/docs/$&+,:;=@~._-", strings.Repeat("a&", maxQueryParams),
	} {
		checkURLCodec(t, s)
	}
}

func FuzzURLCodec(f *testing.F) {
	for _, s := range []string{"a=1&b=%20", "x+y=%zz", "a;b", "/docs/orders/1-A", "%E2%82", "*"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { checkURLCodec(t, s) })
}
