package peerbench

import "github.com/remat-compile/remat/passes/remat"

// RowPlan is the checked plan a row keeps for the stage bound.
func RowPlan(r Row) *remat.Plan { return r.plan }

// WithPlan returns r keeping plan.
func WithPlan(r Row, plan *remat.Plan) Row {
	r.plan = plan
	return r
}

// Cheapest is the plan of rows that Run gives checkmate.StageBound.
var Cheapest = cheapest
