package interchange

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"

	"github.com/remat-compile/remat/passes/remat"
)

// Load reads a graph file in any of the package's formats under its
// default semantics and returns the problem and the format read. The
// format is recognised by content (a JSON object is node-link JSON; a
// first line `p`, `memlimit` or `node` is TWRemat text), else by the
// extension (.json, or .twremat and .txt); a malformed file gives an
// *Error naming the file and what is wrong.
func Load(path string) (*remat.Problem, Format, error) {
	g, err := LoadWith(path, Options{})
	if err != nil {
		return nil, UnknownFormat, err
	}
	return g.Problem, g.Format, nil
}

// LoadWith is Load with options, returning the whole Graph.
func LoadWith(path string, opts Options) (*Graph, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Read(data, path, opts)
}

// Read reads a graph from data; name is the file name, used for its
// extension and in errors.
func Read(data []byte, name string, opts Options) (*Graph, error) {
	switch sniff(data, name) {
	case formatJSON:
		return readNodeLink(data, name, opts)
	case formatText:
		return readTWRemat(data, name, opts)
	}
	var is issues
	body := bytes.TrimSpace(bytes.TrimPrefix(data, []byte("\ufeff")))
	if len(body) == 0 {
		is.add("", "the file is empty; want networkx node-link JSON or TWRemat text")
	} else {
		first, _, _ := bytes.Cut(body, []byte("\n"))
		is.add("", "cannot tell the format: the file starts with %q, which is neither a JSON object (networkx node-link) nor a TWRemat line (`p remat2`, `memlimit`, `node`), and its extension names neither (.json, .twremat, .txt)",
			truncate(string(first), 40))
	}
	return nil, is.err(name)
}

type sniffed uint8

const (
	formatNone sniffed = iota
	formatJSON
	formatText
)

// sniff tells the format by content, then by extension.
func sniff(data []byte, name string) sniffed {
	body := bytes.TrimLeft(bytes.TrimPrefix(data, []byte("\ufeff")), " \t\r\n")
	if len(body) > 0 && (body[0] == '{' || body[0] == '[') {
		return formatJSON
	}
	word := body
	if i := bytes.IndexAny(word, " \t\r\n"); i >= 0 {
		word = word[:i]
	}
	switch string(word) {
	case "p", "memlimit", "node":
		return formatText
	}
	switch strings.ToLower(filepath.Ext(name)) {
	case ".json":
		if len(body) > 0 {
			return formatJSON // read as JSON, for its syntax error
		}
	case ".twremat", ".txt":
		if len(body) > 0 {
			return formatText
		}
	}
	return formatNone
}

// IsGraph reports whether data holds a graph in one of the package's
// formats rather than a model: a JSON object with the node-link "nodes"
// and "links" members, or text whose first word is a TWRemat keyword.
// It lets a caller that also reads models (a TensorFlow.js model.json is
// a JSON object too) choose the reader.
func IsGraph(data []byte) bool {
	switch sniff(data, "") {
	case formatText:
		return true
	case formatJSON:
		var top map[string]json.RawMessage
		if json.Unmarshal(data, &top) != nil {
			return false
		}
		_, nodes := top["nodes"]
		_, links := top["links"]
		return nodes && links
	}
	return false
}
