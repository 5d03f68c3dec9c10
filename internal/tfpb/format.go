package tfpb

// Format is the file format of a TensorFlow graph, for the importer and
// the exporter (importers/graphdef, exporters/graphdef alias it).
type Format uint8

const (
	// FormatAuto lets the reader or writer decide: the importer from the
	// bytes, the exporter from the output path.
	FormatAuto Format = iota
	// FormatGraphDef is a binary GraphDef protobuf (a frozen graph, .pb).
	FormatGraphDef
	// FormatTFJS is a TensorFlow.js graph model: model.json (the GraphDef
	// in the proto3 JSON mapping and a weights manifest) and the binary
	// weight shards the manifest names.
	FormatTFJS
)

// String names the format for messages.
func (f Format) String() string {
	switch f {
	case FormatGraphDef:
		return "GraphDef"
	case FormatTFJS:
		return "TensorFlow.js graph model"
	}
	return "auto"
}
