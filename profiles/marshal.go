package profiles

import (
	"bytes"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/remat-compile/remat/ir"
)

// Marshal writes p in the profile file format. The output depends only on
// p's exported fields: fields in a fixed order, rates by element type,
// measured entries sorted by signature, numbers in their shortest exact
// form, so Parse(Marshal(p)) equals p and marshalling twice gives the same
// bytes. Comments of a parsed file are not kept. An invalid profile is an
// error, never a file.
func (p *Profile) Marshal() ([]byte, error) {
	if p == nil {
		return nil, ir.ErrorList{{Msg: "no profile"}}.Err()
	}
	q := *p
	q.lines, q.index = nil, nil
	if err := q.Validate(); err != nil {
		return nil, err
	}

	root := mapping()
	root.HeadComment = "remat-compile device profile (go doc github.com/remat-compile/remat/profiles)"
	add(root, "format", str(p.Format))

	d := &p.Device
	dev := mapping()
	add(dev, "name", str(d.Name))
	if d.Description != "" {
		add(dev, "description", str(d.Description))
	}
	add(dev, "memory_bytes", integer(d.MemoryBytes))
	add(dev, "memory_bandwidth_bytes_per_second", float(d.MemoryBandwidth))
	add(dev, "launch_overhead_seconds", float(d.LaunchOverhead))
	add(dev, "peak_flops", rates(d.PeakFLOPs))
	if len(d.PeakMatrixFLOPs) > 0 {
		add(dev, "peak_matrix_flops", rates(d.PeakMatrixFLOPs))
	}
	add(root, "device", dev)

	if f := p.Fitted; f != nil {
		fit := mapping()
		add(fit, "flops_per_second", float(f.FLOPsPerSecond))
		add(fit, "bytes_per_second", float(f.BytesPerSecond))
		add(fit, "overhead_seconds", float(f.OverheadSeconds))
		if f.Source != "" {
			add(fit, "source", str(f.Source))
		}
		add(root, "fitted", fit)
	}

	if len(p.Measured) > 0 {
		order := make([]int, len(p.Measured))
		keys := make([]string, len(p.Measured))
		for i := range p.Measured {
			order[i], keys[i] = i, p.Measured[i].key()
		}
		slices.SortFunc(order, func(a, b int) int { return strings.Compare(keys[a], keys[b]) })
		list := &yaml.Node{Kind: yaml.SequenceNode}
		for _, i := range order {
			m := &p.Measured[i]
			e := mapping()
			add(e, "op", str(m.Op))
			if d := normDomain(m.Domain); d != "" {
				add(e, "domain", str(d))
			}
			add(e, "attrs", str(m.Attrs))
			add(e, "dtype", str(m.DType.String()))
			add(e, "shapes", shapes(m.Shapes))
			add(e, "seconds", float(m.Seconds))
			add(e, "repeats", integer(int64(m.Repeats)))
			list.Content = append(list.Content, e)
		}
		add(root, "measured", list)
	}

	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{root}}); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func mapping() *yaml.Node { return &yaml.Node{Kind: yaml.MappingNode} }

func add(m *yaml.Node, key string, v *yaml.Node) {
	m.Content = append(m.Content, str(key), v)
}

func str(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }

func integer(i int64) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.FormatInt(i, 10)}
}

// float writes x in its shortest form that parses back to x exactly.
func float(x float64) *yaml.Node {
	s := strconv.FormatFloat(x, 'g', -1, 64)
	if mant, exp, ok := strings.Cut(s, "e"); ok {
		// 1.57e+13 → 1.57e13, 5e-06 → 5e-6: how people write them.
		if e, err := strconv.Atoi(exp); err == nil {
			s = mant + "e" + strconv.Itoa(e)
		}
	}
	tag := "!!float"
	if !strings.ContainsAny(s, ".eE") {
		tag = "!!int" // 900 rather than 900.0; a number field takes either
	}
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: s}
}

func rates(m map[ir.DType]float64) *yaml.Node {
	keys := make([]ir.DType, 0, len(m))
	for dt := range m {
		keys = append(keys, dt)
	}
	slices.Sort(keys)
	n := mapping()
	for _, dt := range keys {
		add(n, dt.String(), float(m[dt]))
	}
	return n
}

func shapes(s [][]int64) *yaml.Node {
	n := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
	for _, dims := range s {
		if dims == nil {
			n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"})
			continue
		}
		d := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
		for _, x := range dims {
			d.Content = append(d.Content, integer(x))
		}
		n.Content = append(n.Content, d)
	}
	return n
}
