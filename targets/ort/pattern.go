package ort

import (
	"math"

	"github.com/remat-compile/remat/passes/memory"
)

// DefaultMemory is Memory under ONNX Runtime's default session options,
// where the memory pattern is on (enable_mem_pattern): the model of a
// session's second and later runs (memory.Options.Pattern), whose
// activations other than the graph outputs live in one block laid out by
// PatternBlock and taken from the arena before the first kernel. The first
// run is Memory's; a session peaks at the larger of the two
// (DefaultSessionPeak).
func DefaultMemory() memory.Options {
	o := Memory()
	o.Pattern = PatternBlock
	return o
}

// PatternBlock returns the bytes of the block that ONNX Runtime 1.30's
// memory pattern planner (MemPatternPlanner) lays the traced allocations
// out in, replaying them in order: each allocation takes, among the gaps
// between the blocks live at that moment (ordered by offset, from offset
// 0), the one it leaves the least of, or else the offset right after the
// highest live block; the block is the largest end of any allocation.
// Allocations of a step come before the releases after it.
func PatternBlock(trace []memory.PatternAlloc) int64 {
	type live struct {
		off, size int64
		to        int
	}
	var blocks []live // sorted by offset
	var end int64
	steps := 0
	for _, a := range trace {
		steps = max(steps, a.To+1)
	}
	next := 0
	for t := 0; t < steps || next < len(trace); t++ {
		for ; next < len(trace) && trace[next].From <= t; next++ {
			a := trace[next]
			if a.Bytes <= 0 {
				continue
			}
			at, best, waste := len(blocks), int64(0), int64(math.MaxInt64)
			if len(blocks) > 0 {
				last := blocks[len(blocks)-1]
				best = last.off + last.size
			}
			var cur int64
			for i, b := range blocks {
				if gap := b.off - cur; gap >= a.Bytes && gap-a.Bytes < waste {
					at, best, waste = i, cur, gap-a.Bytes
				}
				cur = b.off + b.size
			}
			blocks = append(blocks[:at], append([]live{{off: best, size: a.Bytes, to: a.To}}, blocks[at:]...)...)
			end = max(end, best+a.Bytes)
		}
		kept := blocks[:0]
		for _, b := range blocks {
			if b.to != t {
				kept = append(kept, b)
			}
		}
		blocks = kept
	}
	return end
}
