package interchange

import "testing"

func TestIsGraph(t *testing.T) {
	for _, tt := range []struct {
		data string
		want bool
	}{
		{`{"directed": true, "nodes": [], "links": []}`, true},
		{"p remat2\nnode 1 cpu 1 mem 1\n", true},
		{"node 1 cpu 1 mem 1\n", true},
		{`{"modelTopology": {"node": []}, "weightsManifest": []}`, false},
		{`{"nodes": []}`, false},
		{"\x08\x01\x12\x00", false},
		{"", false},
	} {
		if got := IsGraph([]byte(tt.data)); got != tt.want {
			t.Errorf("IsGraph(%q) = %v, want %v", tt.data, got, tt.want)
		}
	}
}
