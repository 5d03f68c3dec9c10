package lns_test

import (
	"context"
	"testing"

	"github.com/remat-compile/remat/internal/zoo"
	"github.com/remat-compile/remat/passes"
	"github.com/remat-compile/remat/passes/autodiff"
	"github.com/remat-compile/remat/passes/remat"
	"github.com/remat-compile/remat/passes/shapes"
	"github.com/remat-compile/remat/profiles"
)

// zooTraining builds the training graph (loss "sum") of every zoo model in
// its small configuration, lowered with the v100-16gb profile as
// remat-compile bench -train does, and returns those of at most maxNodes
// nodes by name.
func zooTraining(t testing.TB, maxNodes int) ([]string, []*remat.Problem) {
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
		g, err := m.Build(m.Small)
		if err != nil {
			t.Fatalf("zoo %s: %v", m.Name, err)
		}
		ctx := context.Background()
		pl := []*passes.Pass{shapes.NewPass(shapes.Options{RequireStatic: true}), autodiff.NewPass(autodiff.Options{Loss: loss})}
		if _, err := passes.Run(ctx, g, pl, passes.Options{File: "zoo:" + m.Name}); err != nil {
			continue // no training graph (LSTM has no gradient rule)
		}
		p, _, _, err := remat.LowerCosted(g, prof, remat.LowerOptions{})
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
