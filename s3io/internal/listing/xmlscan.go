package listing

import (
	"bytes"
	"unicode/utf8"
)

// The scanner. What it accepts, encoding/xml (the SDK's decoder) accepts and reads the same
// way: same text after entity decoding, same nesting. It accepts less, what S3 sends when
// keys are URL-encoded: comments, CDATA, processing instructions, DOCTYPE, namespace
// prefixes on elements, character references, non-ASCII bytes, control characters, '\r'
// (which XML turns into '\n') and '>' in text are errNotFast, for the SDK to decode.

// parser is a cursor over a document being decoded.
type parser struct {
	b       []byte
	pos     int
	scratch []byte // decoded text of the value being read, when it held entities
	obj     object // the Contents element being decoded
	depth   int    // of the elements open
}

// object is what is gathered of a Contents element until it ends. The key and the ETag
// share one allocation, made then.
type object struct {
	strs                        []byte
	key, etag                   [2]int // offsets in strs, or -1
	restore, inProgress, expiry bool
}

// special marks the bytes text may not hold as they are ('&' starts an entity).
var special = func() (s [256]bool) {
	for i := range 256 {
		s[i] = i < 0x20 && i != '\t' && i != '\n' || i >= 0x7f || i == '<' || i == '&' || i == '>'
	}
	return s
}()

// nameStart and nameChar are the bytes that may start and continue a name: ASCII only, and
// no ':' (an attribute name may hold one, see attribute).
var nameStart, nameChar = func() (start, char [256]bool) {
	for c := range 256 {
		start[c] = 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || c == '_'
		char[c] = start[c] || '0' <= c && c <= '9' || c == '-' || c == '.'
	}
	return start, char
}()

func isSpace(c byte) bool { return c == ' ' || c == '\n' || c == '\t' || c == '\r' }

// declarations are the XML declarations taken; encoding/xml reads each as version 1.0 in UTF-8.
var declarations = []string{`<?xml version="1.0" encoding="UTF-8"?>`, `<?xml version="1.0" encoding="utf-8"?>`, `<?xml version="1.0"?>`}

// prolog skips white space and an XML declaration, up to the root's start tag.
func (p *parser) prolog() error {
	p.pos = p.skipSpace(0)
	for _, d := range declarations {
		if bytes.HasPrefix(p.b[p.pos:], []byte(d)) {
			p.pos = p.skipSpace(p.pos + len(d))
			break
		}
	}
	if p.pos+1 >= len(p.b) || p.b[p.pos] != '<' || !nameStart[p.b[p.pos+1]] {
		return errNotFast
	}
	return nil
}

func (p *parser) skipSpace(i int) int {
	for i < len(p.b) && isSpace(p.b[i]) {
		i++
	}
	return i
}

// text checks that t, text up to a '<' or a closing quote, is plain (printable ASCII, tabs,
// newlines) but for references: the predefined entities, the only ones encoding/xml knows,
// and character references (encoding/xml writes quotes as &#34;). With decode it returns t
// decoded, in p.scratch (valid until the next call) if it held references.
func (p *parser) text(t []byte, decode bool) ([]byte, bool) {
	out := p.scratch[:0]
	from := 0
	for i := 0; i < len(t); {
		if !special[t[i]] {
			i++
			continue
		}
		n, r := charRef(t[i:])
		for _, e := range [...]string{`"&quot;`, "&&amp;", "<&lt;", ">&gt;", "'&apos;"} { // the character, its entity
			if bytes.HasPrefix(t[i:], []byte(e[1:])) {
				n, r = len(e)-1, rune(e[0])
			}
		}
		if n == 0 {
			return nil, false
		}
		out = utf8.AppendRune(append(out, t[from:i]...), r)
		i += n
		from = i
	}
	if from == 0 || !decode {
		return t, true
	}
	p.scratch = append(out, t[from:]...)
	return p.scratch, true
}

// charRef decodes the character reference at the start of b, returning its length and
// character, or 0. Like encoding/xml, it turns a surrogate into U+FFFD and refuses
// characters outside the XML range (so "&#x1;" fails in the SDK too).
func charRef(b []byte) (int, rune) {
	if len(b) < 3 || b[1] != '#' {
		return 0, 0
	}
	i, base, r := 2, rune(10), rune(0)
	if b[2] == 'x' {
		i, base = 3, 16
	}
	for ; i < len(b) && b[i] != ';'; i++ {
		c, d := b[i], rune(-1)
		switch {
		case '0' <= c && c <= '9':
			d = rune(c - '0')
		case base == 16 && 'a' <= c|0x20 && c|0x20 <= 'f':
			d = rune(c|0x20-'a') + 10
		}
		if r = r*base + d; d < 0 || r > utf8.MaxRune {
			return 0, 0
		}
	}
	if i >= len(b) || i == 2 || i == 3 && base == 16 {
		return 0, 0
	}
	if 0xD800 <= r && r <= 0xDFFF {
		r = utf8.RuneError
	}
	if !(r == 0x09 || r == 0x0A || r == 0x0D || r >= 0x20 && r <= 0xD7FF || r >= 0xE000 && r <= 0xFFFD || r >= 0x10000 && r <= 0x10FFFF) {
		return 0, 0
	}
	return i + 1, r
}

// nextTag moves the cursor over text between tags (which the SDK ignores inside structures)
// to the next tag, and reports whether it is a start tag (or else an end tag).
func (p *parser) nextTag() (start bool, err error) {
	n := bytes.IndexByte(p.b[p.pos:], '<')
	if n < 0 || p.pos+n+1 >= len(p.b) {
		return false, errNotFast
	}
	if _, ok := p.text(p.b[p.pos:p.pos+n], false); !ok {
		return false, errNotFast
	}
	p.pos += n
	switch c := p.b[p.pos+1]; {
	case c == '/':
		return false, nil
	case nameStart[c]:
		return true, nil
	}
	return false, errNotFast // a comment, CDATA, a processing instruction
}

// startTag reads the start tag at the cursor and returns the element's name and whether it
// is self-closing. Attributes are checked and ignored.
func (p *parser) startTag() (name []byte, empty bool, err error) {
	b := p.b
	i := p.pos + 1
	if i >= len(b) || !nameStart[b[i]] {
		return nil, false, errNotFast
	}
	for i++; i < len(b) && nameChar[b[i]]; i++ {
	}
	name = b[p.pos+1 : i]
	for {
		if i >= len(b) || b[i] == ':' || b[i] >= 0x80 {
			return nil, false, errNotFast
		}
		if i = p.skipSpace(i); i >= len(b) {
			return nil, false, errNotFast
		}
		switch {
		case b[i] == '>':
			p.pos = i + 1
			return name, false, nil
		case b[i] == '/' && i+1 < len(b) && b[i+1] == '>':
			p.pos = i + 2
			return name, true, nil
		}
		if i, err = p.attribute(i); err != nil {
			return nil, false, err
		}
	}
}

// attribute checks the attribute at i (such as xmlns="..." or xmlns:xsi='...') and returns
// the index after it.
func (p *parser) attribute(i int) (int, error) {
	b := p.b
	if !nameStart[b[i]] {
		return 0, errNotFast
	}
	colons := 0
	for i++; i < len(b) && (nameChar[b[i]] || b[i] == ':'); i++ {
		if b[i] == ':' {
			colons++
		}
	}
	if colons > 1 {
		return 0, errNotFast
	}
	if i = p.skipSpace(i); i >= len(b) || b[i] != '=' {
		return 0, errNotFast
	}
	if i = p.skipSpace(i + 1); i >= len(b) || b[i] != '"' && b[i] != '\'' {
		return 0, errNotFast
	}
	n := bytes.IndexByte(b[i+1:], b[i])
	if n < 0 {
		return 0, errNotFast
	}
	if _, ok := p.text(b[i+1:i+1+n], false); !ok {
		return 0, errNotFast
	}
	return i + n + 2, nil
}

// endTag reads the end tag at the cursor, which must close the element name.
func (p *parser) endTag(name []byte) error {
	b := p.b
	i := p.pos + 2
	if len(b)-i < len(name) || !bytes.Equal(b[i:i+len(name)], name) {
		return errNotFast
	}
	i += len(name)
	if i < len(b) && (nameChar[b[i]] || b[i] == ':' || b[i] >= 0x80) {
		return errNotFast
	}
	if i = p.skipSpace(i); i >= len(b) || b[i] != '>' {
		return errNotFast
	}
	p.pos = i + 1
	return nil
}

// emptyValue is the value of an element without content: the SDK decodes it to "".
var emptyValue = []byte{}

// value reads the content and end tag of a simple-typed element whose start tag has been
// read: one run of text, or nothing. The result is part of the document or in p.scratch;
// callers copy what they keep.
func (p *parser) value(name []byte, empty bool) ([]byte, error) {
	if empty {
		return emptyValue, nil
	}
	n := bytes.IndexByte(p.b[p.pos:], '<')
	if n < 0 || p.pos+n+1 >= len(p.b) || p.b[p.pos+n+1] != '/' {
		return nil, errNotFast // a child, a comment or CDATA: the SDK refuses or decodes it
	}
	v, ok := p.text(p.b[p.pos:p.pos+n], true)
	if !ok {
		return nil, errNotFast
	}
	p.pos += n
	return v, p.endTag(name)
}
