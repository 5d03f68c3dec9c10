package irtext

import "github.com/remat-compile/remat/ir"

// ParseSmall is Parse with small allocation limits, so that fuzzing does
// not spend its time on inputs that legitimately build huge graphs.
func ParseSmall(name, src string) (*ir.Graph, error) {
	return parse(name, src, limits{unnamedID: 1 << 12, literalBytes: 1 << 16, literalStrings: 1 << 10})
}
