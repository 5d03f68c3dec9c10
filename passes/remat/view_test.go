package remat_test

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/remat-compile/remat/passes/remat"
)

var viewOptions = remat.LowerOptions{Reuse: true, Aliasing: true}

func TestLowerViews(t *testing.T) {
	p, _, err := remat.Lower(parse(t, viewText), unitCost, viewOptions)
	if err != nil {
		t.Fatal(err)
	}
	idx := func(name string) int32 { return int32(slices.Index(p.Names, name)) }
	none := remat.Part{Node: -1, Index: -1}
	want := map[string]remat.Part{
		"xview":  remat.OutsideView, // of the graph input
		"bias":   remat.OutsideView, // of a parameter
		"flat":   {Node: idx("conv1")},
		"unflat": {Node: idx("flat")},
		"late":   {Node: idx("conv2")},
		"id":     {Node: idx("conv3")}, // a graph output: Check gives its last instance a buffer
	}
	for i, name := range p.Names {
		w, ok := want[name]
		if !ok {
			w = none
		}
		if p.View[i] != w {
			t.Errorf("View of %s = %v, want %v", name, p.View[i], w)
		}
	}
	// An in-place write over a view happens where nothing else holds the
	// buffer (the view's root has died): the planner counts the buffer's
	// holders, not the value's.
	if p.InPlace[idx("relu")] != (remat.Part{Node: idx("flat")}) {
		t.Errorf("relu writes in place over %v, want the view flat", p.InPlace[idx("relu")])
	}

	// Without Reuse there are no views (the planner's model has them).
	q, _, err := remat.Lower(parse(t, viewText), unitCost, remat.LowerOptions{Aliasing: true})
	if err != nil {
		t.Fatal(err)
	}
	if q.View != nil {
		t.Errorf("views lowered without Reuse: %v", q.View)
	}
}

// TestViewRelaxations: on random plans, Relaxed measures at most the
// problem at every step, and Unviewed's plans are legal there; on
// checkpoint-all, where no viewed part is freed under a view, Unviewed
// measures exactly the problem.
func TestViewRelaxations(t *testing.T) {
	for _, src := range []string{viewText, segText} {
		for _, o := range []remat.LowerOptions{viewOptions, {Reuse: true, Aliasing: true, Arena: true, Workspace: testWorkspace}} {
			g := parse(t, src)
			p, _, err := remat.Lower(g, unitCost, o)
			if err != nil {
				t.Fatal(err)
			}
			u := p.Unviewed()
			if u == p || u.View != nil {
				t.Fatalf("%s: Unviewed keeps the views", g.Name)
			}
			if err := u.Validate(); err != nil {
				t.Fatalf("%s: Unviewed: %v", g.Name, err)
			}
			r := rand.New(rand.NewPCG(3, 4))
			for k := range 40 {
				plan, err := remat.ScheduleStages(u, randomStages(u, r, float64(k%4)/6))
				if err != nil {
					t.Fatal(err)
				}
				exact, err := remat.Evaluate(p, plan)
				if err != nil {
					t.Fatalf("%s plan %d: Unviewed's plan fails on the problem: %v", g.Name, k, err)
				}
				relaxed, err := remat.Evaluate(p.Relaxed(), plan)
				if err != nil {
					t.Fatal(err)
				}
				for s := range exact.During {
					if relaxed.During[s] > exact.During[s] {
						t.Fatalf("%s plan %d step %d: Relaxed %d > problem %d", g.Name, k, s, relaxed.During[s], exact.During[s])
					}
				}
				if k > 0 {
					continue
				}
				own, err := remat.Evaluate(u, plan)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(own.During, exact.During) {
					t.Errorf("%s, %+v, checkpoint-all: Unviewed %v, problem %v", g.Name, o, own.During, exact.During)
				}
			}
		}
	}
}

func TestValidateViews(t *testing.T) {
	base, _, err := remat.Lower(parse(t, viewText), unitCost, viewOptions)
	if err != nil {
		t.Fatal(err)
	}
	idx := func(name string) int32 { return int32(slices.Index(base.Names, name)) }
	for _, tt := range []struct {
		name, want string
		edit       func(p *remat.Problem)
	}{
		{"no reuse", "View is set without Reuse", func(p *remat.Problem) { p.Reuse, p.InPlace = nil, nil }},
		{"length", "View has", func(p *remat.Problem) { p.View = p.View[:1] }},
		{"not read", "which node", func(p *remat.Problem) { p.View[idx("late")] = remat.Part{Node: idx("conv1")} }},
		{"bytes", "of other bytes", func(p *remat.Problem) {
			p.Bytes[idx("late")] += 4
			p.Reuse[idx("late")][0] = -1
		}},
		{"both", "both a view and an in-place write", func(p *remat.Problem) { p.InPlace[idx("flat")] = remat.Part{Node: idx("conv1")} }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := *base
			p.View = slices.Clone(base.View)
			p.InPlace = slices.Clone(base.InPlace)
			p.Bytes = slices.Clone(base.Bytes)
			p.Reuse = make([][]int32, len(base.Reuse))
			for i := range base.Reuse {
				p.Reuse[i] = slices.Clone(base.Reuse[i])
			}
			tt.edit(&p)
			err := p.Validate()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Validate = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}
