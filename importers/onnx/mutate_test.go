package onnx_test

import (
	"math/rand/v2"
	"strings"
	"testing"

	. "github.com/remat-compile/remat/internal/onnxtest"

	exporter "github.com/remat-compile/remat/exporters/onnx"
	onnx "github.com/remat-compile/remat/importers/onnx"
	"github.com/remat-compile/remat/internal/onnxpb"
	"github.com/remat-compile/remat/ir"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// TestSemanticMutations complements FuzzImport, whose byte-level mutations
// rarely produce well-formed protobuf: it changes valid models field by
// field (names swapped, dims negated, fields cleared, values repeated) with
// a fixed seed, and checks that Import either reports an input error or
// returns a graph that verifies and round-trips. An "internal" error is an
// importer bug.
func TestSemanticMutations(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	bases := []*onnxpb.ModelProto{MLP(), IfModel(), chain(8, true)}
	pool := []string{"x", "y", "a", "c", "k", "w", "b", "h", "", "t3", "im", "ti", "ai.onnx", "com.x"}
	iters := 3000
	if testing.Short() {
		iters = 500
	}
	accepted := 0
	for i := range iters {
		m := proto.Clone(bases[i%len(bases)]).(*onnxpb.ModelProto)
		for range 1 + rng.IntN(6) {
			mutate(m.ProtoReflect(), rng, pool)
		}
		data, err := proto.Marshal(m)
		if err != nil {
			continue
		}
		g, err := onnx.Import(data, onnx.Options{MaxSparseBytes: 1 << 20})
		if err != nil {
			if strings.Contains(err.Error(), "internal") {
				t.Fatalf("iteration %d: %v\nmodel: %v", i, err, m)
			}
			continue
		}
		accepted++
		if err := ir.Verify(g); err != nil {
			t.Fatalf("iteration %d: accepted graph fails Verify: %v", i, err)
		}
		out, err := exporter.Export(g, exporter.Options{})
		if err != nil {
			t.Fatalf("iteration %d: Export: %v", i, err)
		}
		if _, err := onnx.Import(out, onnx.Options{}); err != nil {
			t.Fatalf("iteration %d: re-import: %v", i, err)
		}
	}
	if accepted == 0 {
		t.Errorf("no mutated model was accepted; the mutations are too destructive to test round trips")
	}
}

// mutate changes one randomly chosen field somewhere in m.
func mutate(m protoreflect.Message, rng *rand.Rand, pool []string) {
	// Collect the set fields of m and of its sub-messages, then change one.
	type site struct {
		m  protoreflect.Message
		fd protoreflect.FieldDescriptor
	}
	var sites []site
	var walk func(m protoreflect.Message)
	walk = func(m protoreflect.Message) {
		fields := m.Descriptor().Fields()
		for i := 0; i < fields.Len(); i++ {
			fd := fields.Get(i)
			sites = append(sites, site{m, fd})
			if !m.Has(fd) || fd.Message() == nil {
				continue
			}
			if fd.IsList() {
				l := m.Get(fd).List()
				for j := 0; j < l.Len(); j++ {
					walk(l.Get(j).Message())
				}
			} else if !fd.IsMap() {
				walk(m.Get(fd).Message())
			}
		}
	}
	walk(m)
	s := sites[rng.IntN(len(sites))]
	fd := s.fd
	if rng.IntN(4) == 0 {
		s.m.Clear(fd)
		return
	}
	scalar := func() protoreflect.Value {
		switch fd.Kind() {
		case protoreflect.StringKind:
			return protoreflect.ValueOfString(pool[rng.IntN(len(pool))])
		case protoreflect.BytesKind:
			return protoreflect.ValueOfBytes([]byte(pool[rng.IntN(len(pool))]))
		case protoreflect.Int64Kind:
			return protoreflect.ValueOfInt64([]int64{-1, 0, 1, 3, 1 << 40}[rng.IntN(5)])
		case protoreflect.Int32Kind:
			return protoreflect.ValueOfInt32([]int32{-1, 0, 1, 7, 16, 22, 24}[rng.IntN(7)])
		case protoreflect.Uint64Kind:
			return protoreflect.ValueOfUint64(uint64(rng.IntN(3)))
		case protoreflect.FloatKind:
			return protoreflect.ValueOfFloat32(1.5)
		case protoreflect.DoubleKind:
			return protoreflect.ValueOfFloat64(2.5)
		case protoreflect.EnumKind:
			vals := fd.Enum().Values()
			return protoreflect.ValueOfEnum(vals.Get(rng.IntN(vals.Len())).Number())
		case protoreflect.BoolKind:
			return protoreflect.ValueOfBool(true)
		}
		return protoreflect.Value{}
	}
	switch {
	case fd.IsMap():
	case fd.IsList() && fd.Message() != nil:
		l := s.m.Mutable(fd).List()
		if l.Len() > 0 && rng.IntN(2) == 0 {
			l.Append(protoreflect.ValueOfMessage(proto.Clone(l.Get(rng.IntN(l.Len())).Message().Interface()).ProtoReflect()))
		} else if l.Len() > 0 {
			l.Truncate(l.Len() - 1)
		}
	case fd.IsList():
		l := s.m.Mutable(fd).List()
		if v := scalar(); v.IsValid() {
			if l.Len() > 0 && rng.IntN(2) == 0 {
				l.Set(rng.IntN(l.Len()), v)
			} else {
				l.Append(v)
			}
		}
	case fd.Message() != nil:
		if !s.m.Has(fd) {
			s.m.Mutable(fd)
		}
	default:
		if v := scalar(); v.IsValid() {
			s.m.Set(fd, v)
		}
	}
}
