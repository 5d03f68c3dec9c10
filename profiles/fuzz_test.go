package profiles_test

import (
	"reflect"
	"testing"

	"github.com/remat-compile/remat/profiles"
)

// FuzzParse checks that Parse never panics, and that whatever it accepts
// Marshal writes back to an equal profile.
func FuzzParse(f *testing.F) {
	f.Add([]byte(minimal))
	f.Add([]byte(minimal + entry))
	f.Add([]byte(full))
	for _, name := range profiles.Builtins() {
		p, err := profiles.Load(name)
		if err != nil {
			f.Fatal(err)
		}
		out, err := p.Marshal()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(out)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := profiles.Parse(data, "fuzz.yaml")
		if err != nil {
			return
		}
		out, err := p.Marshal()
		if err != nil {
			t.Fatalf("Marshal of a parsed profile: %v", err)
		}
		q, err := profiles.Parse(out, "again.yaml")
		if err != nil {
			t.Fatalf("Parse(Marshal(p)): %v\n%s", err, out)
		}
		if !reflect.DeepEqual(p.Device, q.Device) || !reflect.DeepEqual(p.Fitted, q.Fitted) || len(p.Measured) != len(q.Measured) {
			t.Fatalf("round trip changed the profile:\n%s", out)
		}
	})
}
