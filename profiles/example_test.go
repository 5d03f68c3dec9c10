package profiles_test

import (
	"fmt"

	"github.com/remat-compile/remat/ir/irtext"
	"github.com/remat-compile/remat/profiles"
)

func ExampleProfile_Cost() {
	g, err := irtext.Parse("example.ir", `graph g {
  input x:f32[1,64,56,56]
  param w = f32[64,64,3,3]{0, ...}
  y:f32[1,64,56,56] = Conv(x, w) {kernel_shape=[3,3], pads=[1,1,1,1], strides=[1,1]} name="conv"
  z:f32[1,64,56,56] = Relu(y) name="relu"
  return z
}`)
	if err != nil {
		fmt.Println(err)
		return
	}
	p, err := profiles.Load("v100-16gb")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("budget %d bytes\n", p.MemoryBytes())
	for _, n := range g.Nodes {
		c, err := p.Cost(n)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%s: %.1f µs, %.0f FLOPs, %d bytes, %s-bound, from the %s\n",
			n.Name, c.Seconds*1e6, c.FLOPs, c.Bytes(), c.Bound, c.Source)
	}
	// Output:
	// budget 17179869184 bytes
	// conv: 19.7 µs, 231211008 FLOPs, 1753088 bytes, compute-bound, from the datasheet
	// relu: 6.8 µs, 200704 FLOPs, 1605632 bytes, memory-bound, from the datasheet
}

func ExampleParse() {
	p, err := profiles.Parse([]byte(`format: remat-profile/v1
device:
  name: my-board
  memory_bytes: 2147483648
  memory_bandwidth_bytes_per_second: -8e9
  peak_flops:
    f32: 20e9
`), "my-board.yaml")
	fmt.Println(p, err)
	// Output:
	// <nil> my-board.yaml:5: device.memory_bandwidth_bytes_per_second: must be a positive finite number, got -8e+09
}
