package naming_test

import (
	"strings"
	"testing"

	"github.com/hilodb/hilodb/core/naming"
)

func TestPluralize(t *testing.T) {
	tests := map[string]string{
		"Order": "Orders", "Category": "Categories", "Address": "Addresses",
		"Company": "Companies", "Day": "Days", "Box": "Boxes", "Match": "Matches",
		"Dish": "Dishes", "Person": "People", "Child": "Children",
		"LineItem": "LineItems", "OrderLine": "OrderLines", "Leaf": "Leaves",
		"Analysis": "Analyses", "Equipment": "Equipment", "Status": "Statuses",
		"user": "users", "HTTPProxy": "HTTPProxies", "": "",
	}
	for in, want := range tests {
		if got := naming.Pluralize(in); got != want {
			t.Errorf("Pluralize(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestIDPrefix(t *testing.T) {
	tests := map[string]string{"Orders": "orders", "orders": "orders", "LineItems": "LineItems", "Users": "users", "HTTP": "HTTP", "@empty": "@empty", "Äpfel": "äpfel", "äPfel": "äpfel", "ÄPFEL": "ÄPFEL", "ÄpfelUndBirnen": "ÄpfelUndBirnen", "": ""}
	for in, want := range tests {
		if got := naming.IDPrefix(in); got != want {
			t.Errorf("IDPrefix(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzIDPrefix holds IDPrefix to its rule: lower-cased when the name has
// at most one ASCII upper-case letter, kept as it is otherwise.
func FuzzIDPrefix(f *testing.F) {
	for _, s := range []string{"orders", "Orders", "LineItems", "Äpfel", "ordersÄ", "a\xffb", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		upper := 0
		for _, c := range []byte(name) {
			if c >= 'A' && c <= 'Z' {
				upper++
			}
		}
		want := name
		if upper <= 1 {
			want = strings.ToLower(name)
		}
		if got := naming.IDPrefix(name); got != want {
			t.Errorf("IDPrefix(%q) = %q, want %q", name, got, want)
		}
	})
}

func TestIDValuePart(t *testing.T) {
	c := naming.Default()
	for id, want := range map[string]string{"orders/3": "3", "a/b/c": "c", "plain": "plain", "x/": "x"} {
		if got := c.IDValuePart(id); got != want {
			t.Errorf("IDValuePart(%q) = %q, want %q", id, got, want)
		}
	}
}
