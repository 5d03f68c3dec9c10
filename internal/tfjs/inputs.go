package tfjs

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"
	"strconv"
	"strings"
)

// InputSpec describes one model input to generate: its name, type and
// shape.
type InputSpec struct {
	Name  string
	DType DType
	Shape []int64
}

// ParseInputSpecs parses the input specifications of the real-model
// manifests (the inputs column of MANIFEST-tf.tsv): space-separated items
// NAME:DIMS[:DTYPE], DIMS x-separated (1x256x256x3) or "scalar", DTYPE
// float32 (the default), int32 or bool.
func ParseInputSpecs(s string) ([]InputSpec, error) {
	var specs []InputSpec
	for _, item := range strings.Fields(s) {
		parts := strings.Split(item, ":")
		if len(parts) < 2 || len(parts) > 3 || parts[0] == "" {
			return nil, fmt.Errorf("input spec %q: want NAME:DIMS[:DTYPE]", item)
		}
		spec := InputSpec{Name: parts[0], DType: Float32, Shape: []int64{}}
		if parts[1] != "scalar" {
			for _, d := range strings.Split(parts[1], "x") {
				n, err := strconv.ParseInt(d, 10, 64)
				if err != nil || n < 0 {
					return nil, fmt.Errorf("input spec %q: dimension %q is not a non-negative integer", item, d)
				}
				spec.Shape = append(spec.Shape, n)
			}
		}
		if len(parts) == 3 {
			spec.DType = DType(parts[2])
			if spec.DType.Size() == 0 {
				return nil, fmt.Errorf("input spec %q: dtype %q is not supported (want float32, int32 or bool)", item, parts[2])
			}
		}
		specs = append(specs, spec)
	}
	return specs, nil
}

// SeededInputs returns one tensor per spec, filled deterministically from
// seed and the input's name (an input's values do not depend on the other
// inputs), the same on every machine:
//
//   - float32: uniform in [-1, 1) on a grid of 2^-23;
//   - int32: uniform in [0, 4), small enough to be valid as an index, an
//     axis or a count in most places;
//   - bool: 0 or 1.
//
// The generator is SplitMix64 (Steele, Lea and Flood, 2014) with the same
// element mapping and per-name seeding as package ort's RandomTensor and
// RandomInputs, so that a graph built for both runtimes gets the same
// values in each. Feed the same map to an original and its rewrite to
// compare them bitwise.
func SeededInputs(specs []InputSpec, seed uint64) (map[string]Tensor, error) {
	out := make(map[string]Tensor, len(specs))
	for _, s := range specs {
		if _, dup := out[s.Name]; dup {
			return nil, fmt.Errorf("input %q is given twice", s.Name)
		}
		size := s.DType.Size()
		if size == 0 {
			return nil, fmt.Errorf("input %q: dtype %q is not supported (want float32, int32 or bool)", s.Name, s.DType)
		}
		n, err := checkShape(s.Shape)
		if err != nil {
			return nil, fmt.Errorf("input %q: %v", s.Name, err)
		}
		data := make([]byte, int(n)*size)
		rng := splitMix64(nameSeed(seed, s.Name))
		for i := 0; i < int(n); i++ {
			u := rng.next()
			switch s.DType {
			case Float32:
				k := int64(u >> 40) // 24 random bits
				binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(float32(k-1<<23)/(1<<23)))
			case Int32:
				binary.LittleEndian.PutUint32(data[4*i:], uint32(u>>62))
			case Bool:
				data[i] = byte(u >> 63)
			}
		}
		out[s.Name] = Tensor{DType: s.DType, Shape: append([]int64{}, s.Shape...), Data: data}
	}
	return out, nil
}

// nameSeed derives an input's seed from the run's seed and its name.
func nameSeed(seed uint64, name string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	r := splitMix64(seed ^ h.Sum64())
	return r.next()
}

// splitMix64 is the state of a SplitMix64 generator.
type splitMix64 uint64

func (s *splitMix64) next() uint64 {
	*s += 0x9e3779b97f4a7c15
	z := uint64(*s)
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}
