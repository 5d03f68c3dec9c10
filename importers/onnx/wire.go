package onnx

import (
	"fmt"
	"slices"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// wireError is a field protobuf could not decode as its schema says.
type wireError struct {
	path []string // field names, innermost first
	msg  string
}

func (e *wireError) Error() string {
	p := slices.Clone(e.path)
	slices.Reverse(p)
	if len(p) == 0 {
		return e.msg
	}
	return strings.Join(p, ".") + ": " + e.msg
}

// checkWire finds the first field of m, at any depth, that carries a known
// field number with the wrong wire type or an enum value the schema does not
// define. protobuf-go keeps such fields as unknown fields rather than
// failing; for a model they mean corruption, so Import reports them.
func checkWire(m protoreflect.Message) *wireError {
	if u := m.GetUnknown(); len(u) > 0 {
		fields := m.Descriptor().Fields()
		for len(u) > 0 {
			num, typ, n := protowire.ConsumeTag(u)
			if n < 0 {
				return &wireError{msg: "malformed unknown field in " + string(m.Descriptor().Name())}
			}
			k := protowire.ConsumeFieldValue(num, typ, u[n:])
			if k < 0 {
				return &wireError{msg: "malformed unknown field in " + string(m.Descriptor().Name())}
			}
			if fd := fields.ByNumber(num); fd != nil {
				want := wireType(fd)
				msg := fmt.Sprintf("field %d has wire type %s, the schema says %s", num, wireName(typ), wireName(want))
				if typ == want || typ == protowire.BytesType && fd.IsList() {
					msg = fmt.Sprintf("field %d holds a value its enum does not define", num)
				}
				return &wireError{path: []string{string(fd.Name())}, msg: msg}
			}
			u = u[n+k:]
		}
	}
	var err *wireError
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fd.Message() == nil || fd.IsMap() {
			return true
		}
		if fd.IsList() {
			l := v.List()
			for i := 0; i < l.Len(); i++ {
				if err = checkWire(l.Get(i).Message()); err != nil {
					err.path = append(err.path, fmt.Sprintf("%s[%d]", fd.Name(), i))
					return false
				}
			}
			return true
		}
		if err = checkWire(v.Message()); err != nil {
			err.path = append(err.path, string(fd.Name()))
			return false
		}
		return true
	})
	return err
}

func wireType(fd protoreflect.FieldDescriptor) protowire.Type {
	switch fd.Kind() {
	case protoreflect.MessageKind, protoreflect.BytesKind, protoreflect.StringKind:
		return protowire.BytesType
	case protoreflect.GroupKind:
		return protowire.StartGroupType
	case protoreflect.FloatKind, protoreflect.Fixed32Kind, protoreflect.Sfixed32Kind:
		return protowire.Fixed32Type
	case protoreflect.DoubleKind, protoreflect.Fixed64Kind, protoreflect.Sfixed64Kind:
		return protowire.Fixed64Type
	}
	return protowire.VarintType
}

func wireName(t protowire.Type) string {
	switch t {
	case protowire.VarintType:
		return "varint"
	case protowire.Fixed32Type:
		return "fixed32"
	case protowire.Fixed64Type:
		return "fixed64"
	case protowire.BytesType:
		return "length-delimited"
	case protowire.StartGroupType, protowire.EndGroupType:
		return "group"
	}
	return fmt.Sprintf("type %d", t)
}
