package query

// Covers reports whether an index of fields, read as pl says (the keys
// [pl.Lo, pl.Hi)), gives only documents the selector matches, so that a
// planner's candidates need no check against it. That holds when the
// selector is nothing but one equality on each of the pl.Equality leading
// fields and, when pl.Range, conditions $gt, $gte, $lt and $lte on the
// next field, each comparing with a number or a string (an equality also
// with null or a boolean). The proof rests on AppendKey: for those values
// its order is Compare's, and no key is a prefix of another, so a key in
// the range holds an equal value at each fixed field and, at the next, a
// value of the same kind in the range.
func (s *Selector) Covers(fields []Path, pl IndexPlan) bool {
	if s == nil || s.root == nil || pl.Equality == 0 && !pl.Range {
		return false
	}
	var nodes []node
	switch n := s.root.(type) {
	case andNode:
		nodes = n
	case fieldNode:
		nodes = []node{n}
	default:
		return false
	}
	eqs := make([]int, pl.Equality) // equalities seen on each fixed field
	for _, n := range nodes {
		f, ok := n.(fieldNode)
		if !ok || f.path.raw == "" {
			return false
		}
		at := -1
		for i := 0; i < pl.Equality || pl.Range && i == pl.Equality; i++ {
			if fields[i].raw == f.path.raw {
				at = i
				break
			}
		}
		if at < 0 {
			return false
		}
		conds := []cond{f.c}
		if all, ok := f.c.(condAll); ok {
			conds = all
		}
		for _, c := range conds {
			cc, ok := c.(cmpCond)
			if !ok {
				return false
			}
			t := tag(cc.arg)
			if at < pl.Equality {
				if cc.op != OpEq || t < nullTag || t > stringTag {
					return false
				}
				eqs[at]++
				continue
			}
			if cc.op == OpEq || t != numberTag && t != stringTag {
				return false
			}
		}
	}
	for _, n := range eqs {
		if n != 1 {
			return false
		}
	}
	return true
}
