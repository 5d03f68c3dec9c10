package tfpb

import (
	"math"
	"sort"
	"strconv"
)

// JSKeyOrder orders keys as a JavaScript object enumerates them
// (ECMAScript OrdinaryOwnPropertyKeys): array indices (canonical decimal
// integers below 2³²−1) first, ascending, then the other keys in insertion
// order. TensorFlow.js keys its graph's nodes, a signature's entries and
// its executor's bookkeeping by name in plain objects, so this order
// decides which outputs a model returns and in which order its executor
// visits nodes. keys are in insertion order; the result is a new slice.
func JSKeyOrder(keys []string) []string {
	var idx, rest []string
	for _, k := range keys {
		if _, ok := ArrayIndex(k); ok {
			idx = append(idx, k)
		} else {
			rest = append(rest, k)
		}
	}
	sort.SliceStable(idx, func(i, j int) bool {
		a, _ := ArrayIndex(idx[i])
		b, _ := ArrayIndex(idx[j])
		return a < b
	})
	return append(idx, rest...)
}

// ArrayIndex reports whether a JavaScript object key is an array index (a
// canonical decimal integer below 2³²−1), and its value.
func ArrayIndex(k string) (uint64, bool) {
	n, err := strconv.ParseUint(k, 10, 32)
	if err != nil || n >= math.MaxUint32 || strconv.FormatUint(n, 10) != k {
		return 0, false
	}
	return n, true
}
