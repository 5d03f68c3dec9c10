package interchange

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// ReadNodeLink reads a networkx node-link JSON graph in either attribute
// convention (see the package doc). file names the input in errors; a
// malformed input gives an *Error listing what is wrong.
func ReadNodeLink(r io.Reader, file string, opts Options) (*Graph, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return readNodeLink(data, file, opts)
}

// nlFile is the top level of a node-link document. Links are under
// "links" (networkx before 3.4, and MOCCASIN's files) or "edges" (the
// name networkx 3.4 moves to).
type nlFile struct {
	Directed   *bool                        `json:"directed"`
	Multigraph *bool                        `json:"multigraph"`
	Graph      map[string]json.RawMessage   `json:"graph"`
	Nodes      []map[string]json.RawMessage `json:"nodes"`
	Links      []map[string]json.RawMessage `json:"links"`
	Edges      []map[string]json.RawMessage `json:"edges"`
}

func readNodeLink(data []byte, file string, opts Options) (*Graph, error) {
	var is issues
	var f nlFile
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&f); err != nil {
		is.add("", "%s", jsonProblem(data, err))
		return nil, is.err(file)
	}
	if _, err := dec.Token(); err != io.EOF {
		is.add("", "more data after the JSON document at %s; a node-link file holds one object", lineCol(data, dec.InputOffset()))
		return nil, is.err(file)
	}
	if f.Directed != nil && !*f.Directed {
		is.add("directed", "the graph is undirected; a dependency graph must be directed (\"directed\": true)")
	}
	links, linksAt := f.Links, "links"
	switch {
	case f.Links != nil && f.Edges != nil:
		is.add("", "both \"links\" and \"edges\" are present; a node-link file names its links once")
	case f.Links == nil && f.Edges != nil:
		links, linksAt = f.Edges, "edges"
	}
	if len(f.Nodes) == 0 {
		is.add("nodes", "missing or empty: a graph needs at least one node")
	}
	if is.any() {
		return nil, is.err(file)
	}

	// The node key and the attribute convention, from the first node.
	idKey := "id"
	if _, ok := f.Nodes[0]["id"]; !ok {
		idKey = "name"
	}
	format, bytesKey, costKey := NodeLinkCheckmate, "cost_ram", "cost_cpu"
	if _, ok := f.Nodes[0]["out_cost"]; ok {
		format, bytesKey, costKey = NodeLinkMoccasin, "out_cost", "duration"
	} else if _, ok := f.Nodes[0]["cost_ram"]; !ok {
		is.add("nodes[0]", "has neither cost_ram (Checkmate's attributes: id, cost_cpu, cost_ram) nor out_cost (MOCCASIN's: name, duration, out_cost); cannot tell the output bytes")
		return nil, is.err(file)
	}

	var g rawGraph
	index := make(map[string]int32, len(f.Nodes))
	for k, nd := range f.Nodes {
		at := fmt.Sprintf("nodes[%d]", k)
		rawID, ok := nd[idKey]
		if !ok {
			is.add(at, "has no %q; every node needs the key the first node has", idKey)
			continue
		}
		key, name, err := nodeID(rawID)
		if err != nil {
			is.add(at+"."+idKey, "%v", err)
			continue
		}
		if first, dup := index[key]; dup {
			is.add(at+"."+idKey, "node %s appears twice (first as nodes[%d]); ids must be unique", name, first)
			continue
		}
		b, okB := byteCount(&is, at, bytesKey, nd)
		c, okC := costValue(&is, at, costKey, nd)
		var param int64
		if format == NodeLinkMoccasin {
			if _, has := nd["param_cost"]; has {
				param, _ = byteCount(&is, at, "param_cost", nd)
			}
		}
		if !okB || !okC {
			continue
		}
		index[key] = g.addNode(name, c, b, true)
		if g.param <= math.MaxInt64-param {
			g.param += param
		}
	}
	if is.any() {
		return nil, is.err(file)
	}

	srcKey, dstKey := "source", "target"
	if len(links) > 0 {
		if _, ok := links[0]["0"]; ok {
			srcKey, dstKey = "0", "1"
		}
	}
	seen := make(map[[2]int32]bool, len(links))
	for k, l := range links {
		at := fmt.Sprintf("%s[%d]", linksAt, k)
		u, okU := linkEnd(&is, at, srcKey, l, index)
		v, okV := linkEnd(&is, at, dstKey, l, index)
		if !okU || !okV {
			continue
		}
		if u == v {
			is.add(at, "node %s depends on itself; a dependency graph has no cycles", g.names[u])
			continue
		}
		g.addEdge(u, v, seen)
	}
	if is.any() {
		return nil, is.err(file)
	}

	var order []int32
	if raw, ok := f.Graph["order"]; ok && string(raw) != "null" {
		order = givenOrder(&is, raw, index, &g)
	} else {
		var cycle []int32
		order, cycle = NetworkxOrder(g.n(), g.succ)
		if order == nil {
			is.add(linksAt, "the graph has a cycle: %s; a dependency graph must be acyclic", cycleString(&g, cycle))
		}
	}
	if is.any() {
		return nil, is.err(file)
	}
	sem := opts.Semantics
	if sem == DefaultSemantics {
		sem = FreeSinks
	}
	rule := outputNone
	if sem == HoldSinks {
		rule = outputSinks
	}
	p := g.problem(order, rule, sem == HoldSinks)
	if err := p.Validate(); err != nil {
		is.add("", "%v", err)
		return nil, is.err(file)
	}
	var name string
	if raw, ok := f.Graph["name"]; ok {
		_ = json.Unmarshal(raw, &name) // a name that is not a string is left out
	}
	return &Graph{Problem: p, Format: format, Name: name, Edges: g.edges}, nil
}

// givenOrder checks graph.order: every node exactly once, each after the
// nodes it reads.
func givenOrder(is *issues, raw json.RawMessage, index map[string]int32, g *rawGraph) []int32 {
	var ids []json.RawMessage
	if err := json.Unmarshal(raw, &ids); err != nil {
		is.add("graph.order", "want an array of node ids")
		return nil
	}
	order := make([]int32, 0, len(ids))
	at := make([]int, g.n())
	for k, r := range ids {
		key, name, err := nodeID(r)
		if err != nil {
			is.add(fmt.Sprintf("graph.order[%d]", k), "%v", err)
			continue
		}
		v, ok := index[key]
		switch {
		case !ok:
			is.add(fmt.Sprintf("graph.order[%d]", k), "%s is not a node", name)
		case at[v] > 0:
			is.add(fmt.Sprintf("graph.order[%d]", k), "node %s is listed twice (also at %d)", name, at[v]-1)
		default:
			at[v] = k + 1
			order = append(order, v)
		}
	}
	if is.any() {
		return nil
	}
	if len(order) != g.n() {
		for v := range g.n() {
			if at[v] == 0 {
				is.add("graph.order", "lists %d of the %d nodes; node %s is missing", len(order), g.n(), g.names[v])
				return nil
			}
		}
	}
	if ok, e := g.isTopological(order); !ok {
		is.add("graph.order", "is not a topological order: node %s comes after %s, which reads it", g.names[e[0]], g.names[e[1]])
		return nil
	}
	return order
}

// nodeID reads a node id: an integer or a string. key tells ids apart the
// way Python does (1 and "1" differ); name is how it is shown.
func nodeID(raw json.RawMessage) (key, name string, err error) {
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return "", "", fmt.Errorf("not a JSON value")
	}
	switch x := v.(type) {
	case string:
		return "s" + x, x, nil
	case json.Number:
		if i, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			return "n" + strconv.FormatInt(i, 10), strconv.FormatInt(i, 10), nil
		}
		f, err := x.Float64()
		if err == nil && f == math.Trunc(f) && math.Abs(f) < 1<<53 {
			s := strconv.FormatInt(int64(f), 10)
			return "n" + s, s, nil
		}
		return "", "", fmt.Errorf("id %s is not an integer; node ids are integers or strings", x)
	}
	return "", "", fmt.Errorf("id %s is neither an integer nor a string", string(raw))
}

// byteCount reads attribute key of a node as a non-negative integer.
func byteCount(is *issues, at, key string, nd map[string]json.RawMessage) (int64, bool) {
	num, ok := number(is, at, key, nd)
	if !ok {
		return 0, false
	}
	if i, err := strconv.ParseInt(string(num), 10, 64); err == nil {
		if i < 0 {
			is.add(at+"."+key, "%d bytes is negative", i)
			return 0, false
		}
		return i, true
	}
	f, err := num.Float64()
	if err != nil || f != math.Trunc(f) || f < 0 || f >= math.MaxInt64 {
		is.add(at+"."+key, "%s is not a non-negative integer number of bytes", num)
		return 0, false
	}
	return int64(f), true
}

// costValue reads attribute key of a node as a finite non-negative number.
func costValue(is *issues, at, key string, nd map[string]json.RawMessage) (float64, bool) {
	num, ok := number(is, at, key, nd)
	if !ok {
		return 0, false
	}
	f, err := num.Float64()
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) || f < 0 {
		is.add(at+"."+key, "cost %s is not a finite non-negative number", num)
		return 0, false
	}
	return f, true
}

func number(is *issues, at, key string, nd map[string]json.RawMessage) (json.Number, bool) {
	raw, ok := nd[key]
	if !ok {
		is.add(at, "has no %q", key)
		return "", false
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if dec.Decode(&v) != nil {
		is.add(at+"."+key, "not a JSON value")
		return "", false
	}
	num, isNum := v.(json.Number)
	if !isNum {
		is.add(at+"."+key, "%s is not a number", string(raw))
		return "", false
	}
	return num, true
}

// linkEnd reads one end of a link.
func linkEnd(is *issues, at, key string, l map[string]json.RawMessage, index map[string]int32) (int32, bool) {
	raw, ok := l[key]
	if !ok {
		is.add(at, "has no %q; every link needs the keys the first one has (source and target, or \"0\" and \"1\")", key)
		return 0, false
	}
	k, name, err := nodeID(raw)
	if err != nil {
		is.add(at+"."+key, "%v", err)
		return 0, false
	}
	v, ok := index[k]
	if !ok {
		is.add(at+"."+key, "node %s is not in nodes", name)
		return 0, false
	}
	return v, true
}

// cycleString shows a cycle by node names, at most 12 of them.
func cycleString(g *rawGraph, cycle []int32) string {
	var parts []string
	for k, v := range cycle {
		if k == 12 && len(cycle) > 13 {
			parts = append(parts, fmt.Sprintf("… (%d more)", len(cycle)-13))
			v = cycle[len(cycle)-1]
		}
		parts = append(parts, g.names[v])
		if k == 12 && len(cycle) > 13 {
			break
		}
	}
	return strings.Join(parts, " → ")
}

// jsonProblem explains a decoding error with its line and column.
func jsonProblem(data []byte, err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return fmt.Sprintf("not valid JSON at %s: %v", lineCol(data, se.Offset-1), se) // Offset is past the bad byte
	case errors.As(err, &te):
		where := te.Field
		if where == "" {
			where = "the document"
		}
		return fmt.Sprintf("%s is a JSON %s at %s; a node-link file is an object with arrays \"nodes\" and \"links\" of objects", where, te.Value, lineCol(data, te.Offset))
	case errors.Is(err, io.EOF):
		return "empty: no JSON document"
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "the JSON document ends early (truncated file?)"
	}
	return err.Error()
}

// lineCol gives the byte at offset off as "line L, column C".
func lineCol(data []byte, off int64) string {
	off = min(max(off, 0), int64(len(data)))
	line := 1 + bytes.Count(data[:off], []byte{'\n'})
	col := off - int64(bytes.LastIndexByte(data[:off], '\n')) // 1-based
	return fmt.Sprintf("line %d, column %d", line, col)
}
