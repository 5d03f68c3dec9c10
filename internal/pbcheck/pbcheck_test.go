package pbcheck

import (
	"strings"
	"testing"

	"github.com/remat-compile/remat/internal/tfpb"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

func tag(num protowire.Number, typ protowire.Type) []byte { return protowire.AppendTag(nil, num, typ) }

func lenField(num protowire.Number, body []byte) []byte {
	return protowire.AppendBytes(tag(num, protowire.BytesType), body)
}

func TestCheck(t *testing.T) {
	// AttrValue.f (field 4) is a fixed32 float; written as a varint it is
	// kept as an unknown field, inside a map value of NodeDef.attr.
	badAttr := append(tag(4, protowire.VarintType), 7)
	entry := append(lenField(1, []byte("epsilon")), lenField(2, badAttr)...)
	node := append(lenField(1, []byte("n")), lenField(5, entry)...)
	graph := lenField(1, node)
	g := &tfpb.GraphDef{}
	if err := proto.Unmarshal(graph, g); err != nil {
		t.Fatal(err)
	}
	err := Check(g.ProtoReflect())
	want := `node[0].attr["epsilon"].f: field 4 has wire type varint, the schema says fixed32`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Check = %v, want %q", err, want)
	}

	// A field number the schema does not know is a newer field, not damage.
	ok := &tfpb.GraphDef{}
	if err := proto.Unmarshal(lenField(5, []byte("debug")), ok); err != nil {
		t.Fatal(err)
	}
	if err := Check(ok.ProtoReflect()); err != nil {
		t.Errorf("Check of an unknown field number = %v, want nil", err)
	}
}
