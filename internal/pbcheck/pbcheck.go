// Package pbcheck finds the corruption that protobuf-go decodes without
// complaint: a known field carried with the wrong wire type, or a value of
// a closed (proto2) enum the schema does not define. protobuf-go keeps both
// as unknown fields; for a model file they mean damage, so the importers
// report them.
package pbcheck

import (
	"fmt"
	"slices"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Error is a field protobuf could not decode as its schema says.
type Error struct {
	path []string // field names, innermost first
	msg  string
}

// Error names the field by its path from the checked message
// ("graph.node[3].attribute[0]: field 2 has wire type varint, the schema
// says fixed32").
func (e *Error) Error() string {
	p := slices.Clone(e.path)
	slices.Reverse(p)
	if len(p) == 0 {
		return e.msg
	}
	return strings.Join(p, ".") + ": " + e.msg
}

// Check finds the first field of m, at any depth (map values included), that
// carries a known field number with the wrong wire type or an enum value the
// schema does not define, and returns it as an *Error; nil when there is
// none. Unknown field numbers are not errors: they are newer fields, kept.
func Check(m protoreflect.Message) error {
	if err := check(m); err != nil {
		return err
	}
	return nil
}

func check(m protoreflect.Message) *Error {
	if u := m.GetUnknown(); len(u) > 0 {
		fields := m.Descriptor().Fields()
		for len(u) > 0 {
			num, typ, n := protowire.ConsumeTag(u)
			if n < 0 {
				return &Error{msg: "malformed unknown field in " + string(m.Descriptor().Name())}
			}
			k := protowire.ConsumeFieldValue(num, typ, u[n:])
			if k < 0 {
				return &Error{msg: "malformed unknown field in " + string(m.Descriptor().Name())}
			}
			if fd := fields.ByNumber(num); fd != nil {
				want := wireType(fd)
				msg := fmt.Sprintf("field %d has wire type %s, the schema says %s", num, wireName(typ), wireName(want))
				if typ == want || typ == protowire.BytesType && fd.IsList() {
					msg = fmt.Sprintf("field %d holds a value its enum does not define", num)
				}
				return &Error{path: []string{string(fd.Name())}, msg: msg}
			}
			u = u[n+k:]
		}
	}
	var err *Error
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fd.IsMap() {
			if fd.MapValue().Message() == nil {
				return true
			}
			keys := make([]protoreflect.MapKey, 0, v.Map().Len())
			v.Map().Range(func(k protoreflect.MapKey, _ protoreflect.Value) bool {
				keys = append(keys, k)
				return true
			})
			// Report the same field whatever the map's iteration order.
			slices.SortFunc(keys, func(a, b protoreflect.MapKey) int { return strings.Compare(a.String(), b.String()) })
			for _, k := range keys {
				if err = check(v.Map().Get(k).Message()); err != nil {
					err.path = append(err.path, fmt.Sprintf("%s[%q]", fd.Name(), k.String()))
					return false
				}
			}
			return true
		}
		if fd.Message() == nil {
			return true
		}
		if fd.IsList() {
			l := v.List()
			for i := 0; i < l.Len(); i++ {
				if err = check(l.Get(i).Message()); err != nil {
					err.path = append(err.path, fmt.Sprintf("%s[%d]", fd.Name(), i))
					return false
				}
			}
			return true
		}
		if err = check(v.Message()); err != nil {
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
