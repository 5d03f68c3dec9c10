package irtext

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

type tokKind uint8

const (
	tEOF    tokKind = iota
	tNL             // end of line; significant in graph bodies only
	tIdent          // graph, Conv, com.microsoft.FusedConv, f32, v12
	tNumber         // 3, -1, 0.5, 1e-05, -inf, 0x7fa00000
	tString         // "text", Go syntax
	tPunct          // ( ) [ ] { } < > , : = ? * . ...
)

type token struct {
	kind      tokKind
	text      string // the lexeme as written
	val       string // tString: the unquoted value
	line, col int    // 1-based; col counts bytes
}

// describe names a token for "expected X, found Y" messages.
func (t token) describe() string {
	switch t.kind {
	case tEOF:
		return "end of file"
	case tNL:
		return "end of line"
	case tString:
		if len(t.text) > 40 {
			return t.text[:37] + "...\""
		}
		return t.text
	}
	if len(t.text) > 40 {
		return strconv.Quote(t.text[:37] + "...")
	}
	return strconv.Quote(t.text)
}

func (t token) is(punct string) bool { return t.kind == tPunct && t.text == punct }

func (t token) isWord(w string) bool { return t.kind == tIdent && t.text == w }

func isIdentStart(c byte) bool {
	return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

// isIdentChar reports whether c may continue an identifier. Dots, slashes
// and dashes are allowed so that typical ONNX names ("model.layer1.weight",
// "conv1/7x7_s2") need no quotes; a colon is not, as it separates a name
// from its type.
func isIdentChar(c byte) bool {
	return isIdentStart(c) || '0' <= c && c <= '9' || c == '.' || c == '/' || c == '-'
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// isIdent reports whether s lexes as exactly one identifier.
func isIdent(s string) bool {
	if s == "" || !isIdentStart(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !isIdentChar(s[i]) {
			return false
		}
	}
	return true
}

// lexer produces tokens from src on demand.
type lexer struct {
	src             string
	i               int // next byte to read
	line, lineStart int // current line (1-based) and the offset where it starts
}

func newLexer(src string) *lexer { return &lexer{src: src, line: 1} }

// scan returns the next token, tEOF at the end. Comments run from # to the
// end of the line.
func (l *lexer) scan() (token, *Error) {
	src := l.src
	for l.i < len(src) {
		i := l.i
		c := src[i]
		line, col := l.line, i-l.lineStart+1
		switch {
		case c == ' ' || c == '\t' || c == '\r':
			l.i++
		case c == '#':
			for l.i < len(src) && src[l.i] != '\n' {
				l.i++
			}
		case c == '\n':
			l.i++
			l.line, l.lineStart = l.line+1, l.i
			return token{kind: tNL, text: "\n", line: line, col: col}, nil
		case c == '"':
			j := i + 1
			for {
				if j >= len(src) || src[j] == '\n' {
					return token{}, &Error{Line: line, Col: col, Msg: "string literal not terminated"}
				}
				if src[j] == '\\' {
					j += 2
					continue
				}
				if src[j] == '"' {
					break
				}
				j++
			}
			lit := src[i : j+1]
			val, err := strconv.Unquote(lit)
			if err != nil {
				return token{}, &Error{Line: line, Col: col, Msg: fmt.Sprintf("invalid string literal %s", lit)}
			}
			l.i = j + 1
			return token{kind: tString, text: lit, val: val, line: line, col: col}, nil
		case isDigit(c) || (c == '-' || c == '+') && i+1 < len(src) && (isDigit(src[i+1]) || src[i+1] == '.' && i+2 < len(src) && isDigit(src[i+2]) || isIdentStart(src[i+1])) ||
			c == '.' && i+1 < len(src) && isDigit(src[i+1]):
			j := i + 1
			for j < len(src) {
				d := src[j]
				if d == '.' && j+1 < len(src) && src[j+1] == '.' {
					break // "1..." written without a comma
				}
				if isIdentStart(d) || isDigit(d) || d == '.' {
					j++
					continue
				}
				if (d == '+' || d == '-') && strings.IndexByte("eEpP", src[j-1]) >= 0 {
					j++
					continue
				}
				break
			}
			l.i = j
			return token{kind: tNumber, text: src[i:j], line: line, col: col}, nil
		case isIdentStart(c):
			j := i + 1
			for j < len(src) && isIdentChar(src[j]) {
				j++
			}
			l.i = j
			return token{kind: tIdent, text: src[i:j], line: line, col: col}, nil
		case strings.IndexByte("()[]{}<>,:=?*.", c) >= 0:
			n := 1
			if strings.HasPrefix(src[i:], "...") {
				n = 3
			}
			l.i += n
			return token{kind: tPunct, text: src[i : i+n], line: line, col: col}, nil
		default:
			r, _ := utf8.DecodeRuneInString(src[i:])
			return token{}, &Error{Line: line, Col: col, Msg: fmt.Sprintf("unexpected character %q", r)}
		}
	}
	return token{kind: tEOF, line: l.line, col: l.i - l.lineStart + 1}, nil
}
