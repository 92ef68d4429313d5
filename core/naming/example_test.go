package naming_test

import (
	"fmt"

	"github.com/hilodb/hilodb/core/naming"
)

func ExamplePluralize() {
	for _, name := range []string{"Order", "Category", "Address", "LineItem"} {
		coll := naming.Pluralize(name)
		fmt.Println(name, coll, naming.IDPrefix(coll))
	}
	// Output:
	// Order Orders orders
	// Category Categories categories
	// Address Addresses addresses
	// LineItem LineItems LineItems
}
