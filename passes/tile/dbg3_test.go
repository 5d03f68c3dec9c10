package tile

import (
	"testing"
	"fmt"
	"os"
	onnxexp "github.com/remat-compile/remat/exporters/onnx"
	"github.com/remat-compile/remat/internal/ort"
	"github.com/remat-compile/remat/passes/memory"
)

func TestDbg3(t *testing.T) {
	for _, cfg := range [][6]int64{{16,16,64,64,3,16},{16,16,128,128,3,16},{16,16,128,128,3,1},{32,32,160,160,3,32},{16,16,320,320,3,16},{96,96,112,112,3,96}, {48,48,160,160,5,48}, {3,16,640,640,3,1}} {
		cin, cout, h, w, k, grp := cfg[0], cfg[1], cfg[2], cfg[3], cfg[4], cfg[5]
		b := newGB(t, 3, 17)
		x := b.input(1, cin, h, w)
		y := b.conv(x, cout, k, 1, 1, [4]int64{k/2, k/2, k/2, k/2}, grp)
		b.g.AddOutput(y)
		data, _ := onnxexp.Export(b.g, onnxexp.Options{})
		os.WriteFile("/tmp/ws.onnx", data, 0o644)
		in, _ := ort.RandomInputs("/tmp/ws.onnx", 1, nil)
		res, err := ort.Run("/tmp/ws.onnx", in, ort.MeasureOptions("disabled"))
		if err != nil { t.Fatal(err) }
		e := res.Profile.Nodes[0]
		base := e.MemBytesInUse - e.MemInUseDelta
		outB, _ := y.Type.Bytes()
		fmt.Printf("%v: measured workspace %d (peak %d, base %d, out %d); model %d\n", cfg, e.MemInUsePeak-e.MemBytesInUse, e.MemInUsePeak, base, outB, memory.ORTWorkspace(y.Def))
	}
}
