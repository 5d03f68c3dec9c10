package verify

import (
	"slices"
	"strings"
	"testing"

	"github.com/remat-compile/remat/internal/onnxpb"
	"github.com/remat-compile/remat/internal/ort"
	"github.com/remat-compile/remat/internal/testmodels"
	"google.golang.org/protobuf/proto"
)

// TestPlacementMatching checks the event matching on profiles as ORT 1.30
// wrote them for the U remat models (event names, op types and node
// indices copied from real runs), without running ORT.
func TestPlacementMatching(t *testing.T) {
	type ev struct {
		name, op string
		index    int
	}
	events := func(list ...ev) *ort.Profile {
		p := &ort.Profile{}
		for _, e := range list {
			p.Nodes = append(p.Nodes, ort.NodeEvent{Name: e.name, OpType: e.op, NodeIndex: e.index})
		}
		return p
	}
	dep := &metadataPlan{md: ptr(testmodels.UMetadata()), g: testmodels.UGraph(testmodels.UVariant{Remat: true, Dep: true})}
	late := &metadataPlan{md: ptr(testmodels.UMetadata()), g: testmodels.UGraph(testmodels.UVariant{Remat: true})}
	for _, tt := range []struct {
		name string
		plan *metadataPlan
		prof *ort.Profile
		// want gives, per recompute node, the event it ran as and "" or
		// a substring of the problem.
		want map[string][2]string
	}{
		{"dep/extended: FusedConv keeps the conv's name and absorbs the relu", dep, events(
			ev{"enc1_conv", "FusedConv", 27}, ev{"enc2_conv", "FusedConv", 28}, ev{"enc3_conv", "FusedConv", 29}, ev{"bott_conv", "FusedConv", 30},
			ev{"dec3_add", "Add", 8}, ev{"dec3_conv", "FusedConv", 31},
			ev{"dep_rc1_flat", "Reshape", 11}, ev{"dep_rc1_slice", "Slice", 12}, ev{"dep_rc1_cast", "Cast", 13}, ev{"dep_rc1_concat", "Concat", 14}, ev{"dep_rc1_reshape", "Reshape", 15},
			ev{"enc1_conv_rc1", "FusedConv", 32}, ev{"enc2_conv_rc1", "FusedConv", 33},
			ev{"dec2_add", "Add", 20}, ev{"dec2_conv", "FusedConv", 34}, ev{"dec1_add", "Add", 23}, ev{"dec1_conv", "FusedConv", 35}, ev{"out_conv", "Conv", 26}),
			map[string][2]string{"enc1_conv_rc1": {"enc1_conv_rc1", ""}, "enc1_relu_rc1": {"enc1_conv_rc1", ""}, "enc2_conv_rc1": {"enc2_conv_rc1", ""}, "enc2_relu_rc1": {"enc2_conv_rc1", ""}}},
		{"dep/all: NCHWc names the fused conv after its output", dep, events(
			ev{"ReorderInput", "ReorderInput", 37}, ev{"e1_nchwc", "Conv", 36}, ev{"e2_nchwc", "Conv", 38}, ev{"e3_nchwc", "Conv", 39}, ev{"b_nchwc", "Conv", 40},
			ev{"dec3_add", "Add", 8}, ev{"d3_nchwc", "Conv", 41}, ev{"ReorderOutput", "ReorderOutput", 54},
			ev{"dep_rc1_flat", "Reshape", 11}, ev{"dep_rc1_slice", "Slice", 12}, ev{"dep_rc1_cast", "Cast", 13}, ev{"dep_rc1_concat", "Concat", 14}, ev{"dep_rc1_reshape", "Reshape", 15},
			ev{"ReorderInput_token_12", "ReorderInput", 43}, ev{"e1_rc1_nchwc", "Conv", 42}, ev{"Reshape_token_26", "Reshape", 50}, ev{"e2_rc1_nchwc", "Conv", 44},
			ev{"Reshape_token_16", "Reshape", 46}, ev{"Reshape", "Reshape", 45}, ev{"dec2_add", "Add", 20}, ev{"Reshape_token_19", "Reshape", 47}, ev{"d2_nchwc", "Conv", 48},
			ev{"Reshape_token_24", "Reshape", 49}, ev{"dec1_add", "Add", 23}, ev{"Reshape_token_28", "Reshape", 51}, ev{"d1_nchwc", "Conv", 52}, ev{"y_nchwc", "Conv", 53}, ev{"ReorderOutput_token_34", "ReorderOutput", 55}),
			map[string][2]string{"enc1_conv_rc1": {"e1_rc1_nchwc", ""}, "enc1_relu_rc1": {"e1_rc1_nchwc", ""}, "enc2_conv_rc1": {"e2_rc1_nchwc", ""}, "enc2_relu_rc1": {"e2_rc1_nchwc", ""}}},
		{"late/basic: CSE kept the copies and dropped the originals", late, events(
			ev{"enc1_conv_rc1", "Conv", 11}, ev{"enc1_relu_rc1", "Relu", 12}, ev{"enc2_conv_rc1", "Conv", 13}, ev{"enc2_relu_rc1", "Relu", 14},
			ev{"enc3_conv", "Conv", 4}, ev{"enc3_relu", "Relu", 5}, ev{"bott_conv", "Conv", 6}, ev{"bott_relu", "Relu", 7},
			ev{"dec3_add", "Add", 8}, ev{"dec3_conv", "Conv", 9}, ev{"dec3_relu", "Relu", 10}, ev{"dec2_add", "Add", 15},
			ev{"dec2_conv", "Conv", 16}, ev{"dec2_relu", "Relu", 17}, ev{"dec1_add", "Add", 18}, ev{"dec1_conv", "Conv", 19}, ev{"dec1_relu", "Relu", 20}, ev{"out_conv", "Conv", 21}),
			map[string][2]string{"enc1_conv_rc1": {"enc1_conv_rc1", `original "enc1_conv" no longer runs`}, "enc2_relu_rc1": {"enc2_relu_rc1", "ORT hoisted"}}},
		{"dep/disabled: a recompute missing from the profile", dep, events(
			ev{"enc1_conv", "Conv", 0}, ev{"enc1_relu", "Relu", 1}, ev{"enc2_conv", "Conv", 2}, ev{"enc2_relu", "Relu", 3}, ev{"dec3_relu", "Relu", 10}, ev{"enc2_conv_rc1", "Conv", 18}, ev{"enc2_relu_rc1", "Relu", 19}, ev{"dec2_add", "Add", 20}),
			map[string][2]string{"enc1_conv_rc1": {"", "missing from ORT's profile"}, "enc2_relu_rc1": {"enc2_relu_rc1", ""}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := map[string]PlacementReport{}
			for _, pr := range checkPlacement(tt.plan, tt.prof, nil) {
				got[pr.Node] = pr
			}
			for node, want := range tt.want {
				pr, ok := got[node]
				if !ok {
					t.Fatalf("no report for %s", node)
				}
				if pr.Event != want[0] {
					t.Errorf("%s ran as %q (%s), want %q", node, pr.Event, pr.Match, want[0])
				}
				if want[1] == "" && !pr.OK || want[1] != "" && !strings.Contains(pr.Problem, want[1]) {
					t.Errorf("%s: ok %v, problem %q; want problem %q", node, pr.OK, pr.Problem, want[1])
				}
			}
		})
	}
}

func ptr[T any](x T) *T { return &x }

// TestPlacementTracing checks the tracing through the graph ORT ran
// (optGraph), without running ORT: optimized graphs written by hand in the
// forms ORT's optimizers produce, with a profile that runs their nodes in
// order.
func TestPlacementTracing(t *testing.T) {
	late := &metadataPlan{md: ptr(testmodels.UMetadata()), g: testmodels.UGraph(testmodels.UVariant{Remat: true})}
	type onode struct {
		name, op string
		in, out  []string
	}
	build := func(nodes ...onode) ([]byte, *ort.Profile) {
		mp := &onnxpb.ModelProto{Graph: &onnxpb.GraphProto{Name: proto.String("u")}}
		prof := &ort.Profile{}
		for i, n := range nodes {
			mp.Graph.Node = append(mp.Graph.Node, &onnxpb.NodeProto{Name: proto.String(n.name), OpType: proto.String(n.op), Input: n.in, Output: n.out})
			prof.Nodes = append(prof.Nodes, ort.NodeEvent{Name: n.name, OpType: n.op, NodeIndex: i})
		}
		data, err := proto.Marshal(mp)
		if err != nil {
			t.Fatal(err)
		}
		return data, prof
	}
	head := []onode{
		{"enc1_conv", "FusedConv", []string{"x", "enc1.weight", "enc1.bias"}, []string{"e1"}},
		{"enc2_conv", "FusedConv", []string{"e1", "enc2.weight", "enc2.bias"}, []string{"e2"}},
		{"dec3_relu", "Relu", []string{"s3"}, []string{"d3"}},
	}
	tail := onode{"dec2_add", "Add", []string{"d3", "e2_rc1"}, []string{"s2"}}
	for _, tt := range []struct {
		name  string
		nodes []onode
		// want gives, per recompute node, the event it ran as ("" when
		// it is not located) and "" or a substring of the problem.
		want map[string][2]string
	}{
		{"fused with generated names: traced through the tensors ORT created", append(slices.Clone(head),
			onode{"enc1_conv_rc1/Fusion", "FusedConv", []string{"x", "enc1.weight", "enc1.bias"}, []string{"fusion_token_1"}},
			onode{"reshape_token_2", "Reshape", []string{"fusion_token_1", "shape_token_0"}, []string{"e1_rc1"}},
			onode{"FusedConv_token_3", "FusedConv", []string{"e1_rc1", "enc2.weight", "enc2.bias"}, []string{"e2_rc1"}},
			tail),
			map[string][2]string{"enc1_conv_rc1": {"enc1_conv_rc1/Fusion", ""}, "enc1_relu_rc1": {"enc1_conv_rc1/Fusion", ""},
				"enc2_conv_rc1": {"FusedConv_token_3", ""}, "enc2_relu_rc1": {"FusedConv_token_3", ""}}},
		{"CSE merged the first copy: the kernel that reads the original's output does not compute it", append(slices.Clone(head),
			onode{"FusedConv_token_3", "FusedConv", []string{"e1", "enc2.weight", "enc2.bias"}, []string{"e2_rc1"}},
			tail),
			map[string][2]string{"enc1_conv_rc1": {"", "cannot be verified"}, "enc1_relu_rc1": {"", "cannot be verified"},
				"enc2_conv_rc1": {"", "cannot be verified"}, "enc2_relu_rc1": {"FusedConv_token_3", ""}}},
		{"hoisted: the fused copy runs before its \"after\" node", []onode{head[0], head[1],
			{"FusedConv_token_3", "FusedConv", []string{"x", "enc1.weight", "enc1.bias"}, []string{"e1_rc1"}},
			{"FusedConv_token_4", "FusedConv", []string{"e1_rc1", "enc2.weight", "enc2.bias"}, []string{"e2_rc1"}},
			head[2], tail},
			map[string][2]string{"enc1_conv_rc1": {"FusedConv_token_3", "ORT hoisted"}, "enc2_conv_rc1": {"FusedConv_token_4", "ORT hoisted"}}},
		{"NCHWc: the copy back to the plain layout runs late; the recompute is the blocked kernel", append(slices.Clone(head),
			onode{"e1_rc1_nchwc", "Conv", []string{"x", "enc1.weight", "enc1.bias"}, []string{"reorder_token_5"}},
			onode{"e2_rc1_nchwc", "Conv", []string{"reorder_token_5", "enc2.weight", "enc2.bias"}, []string{"reorder_token_6"}},
			onode{"ReorderOutput_token_7", "ReorderOutput", []string{"reorder_token_6"}, []string{"e2_rc1"}},
			tail,
			onode{"ReorderOutput_token_8", "ReorderOutput", []string{"reorder_token_5"}, []string{"e1_rc1"}}),
			map[string][2]string{"enc1_relu_rc1": {"e1_rc1_nchwc", ""}, "enc2_relu_rc1": {"e2_rc1_nchwc", ""}}},
		{"the \"after\" node is gone: unverifiable, not passed", []onode{head[0], head[1],
			{"FusedConv_token_3", "FusedConv", []string{"x", "enc1.weight", "enc1.bias"}, []string{"e1_rc1"}},
			{"FusedConv_token_4", "FusedConv", []string{"e1_rc1", "enc2.weight", "enc2.bias"}, []string{"e2_rc1"}},
			{"dec2_add", "Add", []string{"s3", "e2_rc1"}, []string{"s2"}}},
			map[string][2]string{"enc1_conv_rc1": {"FusedConv_token_3", `its "after" node "dec3_relu" is not in the graph ORT ran`}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			data, prof := build(tt.nodes...)
			og, err := parseOptGraph(data, prof)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]PlacementReport{}
			for _, pr := range checkPlacement(late, prof, og) {
				got[pr.Node] = pr
			}
			for node, want := range tt.want {
				pr := got[node]
				if pr.Event != want[0] {
					t.Errorf("%s ran as %q (%s), want %q", node, pr.Event, pr.Match, want[0])
				}
				if want[1] == "" && !pr.OK || want[1] != "" && !strings.Contains(pr.Problem, want[1]) {
					t.Errorf("%s: ok %v, problem %q; want problem %q", node, pr.OK, pr.Problem, want[1])
				}
			}
		})
	}
}
