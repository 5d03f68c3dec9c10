package lns

import (
	"context"
	"slices"
	"testing"

	"github.com/remat-compile/remat/internal/zoo"
	"github.com/remat-compile/remat/passes"
	"github.com/remat-compile/remat/passes/autodiff"
	"github.com/remat-compile/remat/passes/remat"
	"github.com/remat-compile/remat/passes/shapes"
	"github.com/remat-compile/remat/profiles"
)

// ZooTraining builds the training graph (loss "sum") of every zoo model
// in its small configuration (of the models named in only, when given),
// lowered with the v100-16gb profile and lo as remat-compile bench -train
// does (lo zero), and returns those of at most maxNodes nodes by name. It
// is exported for the external tests.
func ZooTraining(t testing.TB, maxNodes int, lo remat.LowerOptions, only ...string) ([]string, []*remat.Problem) {
	t.Helper()
	prof, err := profiles.Load("v100-16gb")
	if err != nil {
		t.Fatal(err)
	}
	loss, err := autodiff.ParseLoss("sum")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	var probs []*remat.Problem
	for _, m := range zoo.Models() {
		if len(only) > 0 && !slices.Contains(only, m.Name) {
			continue
		}
		g, err := m.Build(m.Small)
		if err != nil {
			t.Fatalf("zoo %s: %v", m.Name, err)
		}
		ctx := context.Background()
		pl := []*passes.Pass{shapes.NewPass(shapes.Options{RequireStatic: true}), autodiff.NewPass(autodiff.Options{Loss: loss})}
		if _, err := passes.Run(ctx, g, pl, passes.Options{File: "zoo:" + m.Name}); err != nil {
			continue // no training graph (LSTM has no gradient rule)
		}
		p, _, _, err := remat.LowerCosted(g, prof, lo)
		if err != nil {
			t.Fatalf("zoo %s: %v", m.Name, err)
		}
		if p.N() <= maxNodes {
			names = append(names, m.Name)
			probs = append(probs, p)
		}
	}
	return names, probs
}
