package tfjs

import (
	"bytes"
	"fmt"
	"math"
	"reflect"
	"testing"

	"github.com/remat-compile/remat/internal/ort"
)

// TestSplitMix64 checks the generator against the published sequence for
// seed 1234567 (the reference test vector of SplitMix64).
func TestSplitMix64(t *testing.T) {
	want := []uint64{6457827717110365317, 3203168211198807973, 9817491932198370423, 4593380528125082431, 16408922859458223821}
	s := splitMix64(1234567)
	for i, w := range want {
		if got := s.next(); got != w {
			t.Fatalf("output %d: %d, want %d", i, got, w)
		}
	}
}

func TestSeededInputs(t *testing.T) {
	specs := []InputSpec{
		{Name: "image", DType: Float32, Shape: []int64{1, 8, 8, 3}},
		{Name: "ids", DType: Int32, Shape: []int64{2, 5}},
		{Name: "mask", DType: Bool, Shape: []int64{7}},
		{Name: "s", DType: Float32, Shape: []int64{}},
	}
	a, err := SeededInputs(specs, 42)
	if err != nil {
		t.Fatal(err)
	}
	b, err := SeededInputs(specs, 42)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Error("two calls with the same seed differ")
	}
	c, err := SeededInputs(specs, 43)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(a["image"].Data, c["image"].Data) {
		t.Error("seeds 42 and 43 give the same image")
	}
	// An input's values depend on its name and the seed only.
	alone, err := SeededInputs(specs[1:2], 42)
	if err != nil {
		t.Fatal(err)
	}
	if !Equal(alone["ids"], a["ids"]) {
		t.Error("ids depends on the other inputs")
	}
	for _, s := range specs {
		tn := a[s.Name]
		if err := tn.Check(); err != nil {
			t.Errorf("%s: %v", s.Name, err)
		}
		// The same bytes as package ort's generator (ORT names float32 "float").
		ortType := map[DType]string{Float32: "float", Int32: "int32", Bool: "bool"}[s.DType]
		want, err := ort.RandomTensor(ortType, s.Shape, nameSeed(42, s.Name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(tn.Data, want.Data) {
			t.Errorf("%s: differs from ort.RandomTensor", s.Name)
		}
	}
	for i, v := range a["image"].Float32s() {
		if v < -1 || v >= 1 || math.IsNaN(float64(v)) {
			t.Fatalf("image[%d] = %v, outside [-1, 1)", i, v)
		}
	}
	for i := 0; i < len(a["ids"].Data); i += 4 {
		if v := a["ids"].Data[i]; v > 3 || a["ids"].Data[i+1]|a["ids"].Data[i+2]|a["ids"].Data[i+3] != 0 {
			t.Fatalf("ids element %d is outside [0, 4)", i/4)
		}
	}
	for _, v := range a["mask"].Data {
		if v > 1 {
			t.Fatalf("mask holds %d", v)
		}
	}
	for _, bad := range [][]InputSpec{
		{{Name: "x", DType: "float64", Shape: []int64{1}}},
		{{Name: "x", DType: Float32, Shape: []int64{-1}}},
		{{Name: "x", DType: Float32}, {Name: "x", DType: Int32}},
		{{Name: "x", DType: Float32, Shape: []int64{1 << 20, 1 << 20}}},
	} {
		if _, err := SeededInputs(bad, 1); err == nil {
			t.Errorf("SeededInputs(%v) gave no error", bad)
		}
	}
}

func TestParseInputSpecs(t *testing.T) {
	got, err := ParseInputSpecs("input:1x192x192x3:int32  input_1:1x256x256x3 flag:scalar:bool")
	if err != nil {
		t.Fatal(err)
	}
	want := []InputSpec{
		{Name: "input", DType: Int32, Shape: []int64{1, 192, 192, 3}},
		{Name: "input_1", DType: Float32, Shape: []int64{1, 256, 256, 3}},
		{Name: "flag", DType: Bool, Shape: []int64{}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
	for _, bad := range []string{"x", "x:", ":1x2", "x:1xa", "x:1x-2", "x:1:float64", "x:1:int32:more"} {
		if _, err := ParseInputSpecs(bad); err == nil {
			t.Errorf("ParseInputSpecs(%q) gave no error", bad)
		} else if !bytes.Contains([]byte(err.Error()), []byte(fmt.Sprintf("%q", bad))) {
			t.Errorf("ParseInputSpecs(%q): error %v does not quote the spec", bad, err)
		}
	}
}
