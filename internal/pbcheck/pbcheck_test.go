package pbcheck

import (
	"strings"
	"testing"

	"github.com/remat-compile/remat/internal/pbtest"
	"github.com/remat-compile/remat/internal/tfpb"
	"google.golang.org/protobuf/proto"
)

func TestCheck(t *testing.T) {
	// AttrValue.f (field 4) is a fixed32 float; written as a varint it is
	// kept as an unknown field, inside a map value of NodeDef.attr.
	entry := pbtest.Msg(pbtest.Str(1, "epsilon"), pbtest.Sub(2, pbtest.Int(4, 7)))
	graph := pbtest.Msg(pbtest.Sub(1, pbtest.Str(1, "n"), pbtest.Bytes(5, entry)))
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
	if err := proto.Unmarshal(pbtest.Msg(pbtest.Str(5, "debug")), ok); err != nil {
		t.Fatal(err)
	}
	if err := Check(ok.ProtoReflect()); err != nil {
		t.Errorf("Check of an unknown field number = %v, want nil", err)
	}
}
