package cbc

import (
	"bytes"
	"fmt"
	"os"
)

// stripObjSense finds an OBJSENSE section in MPS text ("OBJSENSE" on its
// own line followed by an indented MAX/MIN line, or "OBJSENSE MAX" on one
// line) and returns the text without it and the sense it sets (1 minimise,
// -1 maximise). found is false if there is none.
func stripObjSense(data []byte) (out []byte, sense float64, found bool, err error) {
	lines := bytes.SplitAfter(data, []byte("\n"))
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		f := bytes.Fields(l)
		if len(f) == 0 || l[0] == ' ' || l[0] == '\t' || !bytes.EqualFold(f[0], []byte("OBJSENSE")) {
			continue
		}
		drop := []int{i}
		var word []byte
		if len(f) > 1 {
			word = f[1]
		} else {
			for k := i + 1; k < len(lines); k++ {
				g := bytes.Fields(lines[k])
				if len(g) == 0 || g[0][0] == '*' {
					continue
				}
				if lines[k][0] != ' ' && lines[k][0] != '\t' {
					break // next section: OBJSENSE without a value
				}
				word = g[0]
				drop = append(drop, k)
				break
			}
		}
		switch string(bytes.ToUpper(word)) {
		case "MAX", "MAXIMIZE", "MAXIMISE":
			sense = -1
		case "MIN", "MINIMIZE", "MINIMISE":
			sense = 1
		default:
			return nil, 0, false, fmt.Errorf("cbc: OBJSENSE %q is neither MAX nor MIN", word)
		}
		var b bytes.Buffer
		for k, l := range lines {
			if k != drop[0] && (len(drop) < 2 || k != drop[1]) {
				b.Write(l)
			}
		}
		return b.Bytes(), sense, true, nil
	}
	return data, 1, false, nil
}

// readMps reads an MPS file with a COIN reader, which ignores OBJSENSE
// (printing a note on stdout when it meets one): a file with the section
// is read from a temporary copy without it, and the sense is returned for
// the caller to apply.
func readMps(path string, read func(string) int32, what string) (sense float64, found bool, err error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, false, fmt.Errorf("cbc: %w", err)
	}
	stripped, sense, found, err := stripObjSense(data)
	if err != nil {
		return 0, false, err
	}
	if found {
		tmp, err := os.CreateTemp("", "cbc-*.mps")
		if err != nil {
			return 0, false, fmt.Errorf("cbc: %w", err)
		}
		defer os.Remove(tmp.Name())
		_, werr := tmp.Write(stripped)
		if cerr := tmp.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			return 0, false, fmt.Errorf("cbc: %w", werr)
		}
		path = tmp.Name()
	}
	if rc := read(path); rc != 0 {
		return 0, false, fmt.Errorf("cbc: %s(%q) returned %d", what, path, rc)
	}
	return sense, found, nil
}
