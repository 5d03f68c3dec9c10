package tfpb

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// JSONMember is one member of a JSON object: its key and raw value.
type JSONMember struct {
	Key   string
	Value json.RawMessage
}

// JSONMembers reads a JSON object's members in order (model.json's
// top-level members, a signature's entries), refusing a key given twice;
// top requires nothing after the object.
func JSONMembers(data []byte, top bool) ([]JSONMember, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	t, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := t.(json.Delim); !ok || d != '{' {
		return nil, fmt.Errorf("expected a JSON object, found %v", t)
	}
	var out []JSONMember
	seen := map[string]bool{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key := t.(string) // object keys are strings
		if seen[key] {
			return nil, fmt.Errorf("member %q appears twice", key)
		}
		seen[key] = true
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, fmt.Errorf("member %q: %v", key, err)
		}
		out = append(out, JSONMember{Key: key, Value: raw})
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	if top {
		if _, err := dec.Token(); err != io.EOF {
			return nil, fmt.Errorf("data after the JSON object")
		}
	}
	return out, nil
}
