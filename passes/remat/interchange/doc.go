// Package interchange reads rematerialization graphs that other tools
// publish into remat.Problem, and writes the schedules the solvers find in
// forms those tools read back.
//
// # Graphs
//
// Two families of input are read (Load picks by content, then by the
// file's extension):
//
//   - networkx node-link JSON (`directed`, `multigraph`, `graph`, `nodes`,
//     `links`), as MOCCASIN (Bartan et al. 2023) and Checkmate (Jain et
//     al. 2020) publish their benchmark graphs, in either attribute
//     convention:
//     MOCCASIN's random layered graphs (NodeLinkMoccasin) give each node
//     {name, out_cost, duration, param_cost}, each link {"0": source,
//     "1": target}, and the fixed input order as graph.order; Checkmate's
//     training graphs (NodeLinkCheckmate) give each node {id, name,
//     cost_cpu, cost_ram, backward} and each link {source, target}, and
//     no order, for which MOCCASIN takes networkx's topological_sort.
//     That order is reproduced exactly (NetworkxOrder): Kahn's algorithm
//     by generations, each generation in the order its nodes became
//     ready, the first one in the file's node order, children in the
//     order of their first link. A node's id is its `id` when every node
//     has one, else its `name` (MOCCASIN's layered graphs); ids are
//     integers or strings, as in Python. A graph marked undirected is an
//     error (one without `directed` is taken as directed), parallel links
//     count once, and links may sit under `links` or, as networkx 3.4
//     names them, `edges`.
//   - the text input of Kumar et al.'s (2019) public TWRemat tool
//     (TWRematText), as its Python front ends write it: a header
//     `p remat2`, an optional `memlimit BYTES`, and one line per node,
//     `node ID deps DEP... WEIGHT [target]`, where WEIGHT is `cpu C mem M`
//     (compute cost and output bytes), `effectful` (an op that must run
//     exactly once: variables, assignments, placeholders) or `pointer`
//     (an op whose output aliases its inputs: reshapes, tensor handles).
//     Node ids are integers, lines may come in any order, and `target`
//     marks the nodes the schedule must end with in memory.
//
// Units are the file's: durations and cpu costs become Problem.Seconds
// and byte counts Problem.Bytes as written (Checkmate's cost_cpu, for
// one, is not in seconds); overheads in percent do not depend on them.
//
// # Memory semantics
//
// The node-link files come without outputs or a memory model of their
// own; MOCCASIN's evaluation (its util.get_mem_from_schedule, the model
// of its §2 and App. A.3) holds at each step the running node's output
// and every earlier output that a later step still reads, frees every
// value after its last reader, frees the sinks at once (no graph outputs
// are held to the end), and adds no constant term. Options.Semantics
// makes the choice explicit: FreeSinks is that model (the default for
// node-link files), HoldSinks is Checkmate's and remat-compile's own
// (every sink a graph output held to the end, and MOCCASIN's param_cost,
// when given, the constant term ConstBytes), and TWRemat files by default
// hold their `target` nodes, as the tool's schedules end with them in
// memory. All three are liveness (remat.Check's model), so the peak and
// cost that remat.Check reports are those of the tool's own definition.
//
// TWRemat's weights map onto the Problem as follows: `cpu C mem M` is a
// recomputable node costing C with M bytes; `effectful` is a node that is
// not recomputable, costs nothing and holds no bytes; `pointer` is a
// recomputable node that costs nothing and holds no bytes of its own,
// but, since its output is a view of its inputs, every node that reads it
// also reads what it reads (through chains of pointers), so the viewed
// buffers stay resident while the view is used. (The TWRemat program's
// own parser is not at hand; these rules follow how its published front
// ends classify ops, and err on the side of more memory.) A node whose
// inputs come after it in the file is fine: the order is the file's when
// it is topological, else NetworkxOrder's.
//
// # Schedules
//
// MarshalScheduleJSON writes a checked plan as a versioned, documented
// JSON document (ScheduleJSON: the steps, computations and frees, with
// the memory of every computation, the peak and the cost), and
// MarshalTWRematSchedule in TWRemat's own output format, one `c ID`
// (compute) or `f ID` (free) line per step, which its front ends read
// back. Both pass the plan through remat.Check first, and the same
// problem and plan always give the same bytes.
package interchange
