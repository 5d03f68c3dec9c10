package peerbench

// Peer is one graph of MOCCASIN's Table 3 as its repository publishes it.
type Peer struct {
	// Key is the short name used on command lines: G1–G4, CM1, CM2.
	Key string
	// Label is the row's name in Table 3.
	Label string
	// File is the file name in MOCCASIN's data/ directory.
	File string
	// Nodes and Edges are Table 3's (n, m).
	Nodes, Edges int
	// NoRematPeak is the peak of the input order in bytes as the README
	// of ../shared/benchmarks/moccasin gives it (Table 3's M at 90 % ÷
	// 0.9); 0 for the Checkmate graphs, whose Table 3 budgets are given
	// only to three digits in GB (GiB: 11.3 and 31.9 at 90 %).
	NoRematPeak int64
	// Rows are the published results, one per budget multiplier.
	Rows []Published
}

// Published is one row of MOCCASIN's Table 3 (Bartan et al., ICML 2023,
// Appendix A.1, "Extended version of Table 2"): MOCCASIN's CP-SAT on 16
// cores with a 30–60 minute limit, and Checkmate's MILP on Gurobi. A
// result the table leaves out ("-": none found within the limit) has
// Found false.
type Published struct {
	// Multiplier is the budget as a fraction of the input order's peak.
	Multiplier float64
	// Budget is Table 3's M as printed ("41,687", "11.3 GB").
	Budget string
	// Moccasin and Checkmate are the two solvers' results.
	Moccasin, Checkmate Result
}

// Result is one solver's published result.
type Result struct {
	Found bool
	// TDI is the total duration increase over the no-remat schedule, in
	// percent.
	TDI float64
	// Peak is the plan's peak memory as printed.
	Peak string
	// Seconds is the time to the solution reported.
	Seconds float64
}

// Table3 lists the six graphs of MOCCASIN's Table 3 that its repository
// publishes (random layered G1–G4 and Checkmate's CM 1 and CM 2), with
// the published numbers, in the table's order. The numbers are copied
// from the paper (seed 002 of ../shared/seeds, Table 3); the files and no-
// remat peaks from ../shared/benchmarks/moccasin/README.md.
var Table3 = []Peer{
	{Key: "G1", Label: "RL G1", File: "random_layered_n100_w0.27_nlv0.75_ed0.2_scd0.14.json", Nodes: 100, Edges: 236, NoRematPeak: 46319,
		Rows: []Published{
			{0.9, "41,687", Result{true, 0.8, "40,820", 9.3}, Result{true, 0.8, "41,360", 18.5}},
			{0.8, "37,055", Result{true, 2.3, "36,810", 9.5}, Result{true, 2.3, "36,830", 22.7}},
		}},
	{Key: "G2", Label: "RL G2", File: "random_layered_n250_w0.43_nlv0.75_ed0.2_scd0.14.json", Nodes: 250, Edges: 944, NoRematPeak: 146840,
		Rows: []Published{
			{0.9, "132,156", Result{true, 0.9, "131,831", 55.0}, Result{true, 0.9, "132,130", 685.1}},
			{0.8, "117,472", Result{true, 4.9, "117,400", 639.5}, Result{}},
		}},
	{Key: "G3", Label: "RL G3", File: "random_layered_n500_w0.36_nlv0.75_ed0.2_scd0.14.json", Nodes: 500, Edges: 2461, NoRematPeak: 284439,
		Rows: []Published{
			{0.9, "255,995", Result{true, 0.7, "255,959", 1803.3}, Result{}},
			{0.8, "227,551", Result{true, 3.4, "227,429", 1804.8}, Result{}},
		}},
	{Key: "G4", Label: "RL G4", File: "random_layered_n1000_w0.31_nlv0.75_ed0.2_scd0.14.json", Nodes: 1000, Edges: 5875, NoRematPeak: 608619,
		Rows: []Published{
			{0.9, "547,757", Result{true, 0.7, "547,660", 3612.9}, Result{}},
			{0.8, "486,895", Result{true, 3.4, "486,880", 3611.8}, Result{}},
		}},
	{Key: "CM1", Label: "CM 1", File: "fcn_8_vgg (MLSys)_32_(416, 608, 3)_train_nx.json", Nodes: 73, Edges: 149,
		Rows: []Published{
			{0.9, "11.3 GB", Result{true, 0.0, "11.1 GB", 3.1}, Result{true, 0.0, "11.1 GB", 6.3}},
			{0.8, "10.0 GB", Result{true, 0.1, "9.9 GB", 3.1}, Result{true, 0.1, "9.65 GB", 5.6}},
		}},
	{Key: "CM2", Label: "CM 2", File: "ResNet50 (MLSys)_256_(224, 224, 3)_train_nx.json", Nodes: 353, Edges: 751,
		Rows: []Published{
			{0.9, "31.9 GB", Result{true, 0.2, "31.9 GB", 65.2}, Result{true, 0.1, "31.6 GB", 434.1}},
			{0.8, "28.4 GB", Result{true, 0.3, "28.4 GB", 69.3}, Result{true, 0.3, "28.3 GB", 485.3}},
		}},
}
