package pbtest

import (
	"math"

	"google.golang.org/protobuf/encoding/protowire"
)

// Field is one protobuf field in wire format, tag included. Tests write
// messages field by field with the builders below, so that what they decode
// does not depend on the generated code they check.
type Field []byte

// Msg concatenates fields into a message.
func Msg(fields ...Field) []byte {
	var b []byte
	for _, f := range fields {
		b = append(b, f...)
	}
	return b
}

// Varint is field num holding v as a varint.
func Varint(num protowire.Number, v uint64) Field {
	b := protowire.AppendTag(nil, num, protowire.VarintType)
	return protowire.AppendVarint(b, v)
}

// Int is field num holding v as a varint (int32, int64, bool, enum).
func Int(num protowire.Number, v int64) Field { return Varint(num, uint64(v)) }

// Bytes is field num holding v as length-delimited bytes.
func Bytes(num protowire.Number, v []byte) Field {
	b := protowire.AppendTag(nil, num, protowire.BytesType)
	return protowire.AppendBytes(b, v)
}

// Str is field num holding the string s.
func Str(num protowire.Number, s string) Field { return Bytes(num, []byte(s)) }

// Sub is field num holding the message made of fields.
func Sub(num protowire.Number, fields ...Field) Field { return Bytes(num, Msg(fields...)) }

// Float is field num holding v as fixed32.
func Float(num protowire.Number, v float32) Field {
	b := protowire.AppendTag(nil, num, protowire.Fixed32Type)
	return protowire.AppendFixed32(b, math.Float32bits(v))
}

// PackedFloats is a packed repeated float field.
func PackedFloats(num protowire.Number, vs ...float32) Field {
	var p []byte
	for _, v := range vs {
		p = protowire.AppendFixed32(p, math.Float32bits(v))
	}
	return Bytes(num, p)
}

// PackedDoubles is a packed repeated double field.
func PackedDoubles(num protowire.Number, vs ...float64) Field {
	var p []byte
	for _, v := range vs {
		p = protowire.AppendFixed64(p, math.Float64bits(v))
	}
	return Bytes(num, p)
}

// PackedVarints is a packed repeated varint field.
func PackedVarints(num protowire.Number, vs ...uint64) Field {
	var p []byte
	for _, v := range vs {
		p = protowire.AppendVarint(p, v)
	}
	return Bytes(num, p)
}
