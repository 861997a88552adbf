package listing

import (
	"fmt"
	"strings"
	"testing"
)

func mustGlob(t testing.TB, pattern string) *Glob {
	t.Helper()
	g, err := CompileGlob(pattern)
	if err != nil {
		t.Fatalf("CompileGlob(%q): %v", pattern, err)
	}
	return g
}

func TestGlobMatch(t *testing.T) {
	for _, tc := range []struct {
		pattern, key string
		want         bool
	}{
		// Literals and anchoring: the whole key must match.
		{"abc", "abc", true},
		{"abc", "abcd", false},
		{"abc", "xabc", false},
		{"abc", "ab", false},
		{"a/b", "a/b", true},
		{"é/ü", "é/ü", true},

		// '*': any run without '/'.
		{"*", "", true},
		{"*", "abc", true},
		{"*", "a/b", false},
		{"a*", "a", true},
		{"a*c", "abbbc", true},
		{"a*c", "ab/bc", false},
		{"*/*", "a/b", true},
		{"*/*", "a/b/c", false},
		{"*.gz", "x.gz", true},
		{"*.gz", "dir/x.gz", false},
		{"*a*b", "xaxxb", true},
		{"*a*b", "xa/b", false},
		{"a*b*c", "abXbc", true},
		{"*é", "ééé", true},

		// '?': exactly one character without '/'.
		{"?", "a", true},
		{"?", "", false},
		{"?", "ab", false},
		{"?", "/", false},
		{"a?c", "abc", true},
		{"a?c", "a/c", false},
		{"?", "é", true},   // one rune, two bytes
		{"??", "é", false}, // not two characters
		{"?", "\xff", true},
		{"??", "\xe2\x82", true}, // incomplete sequence: two invalid bytes, two characters
		{"?", "\xe2\x82\xac", true},

		// "**": any run, '/' included; purely "any run".
		{"**", "", true},
		{"**", "a/b/c", true},
		{"a/**", "a/", true},
		{"a/**", "a/x", true},
		{"a/**", "a/x/y/z", true},
		{"a/**", "a", false},
		{"a/**", "b/x", false},
		{"a/**/b", "a/b", false}, // no special case: "/**/" needs both slashes
		{"a/**/b", "a//b", true},
		{"a/**/b", "a/x/b", true},
		{"a/**/b", "a/x/y/b", true},
		{"a**b", "a/x/b", true},
		{"**/*.gz", "x.gz", false},
		{"**/*.gz", "/x.gz", true},
		{"**/*.gz", "a/b/x.gz", true},
		{"**/*.gz", "a/b.gz/x", false},
		{"***", "a/b", true},   // three stars are "**"
		{"a***b", "a/b", true}, //
		{"a****b", "ab", true},

		// Classes.
		{"[abc]", "b", true},
		{"[abc]", "d", false},
		{"[abc]", "", false},
		{"[abc]", "ab", false},
		{"[a-c]", "b", true},
		{"[a-c]", "d", false},
		{"[a-cx-z]", "y", true},
		{"[^a-c]", "d", true},
		{"[^a-c]", "b", false},
		{"[!a-c]", "d", true},
		{"[!a-c]", "b", false},
		{"[^!]", "!", false},
		{"[^!]", "a", true},
		{"[a!]", "!", true},
		{"[a^]", "^", true},
		{"[\\^]", "^", true},
		{"[\\]]", "]", true},
		{"[\\]a]", "a", true},
		{"[\\-]", "-", true},
		{"[a\\-z]", "-", true},
		{"[a\\-z]", "b", false},
		{"[\\a-\\c]", "b", true},
		{"[\\\\]", "\\", true},
		{"[*?[]", "[", true},
		{"[*?[]", "*", true},
		{"[é-ü]", "ö", true},
		{"[é-ü]", "e", false},
		{"[^é]", "é", false},
		{"[^é]", "e", true},
		{"[^a]", "\xff", true},      // a stray byte is a character outside every class
		{"[\uFFFD]", "\xff", false}, // even a class holding U+FFFD
		{"[\uFFFD]", "\uFFFD", true},
		// A class never matches '/', negated or not, like '*' and '?'.
		{"[^a]", "/", false},
		{"[!a]", "/", false},
		{"[/]", "/", false},
		{"[+-0]", "/", false},
		{"[+-0]", "0", true},
		{"a[^x]b", "a/b", false},

		// Escapes outside classes match literally.
		{"\\*", "*", true},
		{"\\*", "a", false},
		{"\\?", "?", true},
		{"\\?", "a", false},
		{"\\[a]", "[a]", true},
		{"\\[a]", "a", false},
		{"\\\\", "\\", true},
		{"\\a", "a", true},
		{"\\é", "é", true},
		{"a\\**", "a*bc", true},
		{"a\\**", "abc", false},
		{"\\**", "*", true},
		{"\\***", "*/x", true},
		{"*\\*", "x*", true},

		// Invalid UTF-8 in keys and patterns.
		{"*", "\xff\xfe", true},
		{"a\xffb", "a\xffb", true},
		{"a\xffb", "a\xfeb", false},
		{"\xc3*", "\xc3x", true},
		{"\xc3*", "é", false}, // the key's "\xc3\xa9" is one character, not "\xc3"
		{"**", "\xc3", true},
		{"\xc3\\\xa9", "\xc3\xa9", false}, // two stray bytes in the pattern, one character in the key
		{"\xc3\\\xa9*", "\xc3\xa9", false},
		{"\xc3\\*\xa9", "\xc3*\xa9", true},

		// Typical keys.
		{"logs/2024-*/part-?.gz", "logs/2024-01-02/part-3.gz", true},
		{"logs/2024-*/part-?.gz", "logs/2024-01-02/part-33.gz", false},
		{"logs/2024-*/part-?.gz", "logs/2024-01/02/part-3.gz", false},
		{"logs/2024-*/part-?.gz", "logs/2023-01-02/part-3.gz", false},
		{"data/**/[0-9][0-9].json", "data/x/y/42.json", true},
		{"data/**/[0-9][0-9].json", "data/x/y/4a.json", false},
	} {
		if got := mustGlob(t, tc.pattern).Match(tc.key); got != tc.want {
			t.Errorf("%q.Match(%q) = %v, want %v", tc.pattern, tc.key, got, tc.want)
		}
	}
}

func TestGlobEmptyPatternIsNoGlob(t *testing.T) {
	g, err := CompileGlob("")
	if err != nil || g != nil {
		t.Fatalf(`CompileGlob("") = %v, %v; want nil, nil`, g, err)
	}
	for _, key := range []string{"", "a", "a/b/c", "\xff"} {
		if !g.Match(key) || !g.MayMatchUnder(key) {
			t.Errorf("nil glob rejects %q", key)
		}
	}
	if p := g.LiteralPrefix(); p != "" {
		t.Errorf("nil glob LiteralPrefix = %q", p)
	}
	if s := g.String(); s != "" {
		t.Errorf("nil glob String = %q", s)
	}
	if s := mustGlob(t, "a/**").String(); s != "a/**" {
		t.Errorf(`"a/**" String = %q`, s)
	}
}

func TestGlobCompileErrors(t *testing.T) {
	for _, tc := range []struct{ pattern, want string }{
		{"logs/[a-", `"logs/[a-" is not a valid glob: unterminated character class at offset 5`},
		{"[", "unterminated character class at offset 0"},
		{"a[bc", "unterminated character class at offset 1"},
		{"[^", "unterminated character class at offset 0"},
		{"[a\\", "unterminated character class at offset 0"},
		{"[\\]", "unterminated character class at offset 0"},
		{"x\\", `"x\\" is not a valid glob: trailing \ at offset 1`},
		{"\\", "trailing \\ at offset 0"},
		{"[]", "empty character class at offset 0"},
		{"a[]b]", "empty character class at offset 1"},
		{"[^]", "empty character class at offset 0"},
		{"[!]", "empty character class at offset 0"},
		{"[z-a]", "bad range z-a at offset 1"},
		{"ab[x-é-]", "unescaped - at offset 7"},
		{"[é-a]", "bad range é-a at offset 1"},
		{"[-a]", "unescaped - at offset 1"},
		{"[a-]", "unescaped - at offset 2"},
		{"[a-b-c]", "unescaped - at offset 4"},
		{"[\xff]", "invalid UTF-8 at offset 1"},
	} {
		g, err := CompileGlob(tc.pattern)
		if err == nil {
			t.Errorf("CompileGlob(%q) = %v, want error %q", tc.pattern, g, tc.want)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), fmt.Sprintf("%q is not a valid glob: ", tc.pattern)) {
			t.Errorf("CompileGlob(%q) error = %q, want it to contain %q", tc.pattern, err, tc.want)
		}
	}
}

func TestGlobLiteralPrefix(t *testing.T) {
	for _, tc := range []struct{ pattern, want string }{
		{"logs/2024-*/part-?.gz", "logs/2024-"},
		{"abc", "abc"},
		{"*abc", ""},
		{"[a]bc", ""},
		{"?", ""},
		{"a\\*b*", "a*b"},
		{"a\\[b?", "a[b"},
		{"a/**", "a/"},
		{"é\\\\x[y]", "é\\x"},
	} {
		if got := mustGlob(t, tc.pattern).LiteralPrefix(); got != tc.want {
			t.Errorf("%q.LiteralPrefix() = %q, want %q", tc.pattern, got, tc.want)
		}
	}
}

func TestGlobMayMatchUnder(t *testing.T) {
	for _, tc := range []struct {
		pattern, prefix string
		want            bool
	}{
		{"logs/2024-*/part-?.gz", "", true},
		{"logs/2024-*/part-?.gz", "lo", true},
		{"logs/2024-*/part-?.gz", "logs/", true},
		{"logs/2024-*/part-?.gz", "logs/2024-01-02/", true},
		{"logs/2024-*/part-?.gz", "logs/2023-12-31/", false},
		{"logs/2024-*/part-?.gz", "other/", false},
		{"logs/2024-*/part-?.gz", "logs/2024-01/x/", false}, // '*' cannot span the extra folder
		{"logs/2024-*/part-?.gz", "logs/2024-01/part-1.gz", true},
		{"logs/2024-*/part-?.gz", "logs/2024-01/part-1.gzx", false},
		{"logs/2024-*/part-?.gz", "logs/2024-01/part-12", false},
		{"abc", "ab", true},
		{"abc", "abc", true},
		{"abc", "abcd", false},
		{"a/**", "a/x/y/z/", true},
		{"a/**", "b/", false},
		{"**/x", "q/r/s/", true},
		{"*/*/x", "a/b/", true},
		{"*/*/x", "a/b/c/", false},
		{"*/[0-9]/x", "a/b", false},
		{"*/[0-9]/x", "a/5", true},
		{"*/[^0-9]/x", "a/5", false},
		{"a?", "a/", false},
		// A prefix that ends inside a UTF-8 sequence.
		{"é", "\xc3", true},
		{"ü", "\xc3", true},
		{"e", "\xc3", false},
		{"x/é", "x/\xc3", true},
		{"x/*", "x/\xe2\x82", true},
		{"x/??", "x/\xe2\x82", true},   // the two bytes may stay two characters
		{"x/\xe2\x82", "x/\xe2", true}, // stray bytes in the pattern
		{"?[^a]", "\xe2\x82", true},
	} {
		if got := mustGlob(t, tc.pattern).MayMatchUnder(tc.prefix); got != tc.want {
			t.Errorf("%q.MayMatchUnder(%q) = %v, want %v", tc.pattern, tc.prefix, got, tc.want)
		}
	}
}

// TestGlobLongPattern covers patterns too long for the stack state sets.
func TestGlobLongPattern(t *testing.T) {
	var p, k strings.Builder
	for i := range 300 {
		p.WriteString("?*")
		fmt.Fprintf(&k, "%d", i%10)
	}
	p.WriteString("/**x")
	k.WriteString("/a/b/x")
	g := mustGlob(t, p.String())
	if g.words <= globInlineWords {
		t.Fatalf("pattern of %d tokens fits the stack sets; make it longer", len(g.toks))
	}
	for range 3 {
		if !g.Match(k.String()) {
			t.Errorf("long pattern does not match")
		}
		if g.Match(k.String()[1:]) {
			t.Errorf("long pattern matches a key one character short")
		}
		if !g.MayMatchUnder(k.String()[:305]) || g.MayMatchUnder("/") {
			t.Errorf("long pattern: MayMatchUnder wrong")
		}
	}
}

func TestGlobMatchDoesNotAllocate(t *testing.T) {
	g := mustGlob(t, "logs/2024-*/**/part-[0-9]?.gz")
	key := "logs/2024-01-02/x/y/part-3é.gz"
	if !g.Match(key) {
		t.Fatalf("no match")
	}
	if n := testing.AllocsPerRun(100, func() { g.Match(key) }); n != 0 {
		t.Errorf("match allocates %v times per call", n)
	}
	if n := testing.AllocsPerRun(100, func() { g.MayMatchUnder("logs/2024-01-02/x/") }); n != 0 {
		t.Errorf("MayMatchUnder allocates %v times per call", n)
	}
}

// TestGlobPathological runs patterns that take exponential time in a backtracking matcher.
// Only the results are asserted; BenchmarkGlobMatch measures the time.
func TestGlobPathological(t *testing.T) {
	as := strings.Repeat("a", 10000)
	for _, tc := range []struct {
		pattern, key string
		want         bool
	}{
		{"**a**a**a**a**a**a**b", as, false},
		{"**a**a**a**a**a**a**b", as + "b", true},
		{"*a*a*a*a*a*a*b", as, false},
		{"*a*a*a*a*a*a*b", as + "b", true},
		{"*a*a*a*a*a*a*b", as + "/b", false},
		{"**a*a**a*a**a*a*b", as + "/" + as + "b", true},
		{strings.Repeat("a*", 50) + "b", as, false},
	} {
		if got := mustGlob(t, tc.pattern).Match(tc.key); got != tc.want {
			t.Errorf("%q.Match(%d chars) = %v, want %v", tc.pattern, len(tc.key), got, tc.want)
		}
	}
}
