package listing

import (
	"fmt"
	"math/rand/v2"
	"path"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

// genGlob builds random patterns from the full syntax together with an independent oracle
// for each (a regular expression written directly from the pieces, not by parsing the
// pattern) and a way to draw keys that match.
type genGlob struct {
	r *rand.Rand
	// pathMatchSubset restricts patterns to what path.Match reads the same way: no "**",
	// no '!' negation, no escapes in classes, and classes that cannot match '/'.
	pathMatchSubset bool
}

// keyChars are the characters keys are drawn from: a stray byte and an incomplete
// sequence among them. No piece starts with a continuation byte, so concatenations
// decode piece by piece.
var keyChars = []string{"a", "b", "c", "é", "/", "-", "*", "?", "[", "]", "\\", "!", "^", "\xff", "\xe2\x82", "€"}

// classChars are the class members generated: no U+FFFD, which regexp would match against
// stray bytes.
var classChars = []rune{'a', 'b', 'c', 'é', '/', '-', ']', '^', '!', '\\', '[', '€'}

type globPiece struct {
	pattern, re string
	key         func(r *rand.Rand) string // draws a string the piece matches
}

func (gg *genGlob) piece(prevStar bool) globPiece {
	r := gg.r
	for {
		switch r.IntN(9) {
		case 0, 1, 2: // literal
			c := keyChars[r.IntN(len(keyChars))]
			if !utf8.ValidString(c) {
				continue // regexp cannot hold stray bytes; keys still have them
			}
			p := c
			if strings.ContainsAny(c, "*?[\\") || r.IntN(6) == 0 {
				p = "\\" + c
			} else if gg.pathMatchSubset && c == "]" {
				continue // path.Match reads an unescaped ']' fine, but keep the subset simple
			}
			return globPiece{p, regexp.QuoteMeta(c), func(*rand.Rand) string { return c }}
		case 3:
			return globPiece{"?", `[^/]`, func(r *rand.Rand) string { return keyCharExcept(r, "/") }}
		case 4:
			if prevStar {
				continue // adjacent stars would merge into one token
			}
			return globPiece{"*", `[^/]*`, func(r *rand.Rand) string {
				var b strings.Builder
				for range r.IntN(4) {
					b.WriteString(keyCharExcept(r, "/"))
				}
				return b.String()
			}}
		case 5:
			if prevStar || gg.pathMatchSubset {
				continue
			}
			return globPiece{strings.Repeat("*", 2+r.IntN(2)), `(?s:.*)`, func(r *rand.Rand) string {
				var b strings.Builder
				for range r.IntN(5) {
					b.WriteString(keyChars[r.IntN(len(keyChars))])
				}
				return b.String()
			}}
		default:
			return gg.class()
		}
	}
}

// keyCharExcept draws one character of keyChars other than not ("\xe2\x82" is two).
func keyCharExcept(r *rand.Rand, not string) string {
	for {
		if c := keyChars[r.IntN(len(keyChars))]; c != not && c != "\xe2\x82" {
			return c
		}
	}
}

func (gg *genGlob) class() globPiece {
	r := gg.r
	negated := r.IntN(3) == 0
	var pat, re strings.Builder
	pat.WriteString("[")
	re.WriteString("[")
	if negated {
		if !gg.pathMatchSubset && r.IntN(2) == 0 {
			pat.WriteString("!")
		} else {
			pat.WriteString("^")
		}
		re.WriteString("^/") // a negated class never matches '/' either
	}
	type rng struct{ lo, hi rune }
	var ranges []rng
	for n := 1 + r.IntN(3); len(ranges) < n; {
		lo, hi := classChars[r.IntN(len(classChars))], classChars[r.IntN(len(classChars))]
		if r.IntN(2) == 0 {
			hi = lo
		}
		if lo > hi {
			lo, hi = hi, lo
		}
		if gg.pathMatchSubset {
			// No escapes: only characters that need none in any position.
			special := func(c rune) bool { return strings.ContainsRune("-]^!\\", c) }
			if special(lo) || special(hi) || (!negated && lo <= '/' && '/' <= hi) {
				continue
			}
			if negated && !(lo <= '/' && '/' <= hi) && len(ranges) == 0 {
				// path.Match's negated class matches '/' unless it lists it; ours never does.
				ranges = append(ranges, rng{'/', '/'})
				pat.WriteString("/")
			}
		}
		ranges = append(ranges, rng{lo, hi})
		esc := func(c rune) string {
			if strings.ContainsRune("-]^!\\", c) || r.IntN(8) == 0 {
				return "\\" + string(c)
			}
			return string(c)
		}
		pat.WriteString(esc(lo))
		if lo != hi || r.IntN(4) == 0 {
			pat.WriteString("-" + esc(hi))
		}
		fmt.Fprintf(&re, `\x{%x}-\x{%x}`, lo, hi)
	}
	pat.WriteString("]")
	re.WriteString("]")
	in := func(c rune) bool {
		for _, rr := range ranges {
			if rr.lo <= c && c <= rr.hi {
				return true
			}
		}
		return false
	}
	reStr := re.String()
	if !negated {
		// Subtract '/' from the positive class: a regexp class of the members that are not
		// '/', or nothing at all.
		var b strings.Builder
		for _, rr := range ranges {
			for _, part := range []rng{{rr.lo, min(rr.hi, '/'-1)}, {max(rr.lo, '/'+1), rr.hi}} {
				if part.lo <= part.hi {
					fmt.Fprintf(&b, `\x{%x}-\x{%x}`, part.lo, part.hi)
				}
			}
		}
		if b.Len() == 0 {
			reStr = `[^\x00-\x{10FFFF}]`
		} else {
			reStr = "[" + b.String() + "]"
		}
	}
	return globPiece{pat.String(), reStr, func(r *rand.Rand) string {
		if !negated {
			var members []rune
			for _, rr := range ranges {
				for c := rr.lo; c <= rr.hi && len(members) < 64; c++ {
					if c != '/' {
						members = append(members, c)
					}
				}
			}
			if len(members) == 0 {
				return "\x00unmatchable" // the class only holds '/'; the caller notices
			}
			return string(members[r.IntN(len(members))])
		}
		for {
			c := keyCharExcept(r, "/")
			if dec, _ := utf8.DecodeRuneInString(c); !utf8.ValidString(c) || !in(dec) {
				return c
			}
		}
	}}
}

// pattern returns a random pattern, its oracle and a key that matches it (ok false if the
// pattern can match nothing).
func (gg *genGlob) pattern() (pattern string, oracle *regexp.Regexp, key string, ok bool) {
	var p, re, k strings.Builder
	ok = true
	prevStar := false
	for range 1 + gg.r.IntN(6) { // at least one piece: "" is no glob at all
		pc := gg.piece(prevStar)
		prevStar = strings.HasSuffix(pc.pattern, "*") && !strings.HasSuffix(pc.pattern, "\\*")
		p.WriteString(pc.pattern)
		re.WriteString(pc.re)
		s := pc.key(gg.r)
		if strings.HasPrefix(s, "\x00unmatchable") {
			ok = false
		}
		k.WriteString(s)
	}
	return p.String(), regexp.MustCompile(`^(?:` + re.String() + `)$`), k.String(), ok
}

func randomKey(r *rand.Rand, n int) string {
	var b strings.Builder
	for range r.IntN(n + 1) {
		b.WriteString(keyChars[r.IntN(len(keyChars))])
	}
	return b.String()
}

// mutate returns key with a few characters inserted, removed or replaced.
func mutate(r *rand.Rand, key string) string {
	b := []byte(key)
	for range 1 + r.IntN(2) {
		i := r.IntN(len(b) + 1)
		switch r.IntN(3) {
		case 0:
			b = append(b[:i], append([]byte(keyChars[r.IntN(len(keyChars))]), b[i:]...)...)
		case 1:
			if i < len(b) {
				b = append(b[:i], b[i+1:]...)
			}
		default:
			if i < len(b) {
				b[i] = keyChars[r.IntN(len(keyChars))][0]
			}
		}
	}
	return string(b)
}

// checkGlobPrefixes asserts the planner's contract on a key that matches: it starts with
// LiteralPrefix, and MayMatchUnder holds for every byte prefix of it.
func checkGlobPrefixes(t testing.TB, g *Glob, pattern, key string) {
	t.Helper()
	if !strings.HasPrefix(key, g.LiteralPrefix()) {
		t.Fatalf("%q matches %q, which does not start with LiteralPrefix %q", pattern, key, g.LiteralPrefix())
	}
	for i := 0; i <= len(key); i++ {
		if !g.MayMatchUnder(key[:i]) {
			t.Fatalf("%q matches %q but MayMatchUnder(%q) is false", pattern, key, key[:i])
		}
	}
}

// globRandomRounds is how many random patterns the randomized tests try.
func globRandomRounds() int {
	if testing.Short() {
		return 2000
	}
	return 20000
}

// TestGlobAgainstOracle compares match with a regular expression built from the same
// random pieces, on keys drawn to match and on mutations of them, and checks the prefix
// properties on every key that matches.
func TestGlobAgainstOracle(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	gg := &genGlob{r: r}
	matched := 0
	for range globRandomRounds() {
		pattern, oracle, key, ok := gg.pattern()
		g, err := CompileGlob(pattern)
		if err != nil {
			t.Fatalf("CompileGlob(%q): %v", pattern, err)
		}
		if ok && !g.Match(key) {
			t.Fatalf("%q does not match %q, drawn to match it (oracle %v)", pattern, key, oracle.MatchString(key))
		}
		keys := []string{mutate(r, key), mutate(r, key), randomKey(r, 6)}
		if ok {
			keys = append(keys, key)
		}
		for _, k := range keys {
			got, want := g.Match(k), oracle.MatchString(k)
			if got != want {
				t.Fatalf("%q.Match(%q) = %v, oracle %s says %v", pattern, k, got, oracle, want)
			}
			if got {
				matched++
				checkGlobPrefixes(t, g, pattern, k)
			}
			// Soundness from the other side: a prefix ruled out has no matching key.
			for i := 0; i <= len(k); i++ {
				if !g.MayMatchUnder(k[:i]) && got {
					t.Fatalf("%q: MayMatchUnder(%q) false but %q matches", pattern, k[:i], k)
				}
			}
		}
	}
	if matched < globRandomRounds() {
		t.Errorf("only %d matching keys checked; the generator is too weak", matched)
	}
}

// TestGlobAgainstPathMatch checks that the syntax shared with path.Match means the same.
func TestGlobAgainstPathMatch(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	gg := &genGlob{r: r, pathMatchSubset: true}
	agreeTrue := 0
	for range globRandomRounds() {
		pattern, _, key, _ := gg.pattern()
		g, err := CompileGlob(pattern)
		if err != nil {
			t.Fatalf("CompileGlob(%q): %v", pattern, err)
		}
		for _, k := range []string{key, mutate(r, key), randomKey(r, 5)} {
			if !pathMatchComparable(pattern, k) {
				continue
			}
			want, err := path.Match(pattern, k)
			if err != nil {
				t.Fatalf("path.Match(%q): %v", pattern, err)
			}
			if got := g.Match(k); got != want {
				t.Fatalf("%q.Match(%q) = %v, path.Match says %v", pattern, k, got, want)
			}
			if want {
				agreeTrue++
			}
		}
	}
	if agreeTrue < globRandomRounds()/4 {
		t.Errorf("only %d matches compared; the generator is too weak", agreeTrue)
	}
}

// pathMatchComparable reports whether pattern and key lie where path.Match and CompileGlob
// must agree: valid UTF-8; no "**", no '!' negation, no escapes in classes; no '/' in the
// key for a pattern with a class (path.Match's classes may match '/'); and an ASCII key
// for a pattern with a '*', because path.Match's '*' steps over bytes, not characters,
// and so can stop inside a multi-byte rune: path.Match("*[^[-é]", "aé") is true, the class
// matching the stray second byte of "é", although neither character of "aé" is outside
// the class.
func pathMatchComparable(pattern, key string) bool {
	return utf8.ValidString(pattern) && utf8.ValidString(key) &&
		!strings.Contains(pattern, "**") && !strings.Contains(pattern, "[!") &&
		!classEscapes(pattern) &&
		(!strings.Contains(pattern, "[") || !strings.Contains(key, "/")) &&
		(!strings.Contains(pattern, "*") || isASCII(key))
}

// classEscapes reports whether pattern may hold a '\' inside a class (conservatively: a
// '\' after a '[').
func classEscapes(pattern string) bool {
	i := strings.IndexByte(pattern, '[')
	return i >= 0 && strings.Contains(pattern[i:], "\\")
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// escapeGlob returns a pattern that matches exactly s.
func escapeGlob(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if strings.IndexByte("*?[\\", s[i]) >= 0 {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func FuzzGlob(f *testing.F) {
	for _, seed := range [][2]string{
		{"logs/2024-*/part-?.gz", "logs/2024-01-02/part-3.gz"},
		{"a/**/b", "a/x/y/b"},
		{"**a**a**b", "aaaab"},
		{"[^a-c]?[!x]", "dé/"},
		{"\\*[\\]\\-]*", "*]xyz"},
		{"é[é-ü]\xff*", "éö\xffa"},
		{"[z-a]", "b"},
		{"x/\xe2\x82*", "x/\xe2\x82\xac"},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, pattern, key string) {
		if len(key) > 1024 || len(pattern) > 4096 {
			return // S3 keys are at most 1024 bytes; checking every prefix is quadratic
		}
		// An escaped key matches exactly itself, whatever its bytes.
		if e := mustGlob(t, escapeGlob(key)); key != "" && (!e.Match(key) || e.Match(key+"x") || e.LiteralPrefix() != key) {
			t.Fatalf("escaped %q does not match exactly itself", key)
		}

		g, err := CompileGlob(pattern)
		if err != nil || g == nil {
			return // g == nil: "" is no glob, covered by TestGlobEmptyPatternIsNoGlob
		}
		got := g.Match(key)
		if got {
			checkGlobPrefixes(t, g, pattern, key)
		} else {
			for i := 0; i <= len(key); i++ {
				g.MayMatchUnder(key[:i]) // must not panic
			}
		}
		if pathMatchComparable(pattern, key) {
			if want, err := path.Match(pattern, key); err == nil && got != want {
				t.Fatalf("%q.Match(%q) = %v, path.Match says %v", pattern, key, got, want)
			}
		}
	})
}

func BenchmarkGlobMatch(b *testing.B) {
	as := strings.Repeat("a", 10000)
	for _, bc := range []struct{ name, pattern, key string }{
		{"typical", "logs/2024-*/part-?.gz", "logs/2024-01-02/part-3.gz"},
		{"typical-miss", "logs/2024-*/part-?.gz", "logs/2024-01-02/part-33.gz"},
		{"doublestar", "data/**/[0-9][0-9].json", "data/region=eu/year=2024/month=01/42.json"},
		{"pathological-star", "*a*a*a*a*a*a*b", as},
		{"pathological-doublestar", "**a**a**a**a**a**a**b", as},
	} {
		g := mustGlob(b, bc.pattern)
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(bc.key)))
			for b.Loop() {
				g.Match(bc.key)
			}
		})
	}
}
