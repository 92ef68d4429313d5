package loaded

// Order is which item of a List each change a load handed became: the
// number of an item a saved index entry names is the number of the change
// (from 0), as the snapshot handed its items. Until a change does not
// become the next item (a pending mark, a key out of order) the two are
// the same and nothing is kept.
type Order struct {
	n  int     // the changes handed
	at []int32 // the item of each change (-1: none), once they differ
}

// Next records that the next change became item i (-1: none).
func (o *Order) Next(i int) {
	if o.at == nil && i == o.n {
		o.n++
		return
	}
	o.differ(i)
}

// Skip records that the next n changes became the items of their numbers
// (a table taken as it is).
func (o *Order) Skip(n int) {
	if o.at == nil {
		o.n += n
		return
	}
	for range n {
		o.differ(o.n)
	}
}

// Handed returns how many changes were recorded.
func (o *Order) Handed() int { return o.n }

// Same reports whether each change became the item of its number.
func (o *Order) Same() bool { return o.at == nil }

// differ is Next once the changes and the items differ.
func (o *Order) differ(i int) {
	if o.at == nil {
		o.at = make([]int32, o.n, o.n+1024)
		for j := range o.at {
			o.at[j] = int32(j)
		}
	}
	o.at = append(o.at, int32(i))
	o.n++
}

// Item returns the item change n became, or -1.
func (o *Order) Item(n int32) int32 {
	switch {
	case n < 0 || int(n) >= o.n:
		return -1
	case o.at == nil:
		return n
	}
	return o.at[n]
}
