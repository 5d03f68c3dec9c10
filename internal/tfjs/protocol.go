package tfjs

import (
	"encoding/base64"
	"fmt"
	"time"
)

// The driver's protocol: request goes to driver.js on stdin, response comes
// back on file descriptor 3. Field names match driver.js.

type request struct {
	Dir  string       `json:"dir"`
	Jobs []jobRequest `json:"jobs"`
}

type jobRequest struct {
	Model   string                `json:"model"`
	Backend Backend               `json:"backend"`
	Inputs  map[string]tensorJSON `json:"inputs"`
	Outputs []string              `json:"outputs"`
	Runs    int                   `json:"runs"`
	Warmup  int                   `json:"warmup"`
	Profile bool                  `json:"profile"`
	Order   bool                  `json:"order"`
	// ShapesOnly leaves the outputs' data and the digests out.
	ShapesOnly bool `json:"shapesOnly"`
}

type tensorJSON struct {
	Name  string  `json:"name,omitempty"`
	DType DType   `json:"dtype"`
	Shape []int64 `json:"shape"`
	Data  string  `json:"data"` // base64
}

type response struct {
	Error      string      `json:"error"`
	StartupMs  float64     `json:"startupMs"`
	TFJSLoadMs float64     `json:"tfjsLoadMs"`
	Version    string      `json:"version"`
	Results    []jobResult `json:"results"`
}

type jobResult struct {
	Error  string `json:"error"`
	Timing struct {
		BackendMs float64 `json:"backendMs"`
		LoadMs    float64 `json:"loadMs"`
	} `json:"timing"`
	Backend      Backend      `json:"backend"`
	OutputNames  []string     `json:"outputNames"`
	OrderedNodes []string     `json:"orderedNodes"`
	Async        bool         `json:"async"`
	Memory       *memoryJSON  `json:"memory"`
	Kernels      []kernelJSON `json:"kernels"`
	Nodes        []nodeJSON   `json:"nodes"`
	Digests      []string     `json:"digests"`
	RunMs        []float64    `json:"runMs"`
	Outputs      []tensorJSON `json:"outputs"`
}

type memoryJSON struct {
	BaselineBytes   int64 `json:"baselineBytes"`
	BaselineTensors int   `json:"baselineTensors"`
	PeakBytes       int64 `json:"peakBytes"`
	NewBytes        int64 `json:"newBytes"`
	NewTensors      int   `json:"newTensors"`
	Unreliable      bool  `json:"unreliable"`
}

type kernelJSON struct {
	Name         string    `json:"name"`
	BytesAdded   int64     `json:"bytesAdded"`
	TotalBytes   int64     `json:"totalBytes"`
	TensorsAdded int       `json:"tensorsAdded"`
	TotalTensors int       `json:"totalTensors"`
	OutputShapes [][]int64 `json:"outputShapes"`
	TimeMs       *float64  `json:"timeMs"`
}

type nodeJSON struct {
	Outputs          []*tensorInfoJSON `json:"outputs"`
	Name             string            `json:"name"`
	Op               string            `json:"op"`
	KernelsEnd       int               `json:"kernelsEnd"`
	BytesBeforeFree  int64             `json:"bytesBeforeFree"`
	BytesAfterFree   int64             `json:"bytesAfterFree"`
	TensorsAfterFree int               `json:"tensorsAfterFree"`
}

type tensorInfoJSON struct {
	DType DType   `json:"dtype"`
	Shape []int64 `json:"shape"`
}

func ms(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }

// result turns one job's response into a Result.
func (jr *jobResult) result(resp *response, shapesOnly bool) (*Result, error) {
	r := &Result{
		TFJSVersion:  resp.Version,
		Backend:      jr.Backend,
		Async:        jr.Async,
		OrderedNodes: jr.OrderedNodes,
		Digests:      jr.Digests,
		Timing: Timing{
			NodeStart: ms(resp.StartupMs),
			LoadTFJS:  ms(resp.TFJSLoadMs),
			Backend:   ms(jr.Timing.BackendMs),
			LoadModel: ms(jr.Timing.LoadMs),
		},
	}
	for _, v := range jr.RunMs {
		r.RunTimes = append(r.RunTimes, ms(v))
	}
	for _, o := range jr.Outputs {
		if shapesOnly {
			shape := o.Shape
			if shape == nil {
				shape = []int64{}
			}
			if _, err := checkShape(shape); err != nil {
				return nil, fmt.Errorf("output %s: %v", o.Name, err)
			}
			r.Outputs = append(r.Outputs, Output{Name: o.Name, Tensor: Tensor{DType: o.DType, Shape: shape}})
			continue
		}
		data, err := base64.StdEncoding.DecodeString(o.Data)
		if err != nil {
			return nil, fmt.Errorf("output %s: %v", o.Name, err)
		}
		t := Tensor{DType: o.DType, Shape: o.Shape, Data: data}
		if t.Shape == nil {
			t.Shape = []int64{}
		}
		if err := t.Check(); err != nil {
			return nil, fmt.Errorf("output %s: %v", o.Name, err)
		}
		r.Outputs = append(r.Outputs, Output{Name: o.Name, Tensor: t})
	}
	if m := jr.Memory; m != nil {
		r.Memory = &Memory{
			PeakBytes:        m.PeakBytes - m.BaselineBytes,
			BaselineBytes:    m.BaselineBytes,
			BaselineTensors:  m.BaselineTensors,
			ProfilePeakBytes: m.PeakBytes,
			NewBytes:         m.NewBytes,
			NewTensors:       m.NewTensors,
			Unreliable:       m.Unreliable,
		}
	}
	if len(jr.Kernels) > 0 {
		r.Kernels = make([]Kernel, len(jr.Kernels))
		for i, k := range jr.Kernels {
			r.Kernels[i] = Kernel{Name: k.Name, BytesAdded: k.BytesAdded, TotalBytes: k.TotalBytes,
				TensorsAdded: k.TensorsAdded, TotalTensors: k.TotalTensors, OutputShapes: k.OutputShapes}
			if k.TimeMs != nil {
				r.Kernels[i].Time, r.Kernels[i].HasTime = ms(*k.TimeMs), true
			}
		}
	}
	// A node's kernels are those recorded after the previous node's end up
	// to its own (kernelsEnd is -1 when the execution was not profiled).
	prev := 0
	for _, n := range jr.Nodes {
		e := Executed{Name: n.Name, Op: n.Op, BytesBeforeFree: n.BytesBeforeFree,
			BytesAfterFree: n.BytesAfterFree, TensorsAfterFree: n.TensorsAfterFree}
		for _, o := range n.Outputs {
			ti := TensorInfo{}
			if o != nil {
				ti = TensorInfo{DType: o.DType, Shape: o.Shape}
				if ti.Shape == nil {
					ti.Shape = []int64{}
				}
			}
			e.Outputs = append(e.Outputs, ti)
		}
		if n.KernelsEnd >= prev && n.KernelsEnd <= len(r.Kernels) {
			e.Kernels = [2]int{prev, n.KernelsEnd}
			for k := prev; k < n.KernelsEnd; k++ {
				r.Kernels[k].Node = n.Name
			}
			prev = n.KernelsEnd
		}
		r.Executed = append(r.Executed, e)
	}
	return r, nil
}
