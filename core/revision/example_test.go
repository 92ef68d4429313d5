package revision_test

import (
	"fmt"

	"github.com/hilodb/hilodb/core/revision"
)

func ExampleEncode() {
	v, node, _ := revision.Decode("_l6zhVDW---A")
	fmt.Println(v>>20, v&(1<<20-1), node)
	fmt.Println(revision.Encode(v, "B"))
	// Output:
	// 1785857268822 0 A
	// _l6zhVDW---B
}
