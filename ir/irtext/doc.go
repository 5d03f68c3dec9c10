// Package irtext prints an ir.Graph as text and parses it back.
//
// The text form is line oriented, one statement a line, in the style of the
// Go compiler's SSA long form: each node defines its outputs, with their
// types, from its inputs.
//
//	# comments run to the end of the line
//	graph resnet doc="an example" {
//	  opset 17
//	  opset com.microsoft 1
//	  input x:f32[N,3,224,224]
//	  input c:bool[]
//	  input scale = f32[]{1}                # an input with a default: also a param
//	  param w1 = f32[64,3,7,7]{0, ...}      # a splat; the type is the tensor's
//	  param b1:f32[64] = f32[64]{0.5, ...}
//	  param q = f8e4m3fn[2] raw"387f"       # little-endian bytes, in hex
//	  param scale                           # the default's place among the params
//	  conv1_out:f32[N,64,112,112] = Conv(x, w1, b1) {strides=[2,2], pads=[3,3,3,3], auto_pad="NOTSET"} name="conv1"
//	  a, _, v7:f32[?] = Split(conv1_out) {axis=1, num_outputs=3}  # _: an absent output; v7: unnamed, ID 7
//	  y = com.microsoft.FusedConv(a, _, scale) {alpha=0.5}
//	  z:f32[*] = If(c) captures(a) {
//	    then_branch=graph then {
//	      t = Neg(a)
//	      return t
//	    },
//	    else_branch=graph else {
//	      return a
//	    },
//	  }
//	  tf.NoOp() after(conv1) name="gate"    # control inputs: run after conv1
//	  return y, z, v7
//	}
//
// # Grammar
//
// Newlines end statements in graph bodies and are insignificant inside
// (), [] and attribute or element braces.
//
//	file    = graph .
//	graph   = "graph" NAME [doc] "{" { stmt NEWLINE } "}" .
//	stmt    = "opset" [DOMAIN] INT
//	        | "input" decl [ "=" tensor ]          input; with "=", also a param
//	        | "param" decl "=" tensor
//	        | "param" NAME                         place of an input with a default
//	        | [ out { "," out } "=" ] op "(" [ arg { "," arg } ] ")"
//	          [ "captures" "(" NAME { "," NAME } ")" ] [ "after" "(" ref { "," ref } ")" ]
//	          [ attrs ] [ "name" "=" STRING ] [doc]
//	        | "return" [ NAME { "," NAME } ] .
//	out     = "_" | decl .
//	arg     = "_" | NAME .
//	ref     = NAME | INT .                         a node: its name, or its position in the graph
//	decl    = NAME [ ":" type ] [doc] .
//	doc     = "doc" "=" STRING .
//	op      = [ DOMAIN "." ] OP | STRING [ "." STRING ] .
//	type    = [ KIND "<" ] DTYPE "[" ( "*" | [ dim { "," dim } ] ) "]" [ ">" ] .
//	dim     = INT | "?" | IDENT | STRING .
//	attrs   = "{" [ attr { "," attr } [","] ] "}" .
//	attr    = ( IDENT | STRING ) "=" value [doc] .
//	value   = INT | FLOAT | STRING | tensor | "graph" NAME [doc] "{" … "}" | list | "undef" | "other" .
//	list    = [ "ints" | "floats" | "strings" | "tensors" | "graphs" ] "[" [ value { "," value } [","] ] "]" .
//	tensor  = DTYPE "[" [ INT { "," INT } ] "]" ( "{" [ elem { "," elem } [ "," "..." ] ] "}" | "raw" STRING )
//	          [ "name" "=" STRING ] [doc] .
//	FLOAT   = decimal with "." or exponent | "inf" | "-inf" | "nan" | "nan(" HEXBITS ")" .
//
// NAME is an identifier (a letter or _, then letters, digits, _ . / -), a
// Go-quoted string for any other name, or v<ID> for an unnamed value.
// Identifiers that are keywords (graph, input, param, opset, return, doc,
// name, captures, _) or look like v<ID> are quoted when they are names.
// KIND is seq, opt, map, sparse or opaque; DTYPE is a name of
// ir.DType.String (f32, bf16, i4, string, …). Strings use Go syntax and may
// hold any bytes.
//
// # What is printed
//
// Everything the IR models except Ext fields: names, docs of graphs, nodes,
// values, attributes and tensors, opsets, value types (left out when
// undefined, that is the zero TensorType), inputs, params and their order,
// nodes in order with absent optional inputs and outputs, attributes of
// every kind, subgraphs, implicit inputs, control inputs, outputs.
//
//   - A value's type is left out when it is the zero type; a param's when it
//     equals its tensor's type.
//   - A param's tensor name is left out when it equals the value's name.
//   - Tensors of f16, bf16, f32, f64, integer (i4 and u4 included), bool and
//     string type with at most 16 elements print their elements; larger ones
//     whose elements are all equal print as a splat, {0, ...}; the rest, and
//     every other element type, print raw"<hex>" (little-endian bytes, 4-bit
//     types packed low nibble first).
//   - Floats print as the shortest decimal that reads back exactly; float
//     attributes always with a '.' or exponent (1.0), so that they do not read
//     as ints. NaNs other than the canonical one print as nan(0x<bits>).
//   - Implicit inputs print as captures(...). When parsing, a node inside a
//     subgraph that reads a value of an enclosing graph that no owner lists
//     captures it (ir.Graph.Capture), so hand-written text may leave
//     captures out; graph outputs never capture.
//   - Control inputs (Node.Control, ordering edges without a value) print
//     as after(...): each node by its name when no other node of the
//     graph bears that name, else by its position in the graph's nodes
//     (0-based). Parse resolves names among the nodes before the node.
//   - In a tensor-valued attribute the first doc= after the tensor is the
//     tensor's doc; the attribute's own doc follows it.
//   - Node IDs are not printed. A named value's ID is not printed either;
//     an unnamed value's is its name, and Parse gives it that ID (up to
//     MaxUnnamedID).
//
// Parse is lenient where the printer is canonical: spacing, comments, a
// missing captures list, a list kind inferred from its elements, trailing
// commas, ints in a floats list; printing a parsed graph and parsing that
// again gives the same text.
package irtext
