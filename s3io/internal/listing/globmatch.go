package listing

import (
	"math/bits"
	"strings"
	"unicode/utf8"
)

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
