package listing

import (
	"math/rand/v2"
	"testing"
)

// TestAlphabetCuts: cut points are strictly increasing, strictly between their bounds, and
// made of the alphabet's characters (so valid UTF-8).
func TestAlphabetCuts(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	var a alphabet
	a.add("part-0123456789abcdefXYZ/._")
	chars := []byte("-./0123456789abcXYZ_")
	randKey := func() string {
		b := make([]byte, 1+rng.IntN(10))
		for i := range b {
			b[i] = chars[rng.IntN(len(chars))]
		}
		return string(b)
	}
	for range 20000 {
		from, to := randKey(), randKey()
		if from > to {
			from, to = to, from
		}
		bounded := rng.IntN(4) > 0
		cuts := a.between(from, to, bounded, 2+rng.IntN(30))
		prev := from
		for _, c := range cuts {
			if c <= prev || bounded && c >= to {
				t.Fatalf("between(%q, %q, %v) gave %q out of order in %q", from, to, bounded, c, cuts)
			}
			prev = c
		}
	}
	if cuts := a.between("part-0000999", "", false, 16); len(cuts) != 15 {
		t.Errorf("an open range cut into %d pieces, want 16: %q", len(cuts)+1, cuts)
	}
}
