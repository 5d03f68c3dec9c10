package tfjs

import (
	"fmt"
	"slices"
	"strings"

	gdexp "github.com/remat-compile/remat/exporters/graphdef"
	"github.com/remat-compile/remat/internal/tfpb"
)

// TensorFlow.js does not run a graph in the file's order. Its
// GraphExecutor.execute() walks the list that compile() returns,
// orderedNodes (tfjs-converter 4.22, src/executor/model_analysis.ts and
// graph_executor.ts; research note tfjs-execution.md), built in three
// steps that Order reproduces:
//
//  1. The graph (operation_mapper.ts transformGraph): the NodeDefs become
//     nodes of a JavaScript object keyed by name, so its keys enumerate in
//     JavaScript's order (array-index names first, ascending, then file
//     order: tfpb.JSKeyOrder). Walking the nodes in that order, each of a
//     node's inputs, data or control ("^name") alike, in input order,
//     appends the node to the input's children (once per reference) and
//     the input to the node's inputs. Consts are the weights, in file
//     order; Placeholders the inputs; other nodes with no input the init
//     nodes, in file order.
//  2. The nodes used (getExecutionSubgraph): a stack walk backwards from
//     the output nodes through every input, stopping at weights, fed
//     inputs and init nodes. A used node with no input that is none of
//     those is a missing input; a dynamic op (control flow,
//     NonMaxSuppression, Where, hash tables) makes execute() refuse the
//     graph (executeAsync runs it, without a static order).
//  3. The order (getNodesInTopologicalOrder): Kahn's algorithm over a LIFO
//     stack. Every used node gets an in-count, the number of references
//     from used nodes (a child that is not used gets +∞), counted while
//     walking the fed inputs (in feed order), the weights and the init
//     nodes, then the rest in key order; the in-count object's keys are
//     created in that walk (a node's own key at its turn, or earlier as
//     someone's child) and enumerate in JavaScript's order. The list
//     starts with every node of in-count 0 in that order, and the same
//     nodes form the stack. Until the stack is empty: pop the last node;
//     for each of its used children, in children order, decrement its
//     in-count, and when it reaches 0 append the child to the list and
//     push it. Nodes that no weight, fed input or init node reaches are
//     then dropped (filterPredefinedReachableNodes).
//
// A node is thus scheduled when its last producer is popped, and the
// stack dives into the most recently readied node first: a depth-first
// order that runs a recomputation the moment its inputs exist unless a
// control edge holds it back.
//
// Feeds are keyed by tensor name in the caller's dictionary; the harness
// (internal/tfjs) sends them sorted by name, which Order assumes.

// dynamicOps are the ops that make GraphExecutor.execute() refuse a graph
// (model_analysis.ts: control flow, dynamic shapes, hash tables).
var dynamicOps = []string{
	"Switch", "Merge", "Enter", "Exit", "NextIteration", "StatelessIf", "StatelessWhile", "if", "While",
	"NonMaxSuppressionV2", "NonMaxSuppressionV3", "NonMaxSuppressionV5", "Where",
	"HashTable", "HashTableV2", "LookupTableImport", "LookupTableImportV2",
	"LookupTableFind", "LookupTableFindV2", "LookupTableSize", "LookupTableSizeV2",
}

// controlFlowOps are the ops whose outputs, and their direct producers'
// outputs, TensorFlow.js never frees during a call.
var controlFlowOps = []string{"Switch", "Merge", "Enter", "Exit", "NextIteration", "StatelessIf", "StatelessWhile", "if", "While"}

// DynamicError reports a graph that TensorFlow.js runs only with
// executeAsync, which has no static order.
type DynamicError struct{ Node, Op string }

func (e *DynamicError) Error() string {
	return fmt.Sprintf("tfjs: node %q is the dynamic op %s: TensorFlow.js runs this graph only with executeAsync, whose order is decided at run time and cannot be predicted or forced", e.Node, e.Op)
}

// graph is the executor's view of a written graph.
type graph struct {
	w        *gdexp.Written
	byName   map[string]int
	keys     []int   // node positions in the node object's key order
	children [][]int // per node, its children with repeats, in order
	inputs   [][]int // per node, its inputs (data and control), in order
}

func newGraph(w *gdexp.Written) (*graph, error) {
	g := &graph{w: w, byName: make(map[string]int, len(w.Nodes))}
	names := make([]string, 0, len(w.Nodes))
	for i, n := range w.Nodes {
		if _, dup := g.byName[n.Name]; dup {
			return nil, fmt.Errorf("tfjs: two NodeDefs are named %q", n.Name)
		}
		g.byName[n.Name] = i
		names = append(names, n.Name)
	}
	for _, name := range tfpb.JSKeyOrder(names) {
		g.keys = append(g.keys, g.byName[name])
	}
	g.children = make([][]int, len(w.Nodes))
	g.inputs = make([][]int, len(w.Nodes))
	for _, i := range g.keys {
		for _, in := range w.Nodes[i].Inputs {
			src, ok := g.byName[nodeName(in)]
			if !ok {
				return nil, fmt.Errorf("tfjs: node %q reads %q, which is not a node of the graph", w.Nodes[i].Name, in)
			}
			g.inputs[i] = append(g.inputs[i], src)
			g.children[src] = append(g.children[src], i)
		}
	}
	return g, nil
}

// nodeName is the node an input reference names: "^x", "x", "x:1" are x
// (tfjs splits at the first ':').
func nodeName(ref string) string {
	ref = strings.TrimPrefix(ref, "^")
	if i := strings.IndexByte(ref, ':'); i >= 0 {
		return ref[:i]
	}
	return ref
}

// Order returns the positions of w.Nodes in the order TensorFlow.js
// 4.22's execute() runs the written graph with w.Inputs fed and w.Outputs
// requested (compile().orderedNodes: fed Placeholders and weights
// included), as described at the top of this file. It is
// exporters/graphdef's Options.RuntimeOrder for TensorFlow.js. A graph
// execute() refuses is an error (*DynamicError for a dynamic op).
func Order(w *gdexp.Written) ([]int, error) {
	g, err := newGraph(w)
	if err != nil {
		return nil, err
	}
	n := len(w.Nodes)
	isWeight := make([]bool, n)
	isInit := make([]bool, n)
	var weights, inits []int
	for i, nd := range w.Nodes {
		switch {
		case nd.Op == "Const":
			isWeight[i] = true
			weights = append(weights, i)
		case strings.HasPrefix(nd.Op, "Placeholder"):
		case len(nd.Inputs) == 0:
			isInit[i] = true
			inits = append(inits, i)
		}
	}
	// The feeds, in the order the harness keys them (sorted names, then
	// JavaScript's key order).
	feedNames := slices.Clone(w.Inputs)
	slices.Sort(feedNames)
	isFeed := make([]bool, n)
	var feeds []int
	for _, name := range tfpb.JSKeyOrder(feedNames) {
		i, ok := g.byName[nodeName(name)]
		if !ok {
			return nil, fmt.Errorf("tfjs: input %q is not a node of the graph", name)
		}
		if !isFeed[i] {
			isFeed[i] = true
			feeds = append(feeds, i)
		}
	}
	if len(w.Outputs) == 0 {
		return nil, fmt.Errorf("tfjs: the graph has no outputs to compute")
	}

	// 2. The nodes used.
	used := make([]bool, n)
	seen := make([]bool, n)
	var stack []int
	for _, o := range w.Outputs {
		i, ok := g.byName[nodeName(o)]
		if !ok {
			return nil, fmt.Errorf("tfjs: output %q is not a node of the graph", o)
		}
		stack = append(stack, i)
	}
	for len(stack) > 0 {
		i := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if slices.Contains(dynamicOps, w.Nodes[i].Op) {
			return nil, &DynamicError{Node: w.Nodes[i].Name, Op: w.Nodes[i].Op}
		}
		used[i] = true
		if isWeight[i] || isFeed[i] || isInit[i] {
			continue
		}
		if len(g.inputs[i]) == 0 {
			return nil, fmt.Errorf("tfjs: node %q (%s) has no inputs and is not fed: give it a value, or compute outputs that do not need it", w.Nodes[i].Name, w.Nodes[i].Op)
		}
		for _, in := range g.inputs[i] {
			if !seen[in] {
				seen[in] = true
				stack = append(stack, in)
			}
		}
	}

	// 3. Kahn's algorithm over a LIFO stack.
	var predefined []int
	inPre := make([]bool, n)
	for _, i := range slices.Concat(feeds, weights, inits) {
		if used[i] && !inPre[i] {
			inPre[i] = true
			predefined = append(predefined, i)
		}
	}
	all := slices.Clone(predefined)
	for _, i := range g.keys {
		if used[i] && !inPre[i] {
			all = append(all, i)
		}
	}
	const inf = int(^uint(0) >> 2)
	count := make([]int, n)
	keyed := make([]bool, n)
	var keyOrder []string
	key := func(i int) {
		if !keyed[i] {
			keyed[i] = true
			keyOrder = append(keyOrder, w.Nodes[i].Name)
		}
	}
	for _, i := range all {
		key(i)
		for _, c := range g.children[i] {
			key(c)
			if !used[c] {
				count[c] = inf
			}
			if count[c] < inf {
				count[c]++
			}
		}
	}
	var ordered []int
	stack = stack[:0]
	for _, name := range tfpb.JSKeyOrder(keyOrder) {
		if i := g.byName[name]; used[i] && count[i] == 0 {
			ordered = append(ordered, i)
			stack = append(stack, i)
		}
	}
	for len(stack) > 0 {
		i := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, c := range g.children[i] {
			if !used[c] || count[c] >= inf {
				continue
			}
			if count[c]--; count[c] == 0 {
				ordered = append(ordered, c)
				stack = append(stack, c)
			}
		}
	}
	if len(ordered) < countTrue(used) {
		return nil, fmt.Errorf("tfjs: the graph has a cycle through data or control inputs; TensorFlow.js cannot order it")
	}

	// Only the nodes that a predefined node reaches.
	inOrder := make([]bool, n)
	for _, i := range ordered {
		inOrder[i] = true
	}
	reach := make([]bool, n)
	stack = append(stack[:0], predefined...)
	for _, i := range predefined {
		reach[i] = true
	}
	for len(stack) > 0 {
		i := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, c := range g.children[i] {
			if inOrder[c] && !reach[c] {
				reach[c] = true
				stack = append(stack, c)
			}
		}
	}
	out := ordered[:0]
	for _, i := range ordered {
		if reach[i] {
			out = append(out, i)
		}
	}
	return out, nil
}

func countTrue(b []bool) int {
	k := 0
	for _, x := range b {
		if x {
			k++
		}
	}
	return k
}
