package irtext_test

import (
	"fmt"
	"os"

	"github.com/remat-compile/remat/ir"
	"github.com/remat-compile/remat/ir/irtext"
)

func ExampleParse() {
	g, err := irtext.Parse("example.ir", `
graph g {
  input x:f32[N,4]
  param w = f32[4]{1, 2, 3, 4}
  y:f32[N,4] = Mul(x, w)
  z:f32[N,4] = Relu(y) {alpha=0.5}
  return z
}`)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, n := range g.Nodes {
		fmt.Println(n.Op, n.Inputs, n.Outputs[0].Type)
	}
	_, err = irtext.Parse("bad.ir", "graph g {\n  y = Relu(x)\n}")
	fmt.Println(err)
	// Output:
	// Mul [x w] f32[N,4]
	// Relu [y] f32[N,4]
	// bad.ir:2:12: undefined value "x"
}

func ExamplePrint() {
	g := ir.NewGraph("g")
	g.Opsets = []ir.Opset{{Domain: "", Version: 17}}
	x := g.AddInput("x", ir.TensorOf(ir.Float32, 2, 3))
	s := g.NewNode("Split", "", []*ir.Value{x}, []string{"a", "b"})
	s.SetAttr(ir.IntAttr("axis", 0))
	s.Name = "split"
	a, b := s.Outputs[0], s.Outputs[1]
	a.Type, b.Type = ir.TensorOf(ir.Float32, 1, 3), ir.TensorOf(ir.Float32, 1, 3)
	add := g.NewNode("Add", "", []*ir.Value{a, b}, []string{""})
	sum := add.SetOutput(0, "") // an unnamed value prints as v<ID>
	g.AddOutput(sum)
	if err := irtext.Print(os.Stdout, g); err != nil {
		fmt.Println(err)
	}
	// Output:
	// graph g {
	//   opset 17
	//   input x:f32[2,3]
	//   a:f32[1,3], b:f32[1,3] = Split(x) {axis=0} name="split"
	//   v3 = Add(a, b)
	//   return v3
	// }
}
