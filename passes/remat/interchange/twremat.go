package interchange

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// ReadTWRemat reads the text input of Kumar et al.'s TWRemat tool (see the
// package doc). file names the input in errors; a malformed input gives
// an *Error listing what is wrong, by line.
func ReadTWRemat(r io.Reader, file string, opts Options) (*Graph, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return readTWRemat(data, file, opts)
}

// twNode is one `node` line.
type twNode struct {
	line   int
	id     int64
	deps   []int64
	cost   float64
	size   int64
	recomp bool
	ptr    bool
	target bool
}

func readTWRemat(data []byte, file string, opts Options) (*Graph, error) {
	var is issues
	var g rawGraph
	var nodes []twNode
	index := map[int64]int32{}
	budget := int64(-1)
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	line, header := 0, false
	for sc.Scan() {
		line++
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		at := fmt.Sprintf("line %d", line)
		switch fields[0] {
		case "p":
			switch {
			case header || len(nodes) > 0 || budget >= 0:
				is.add(at, "the problem line `p remat2` must come first, once")
			case len(fields) != 2 || fields[1] != "remat2":
				is.add(at, "problem line %q: the TWRemat input this reads is `p remat2`", sc.Text())
			}
			header = true
		case "memlimit":
			if budget >= 0 {
				is.add(at, "a second memlimit line; give the limit once")
				continue
			}
			if len(fields) != 2 {
				is.add(at, "want `memlimit BYTES`")
				continue
			}
			v, err := strconv.ParseInt(fields[1], 10, 64)
			if err != nil || v < 0 {
				is.add(at, "memlimit %q is not a non-negative integer number of bytes", fields[1])
				continue
			}
			budget = v
		case "node":
			nd, ok := parseTWNode(&is, at, fields)
			if !ok {
				continue
			}
			nd.line = line
			if first, dup := index[nd.id]; dup {
				is.add(at, "node %d is defined twice (first on line %d)", nd.id, nodes[first].line)
				continue
			}
			index[nd.id] = g.addNode(strconv.FormatInt(nd.id, 10), nd.cost, nd.size, nd.recomp)
			g.pointer[len(nodes)], g.target[len(nodes)] = nd.ptr, nd.target
			nodes = append(nodes, nd)
		default:
			is.add(at, "unknown line %q; a TWRemat input has `p remat2`, `memlimit BYTES` and `node ID deps ... (cpu C mem M | effectful | pointer) [target]` lines", truncate(sc.Text(), 60))
		}
	}
	if err := sc.Err(); err != nil {
		is.add(fmt.Sprintf("line %d", line+1), "%v", err)
	}
	if len(nodes) == 0 && !is.any() {
		is.add("", "no `node` lines: a graph needs at least one node")
	}
	if is.any() {
		return nil, is.err(file)
	}

	seen := make(map[[2]int32]bool)
	for v, nd := range nodes {
		for _, d := range nd.deps {
			u, ok := index[d]
			switch {
			case !ok:
				is.add(fmt.Sprintf("line %d", nd.line), "node %d depends on node %d, which no `node` line defines", nd.id, d)
			case u == int32(v):
				is.add(fmt.Sprintf("line %d", nd.line), "node %d depends on itself; a dependency graph has no cycles", nd.id)
			default:
				g.addEdge(u, int32(v), seen)
			}
		}
	}
	if is.any() {
		return nil, is.err(file)
	}
	// The file's order when it is topological, else networkx's.
	order := make([]int32, g.n())
	for i := range order {
		order[i] = int32(i)
	}
	if ok, _ := g.isTopological(order); !ok {
		var cycle []int32
		if order, cycle = NetworkxOrder(g.n(), g.succ); order == nil {
			is.add("", "the graph has a cycle: %s; a dependency graph must be acyclic", cycleString(&g, cycle))
			return nil, is.err(file)
		}
	}
	rule := outputTargets
	switch opts.Semantics {
	case FreeSinks:
		rule = outputNone
	case HoldSinks:
		rule = outputSinks
	}
	p := g.problem(order, rule, false)
	if budget >= 0 {
		p.BudgetBytes = budget
	}
	if err := p.Validate(); err != nil {
		is.add("", "%v", err)
		return nil, is.err(file)
	}
	return &Graph{Problem: p, Format: TWRematText, Edges: g.edges}, nil
}

// parseTWNode reads `node ID deps DEP... WEIGHT [target]`.
func parseTWNode(is *issues, at string, f []string) (twNode, bool) {
	var nd twNode
	if len(f) < 3 || f[2] != "deps" {
		is.add(at, "want `node ID deps DEP... WEIGHT`, where WEIGHT is `cpu C mem M`, `effectful` or `pointer`")
		return nd, false
	}
	id, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		is.add(at, "node id %q is not an integer", f[1])
		return nd, false
	}
	nd.id = id
	k := 3
	for ; k < len(f); k++ {
		d, err := strconv.ParseInt(f[k], 10, 64)
		if err != nil {
			break
		}
		nd.deps = append(nd.deps, d)
	}
	if k == len(f) {
		is.add(at, "node %d has no weight; end the line with `cpu C mem M`, `effectful` or `pointer`", id)
		return nd, false
	}
	var (
		cost   float64
		size   int64
		recomp = true
		ptr    bool
	)
	switch f[k] {
	case "cpu":
		if len(f) < k+4 {
			is.add(at, "node %d: want `cpu C mem M`", id)
			return nd, false
		}
		if f[k+2] != "mem" {
			is.add(at, "node %d: want `cpu C mem M`, found %q after the cost", id, f[k+2])
			return nd, false
		}
		c, err := strconv.ParseFloat(f[k+1], 64)
		if err != nil || c < 0 || math.IsInf(c, 0) || math.IsNaN(c) {
			is.add(at, "node %d: cpu %q is not a finite non-negative number", id, f[k+1])
			return nd, false
		}
		m, err := strconv.ParseInt(f[k+3], 10, 64)
		if err != nil || m < 0 {
			is.add(at, "node %d: mem %q is not a non-negative integer number of bytes", id, f[k+3])
			return nd, false
		}
		cost, size = c, m
		k += 4
	case "effectful":
		recomp = false
		k++
	case "pointer":
		ptr = true
		k++
	default:
		is.add(at, "node %d: %q is neither a dependency id nor a weight (`cpu C mem M`, `effectful` or `pointer`)", id, f[k])
		return nd, false
	}
	target := false
	if k < len(f) && f[k] == "target" {
		target = true
		k++
	}
	if k < len(f) {
		is.add(at, "node %d: unexpected %q after the weight; only `target` may follow it", id, f[k])
		return nd, false
	}
	nd.cost, nd.size, nd.recomp, nd.ptr, nd.target = cost, size, recomp, ptr, target
	return nd, true
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
