package listing

import (
	"fmt"
	"math/bits"
	"strings"
	"sync"
	"unicode/utf8"
)

// A glob selects keys by shape, e.g. "logs/2024-*/part-?.gz". The syntax (the user contract
// s3io documents on Config.Match):
//
//   - '*' matches any run of characters other than '/', possibly empty.
//   - '?' matches exactly one character other than '/'.
//   - "**" matches any run of characters, '/' included, possibly empty. Three or more stars
//     in a row mean the same. It is purely "any run": "a/**/b" matches "a//b" and
//     "a/x/y/b" but not "a/b", and "a/**" matches every key under "a/" (and "a/" itself).
//   - '[' class ']' matches one character of the class, as in path.Match: single characters
//     and ranges such as "a-z"; a leading '^' (or '!', as shells spell it) negates the class;
//     '\' escapes ']', '-', '\' or any other character inside it. A class never matches
//     '/', negated or not, for the same reason '*' and '?' do not: one wildcard character
//     stays within one "folder" of the key. An unescaped '-' that does not form a range, an
//     empty class, a range whose ends are reversed and invalid UTF-8 are errors.
//   - '\' c matches c literally, so keys containing '*', '?', '[' or '\' can be matched.
//   - Anything else matches itself, byte for byte.
//
// The whole key must match. A character is one UTF-8-encoded rune; a byte of a key that is
// not part of valid UTF-8 counts as one character on its own, which '*', '?' and negated
// classes match and positive classes never do.
//
// Matching is an NFA simulation over the pattern's token positions, one step per key
// character: O(len(key) × len(pattern)) whatever the pattern, like RE2 (Go's regexp is
// linear too). It is written by hand rather than translated to a regexp for two reasons.
// The same simulation run over a prefix answers MayMatchUnder, which lets the planner skip
// listing folders no key of which can match; regexp has no "could a continuation of this
// prefix match" query. And it runs once per listed key without allocating, which a regexp
// with its per-call machine does not guarantee.

// globTokKind is what one glob token consumes.
type globTokKind uint8

const (
	globLit   globTokKind = iota // one character, compared byte for byte
	globAny                      // '?': one character other than '/'
	globClass                    // '[...]': one character of the class, never '/'
	globStar                     // '*': any run of characters other than '/'
	globDStar                    // "**": any run of characters
)

// invalidRune stands for a key byte that is not part of valid UTF-8. It lies outside every
// class range, so positive classes never match such a byte and negated classes always do;
// utf8.RuneError could not serve, as it would make a class holding U+FFFD match every
// stray byte.
const invalidRune rune = -1

// globInlineWords is how many 64-bit words of state set match and MayMatchUnder keep on
// the stack: patterns of up to 255 tokens (nearly all) run without allocating; longer ones
// borrow their state sets from the glob's pool.
const globInlineWords = 4

// globToken is one element of a compiled pattern.
type globToken struct {
	kind    globTokKind
	negated bool            // globClass: '^' or '!'
	lit     string          // globLit: the character's bytes (one rune, or one invalid byte)
	litRune rune            // globLit: the character, or invalidRune for a stray byte
	ranges  []globRuneRange // globClass: the members, as inclusive ranges
}

type globRuneRange struct{ lo, hi rune }

// classMatches reports whether the class token t matches the key character r.
func (t *globToken) classMatches(r rune) bool {
	if r == '/' {
		return false
	}
	in := false
	for _, rr := range t.ranges {
		if rr.lo <= r && r <= rr.hi {
			in = true
			break
		}
	}
	return in != t.negated
}

// Glob is a compiled pattern. It is immutable once compiled, so one glob may
// match keys from many goroutines.
//
// A nil *Glob is the absence of a pattern: it matches every key (see CompileGlob).
type Glob struct {
	pattern string // as written, for String
	toks    []globToken
	// starMask has a bit set for each star token: a star can match the empty run, so a
	// state at one is also a state just past it (the ε-closure).
	starMask []uint64
	// prefix is the concatenation of the leading literal tokens, the longest string every
	// matching key starts with; nprefix is how many tokens it spans.
	prefix  string
	nprefix int
	// skipPrefix: every token of prefix is a valid rune, so a key that starts with prefix
	// decodes into exactly those characters first, and matching can start after it at
	// token nprefix. (A stray byte such as "\xc3" in the pattern may be joined by the key's
	// next bytes into one character, "é", that the pattern's literal does not match, so
	// such patterns run from the start.)
	skipPrefix bool
	// literal: the pattern is nothing but valid characters, so it matches exactly the key
	// prefix.
	literal bool
	// words is the length of a state set in uint64 words: one bit for each token position
	// and one for the accepting state after the last token.
	words int
	// pool lends 2*words-word buffers to patterns with more than globInlineWords words.
	pool sync.Pool
}

// CompileGlob compiles a pattern. The empty pattern means "no glob": it
// compiles to a nil *Glob and no error, and a nil *Glob matches every key, so callers need
// not tell the two cases apart. Errors quote the pattern and give the byte offset of the problem
// in it; the caller names the setting it came from.
func CompileGlob(pattern string) (*Glob, error) {
	if pattern == "" {
		return nil, nil
	}
	toks, err := globTokens(pattern)
	if err != nil {
		return nil, err
	}
	g := &Glob{pattern: pattern, toks: toks}
	g.compile()
	return g, nil
}

// globTokens cuts pattern into its tokens: stars, double stars, ?, classes and literal
// characters (an escaped one included).
func globTokens(pattern string) ([]globToken, error) {
	var toks []globToken
	for i := 0; i < len(pattern); {
		switch pattern[i] {
		case '*':
			j := i
			for j < len(pattern) && pattern[j] == '*' {
				j++
			}
			kind := globStar
			if j-i > 1 {
				kind = globDStar
			}
			toks = append(toks, globToken{kind: kind})
			i = j
		case '?':
			toks = append(toks, globToken{kind: globAny})
			i++
		case '[':
			tok, next, err := parseGlobClass(pattern, i)
			if err != nil {
				return nil, err
			}
			toks = append(toks, tok)
			i = next
		case '\\':
			if i+1 == len(pattern) {
				return nil, globError(pattern, "trailing \\ at offset %d escapes nothing; write \\\\ to match a backslash", i)
			}
			toks = append(toks, globLitToken(pattern[i+1:]))
			i += 1 + len(toks[len(toks)-1].lit)
		default:
			toks = append(toks, globLitToken(pattern[i:]))
			i += len(toks[len(toks)-1].lit)
		}
	}

	return toks, nil
}

// compile derives from g's tokens what matching uses: the literal prefix, whether the
// pattern is a literal, the star positions, and the pool of state vectors long patterns need.
func (g *Glob) compile() {
	var b strings.Builder
	for g.nprefix < len(g.toks) && g.toks[g.nprefix].kind == globLit {
		b.WriteString(g.toks[g.nprefix].lit)
		g.nprefix++
	}
	g.prefix = b.String()
	g.skipPrefix = true
	for _, t := range g.toks[:g.nprefix] {
		if t.litRune == invalidRune {
			g.skipPrefix = false
		}
	}
	g.literal = g.skipPrefix && g.nprefix == len(g.toks)
	g.words = (len(g.toks) + 1 + 63) / 64
	g.starMask = make([]uint64, g.words)
	for i, t := range g.toks {
		if t.kind == globStar || t.kind == globDStar {
			g.starMask[i/64] |= 1 << (i % 64)
		}
	}
	if g.words > globInlineWords {
		words := g.words
		g.pool.New = func() any {
			buf := make([]uint64, 2*words)
			return &buf
		}
	}
}

// globLitToken returns the literal token for the character at the start of s.
func globLitToken(s string) globToken {
	r, w := utf8.DecodeRuneInString(s)
	if r == utf8.RuneError && w == 1 {
		r = invalidRune
	}
	return globToken{kind: globLit, lit: s[:w], litRune: r}
}

// parseGlobClass parses the class whose '[' is at pattern[start] and returns it with the
// offset just past its ']'. The syntax is path.Match's (plus '!' for negation), and so are
// the errors, except that a reversed range such as "z-a", which path.Match silently never
// matches, is reported: it is a typo, not a wish to match nothing.
func parseGlobClass(pattern string, start int) (globToken, int, error) {
	tok := globToken{kind: globClass}
	i := start + 1
	if i < len(pattern) && (pattern[i] == '^' || pattern[i] == '!') {
		tok.negated = true
		i++
	}
	for {
		if i >= len(pattern) {
			return tok, 0, globError(pattern, "unterminated character class at offset %d", start)
		}
		if pattern[i] == ']' {
			if len(tok.ranges) == 0 {
				return tok, 0, globError(pattern, "empty character class at offset %d; write \\] for a literal ] in a class", start)
			}
			return tok, i + 1, nil
		}
		loAt := i
		lo, next, err := globClassChar(pattern, i, start)
		if err != nil {
			return tok, 0, err
		}
		i = next
		hi := lo
		if i < len(pattern) && pattern[i] == '-' {
			if i+1 < len(pattern) && pattern[i+1] == ']' {
				return tok, 0, globError(pattern, "unescaped - at offset %d ends no range; write \\- for a literal - in a class", i)
			}
			if hi, i, err = globClassChar(pattern, i+1, start); err != nil {
				return tok, 0, err
			}
			if lo > hi {
				return tok, 0, globError(pattern, "bad range %s at offset %d in character class: %q comes after %q", pattern[loAt:i], loAt, lo, hi)
			}
		}
		tok.ranges = append(tok.ranges, globRuneRange{lo, hi})
	}
}

// globClassChar reads one possibly escaped class member at pattern[i] of the class opened
// at start, returning it and the offset after it.
func globClassChar(pattern string, i, start int) (rune, int, error) {
	if i >= len(pattern) {
		return 0, 0, globError(pattern, "unterminated character class at offset %d", start)
	}
	switch pattern[i] {
	case '-':
		return 0, 0, globError(pattern, "unescaped - at offset %d in character class; write \\- for a literal -", i)
	case '\\':
		i++
		if i >= len(pattern) {
			return 0, 0, globError(pattern, "unterminated character class at offset %d", start)
		}
	}
	r, w := utf8.DecodeRuneInString(pattern[i:])
	if r == utf8.RuneError && w == 1 {
		return 0, 0, globError(pattern, "invalid UTF-8 at offset %d in character class", i)
	}
	return r, i + w, nil
}

func globError(pattern, format string, args ...any) error {
	return fmt.Errorf("%q is not a valid glob: "+format, append([]any{pattern}, args...)...)
}

// String returns the pattern as written ("" for a nil glob), for logs and messages.
func (g *Glob) String() string {
	if g == nil {
		return ""
	}
	return g.pattern
}

// LiteralPrefix is the longest prefix every matching key starts with (escapes resolved),
// e.g. "logs/2024-" for "logs/2024-*/part-?.gz": the planner lists only keys under it. It is
// "" for a nil glob.
func (g *Glob) LiteralPrefix() string {
	if g == nil {
		return ""
	}
	return g.prefix
}

// Match reports whether the whole key matches the pattern. A nil glob matches every key.
// It does not allocate, except for patterns of more than 255 tokens before their pool
// warms up.
func (g *Glob) Match(key string) bool {
	if g == nil {
		return true
	}
	if g.literal {
		return key == g.prefix
	}
	if !strings.HasPrefix(key, g.prefix) {
		return false
	}
	return g.runFrom(key, false)
}

// runFrom matches s, or with partial a prefix of keys, from past the literal prefix the
// glob skips, with state vectors on the stack when they fit, else from the pool. The calls
// are direct so that the stack buffer does not escape.
func (g *Glob) runFrom(s string, partial bool) bool {
	start, off := 0, 0
	if g.skipPrefix {
		start, off = g.nprefix, len(g.prefix)
	}
	var buf [2 * globInlineWords]uint64
	var cur, next []uint64
	if g.words <= globInlineWords {
		cur, next = buf[:g.words], buf[globInlineWords:globInlineWords+g.words]
	} else {
		p := g.pool.Get().(*[]uint64)
		defer g.pool.Put(p)
		cur, next = (*p)[:g.words], (*p)[g.words:]
	}
	if partial {
		return g.mayMatchFrom(s[off:], start, cur, next)
	}
	return g.matchFrom(s[off:], start, cur, next)
}

func (g *Glob) matchFrom(s string, start int, cur, next []uint64) bool {
	g.startAt(cur, start)
	if cur, _, ok := g.run(s, cur, next); ok {
		return cur[len(g.toks)/64]&(1<<(len(g.toks)%64)) != 0
	}
	return false
}

// MayMatchUnder reports whether some key that begins with prefix could match: false only
// if none can. The planner uses it to skip a folder (a common prefix such as
// "logs/2023-12-31/") without listing it. It is sound: it never returns false when a key
// with that prefix matches. It is exact except that a class is assumed to have members,
// and that when prefix ends inside a UTF-8 sequence, a class is assumed to hold a rune that
// completes it. A nil glob may match under every prefix.
func (g *Glob) MayMatchUnder(prefix string) bool {
	if g == nil {
		return true
	}
	// Every matching key starts with g.prefix, so prefix must agree with it as far as both go.
	n := min(len(prefix), len(g.prefix))
	if prefix[:n] != g.prefix[:n] {
		return false
	}
	if len(prefix) <= len(g.prefix) {
		return true
	}
	if g.literal {
		return false // only g.prefix itself matches, and it is shorter than prefix
	}
	return g.runFrom(prefix, true)
}

func (g *Glob) mayMatchFrom(s string, start int, cur, next []uint64) bool {
	// A prefix may end inside a UTF-8 sequence ("\xc3" of "é"): how its last bytes decode
	// depends on the bytes after them, which the prefix does not have. Either they complete
	// one rune, or (Go's decoding of an invalid sequence) each is a character on its own.
	// Run the simulation up to that tail and keep both readings.
	cut := incompleteUTF8Tail(s)
	g.startAt(cur, start)
	cur, next, ok := g.run(s[:cut], cur, next)
	if !ok {
		return false
	}
	if cut == len(s) {
		// Some state is live: a state inside the pattern can go on to the accepting one,
		// and the accepting state itself means the key equal to prefix matches.
		return true
	}
	tail := s[cut:]
	for i := range g.states(cur) {
		if i == len(g.toks) {
			continue
		}
		switch t := &g.toks[i]; t.kind {
		case globStar, globDStar, globAny, globClass:
			// The completed rune is not '/' (a multi-byte rune never is); a class is
			// assumed to hold it, which is cheap and sound.
			return true
		case globLit:
			if len(t.lit) > len(tail) && strings.HasPrefix(t.lit, tail) {
				return true
			}
		}
	}
	_, _, ok = g.run(tail, cur, next)
	return ok
}

// incompleteUTF8Tail returns the offset of the start of a UTF-8 sequence at the end of s
// that is incomplete but could still be completed by the bytes that follow, or len(s).
func incompleteUTF8Tail(s string) int {
	for i := len(s) - 1; i >= 0 && i >= len(s)-utf8.UTFMax+1; i-- {
		if utf8.RuneStart(s[i]) {
			if !utf8.FullRuneInString(s[i:]) {
				return i
			}
			break
		}
	}
	return len(s)
}

// startAt sets set to the single state at token start and its ε-closure.
func (g *Glob) startAt(set []uint64, start int) {
	clear(set)
	set[start/64] |= 1 << (start % 64)
	g.closure(set)
}

// closure adds to set the states reachable without consuming a character: the one past
// each star the set holds, since a star may match the empty run. A single shift suffices
// because a star token is never followed by another (a run of '*' is one token), so no
// state added here is a star to skip in turn.
func (g *Glob) closure(set []uint64) {
	var carry uint64
	for w, x := range set {
		stars := x & g.starMask[w]
		set[w] = x | stars<<1 | carry
		carry = stars >> 63
	}
}

// run advances the state set cur over every character of s, using next as scratch. It
// returns the final set and the other buffer, and false as soon as no state is live.
func (g *Glob) run(s string, cur, next []uint64) ([]uint64, []uint64, bool) {
	for p := 0; p < len(s); {
		var r rune
		w := 1
		if c := s[p]; c < utf8.RuneSelf {
			r = rune(c)
		} else if r, w = utf8.DecodeRuneInString(s[p:]); r == utf8.RuneError && w == 1 {
			r = invalidRune
		}
		if !g.step(cur, next, s[p:p+w], r) {
			return next, cur, false
		}
		cur, next = next, cur
		p += w
	}
	return cur, next, true
}

// step sets next to the states reached from cur by consuming the character c (decoded as
// r) and reports whether next is non-empty. It is the inner loop of matching, hence the
// hand-written bit iteration.
func (g *Glob) step(cur, next []uint64, c string, r rune) bool {
	clear(next)
	var live uint64
	m := len(g.toks)
	for w, x := range cur {
		for x != 0 {
			i := w*64 + bits.TrailingZeros64(x)
			x &= x - 1
			if i == m {
				continue // the accepting state consumes nothing
			}
			to := -1
			switch t := &g.toks[i]; t.kind {
			case globLit:
				// Valid UTF-8 encodes each rune one way, so comparing runes compares bytes;
				// stray bytes, all invalidRune, are told apart by their bytes.
				if t.litRune == r && (r != invalidRune || t.lit == c) {
					to = i + 1
				}
			case globAny:
				if r != '/' {
					to = i + 1
				}
			case globClass:
				if t.classMatches(r) {
					to = i + 1
				}
			case globStar:
				if r != '/' {
					to = i
				}
			case globDStar:
				to = i
			}
			if to >= 0 {
				next[to/64] |= 1 << (to % 64)
				live = 1
			}
		}
	}
	if live == 0 {
		return false
	}
	g.closure(next)
	return true
}

// states yields the states in set in ascending order.
func (g *Glob) states(set []uint64) func(yield func(int) bool) {
	return func(yield func(int) bool) {
		for w, x := range set {
			for x != 0 {
				if !yield(w*64 + bits.TrailingZeros64(x)) {
					return
				}
				x &= x - 1
			}
		}
	}
}
