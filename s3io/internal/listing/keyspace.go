package listing

import (
	"slices"
	"strings"
)

// Key-space arithmetic: where to cut a range of keys that has not been listed yet.

// keyBetween reports whether a key of the sorted objects lies strictly between a and b.
func keyBetween(objects []Object, a, b string) bool {
	i, _ := slices.BinarySearchFunc(objects, a, func(o Object, k string) int { return strings.Compare(o.Key, k) })
	for ; i < len(objects); i++ {
		if k := objects[i].Key; k > a {
			return k < b
		}
	}
	return false
}

func commonPrefix(a, b string) string {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return a[:i]
		}
	}
	return a[:n]
}

// alphabet is the set of ASCII characters the listed keys use. Cut points are spread over
// it rather than over all 256 byte values, so that a cut between two keys made of digits
// and letters lands among digits and letters, where keys are, and not in the gap between
// "9" and "A" or past "z". Non-ASCII bytes are left out so that every cut is valid UTF-8,
// as S3 requires of StartAfter; a key that uses them still sorts correctly, it is only cut
// less finely.
type alphabet struct {
	seen  [128]bool
	chars []byte // sorted; rebuilt when seen changes
}

// alphabetDigits is how many characters past a common prefix positions are computed over:
// (95+1)^7 < 2^53, so a position is exact in a float64.
const alphabetDigits = 7

func (a *alphabet) add(s string) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 128 && !a.seen[c] {
			a.seen[c] = true
			a.chars = a.chars[:0]
		}
	}
}

func (a *alphabet) sorted() []byte {
	if len(a.chars) == 0 {
		for c := range a.seen {
			if a.seen[c] {
				a.chars = append(a.chars, byte(c))
			}
		}
	}
	return a.chars
}

// value maps s, which starts with base, to [0, 1) so that the order of values is the order
// of strings (to alphabetDigits characters past base): the characters are digits of a
// number in base len(alphabet)+1, where 0 stands for "the string has ended".
func (a *alphabet) value(s, base string) float64 {
	chars := a.sorted()
	radix := float64(len(chars) + 1)
	s = s[min(len(base), len(s)):]
	v, scale := 0.0, 1.0
	for i := 0; i < alphabetDigits && i < len(s); i++ {
		scale /= radix
		v += a.digit(chars, s[i]) * scale
	}
	return v
}

// digit is c's place among chars, counting from 1; a character that is not among them
// falls half-way between its neighbours.
func (a *alphabet) digit(chars []byte, c byte) float64 {
	lo, hi := 0, len(chars)
	for lo < hi {
		m := (lo + hi) / 2
		if chars[m] < c {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < len(chars) && chars[lo] == c {
		return float64(lo + 1)
	}
	return float64(lo) + 0.5
}

// between returns up to pieces-1 strictly increasing cut points strictly after from and,
// when bounded, strictly before to, spread evenly over the alphabet's positions.
func (a *alphabet) between(from, to string, bounded bool, pieces int) []string {
	chars := a.sorted()
	if len(chars) == 0 || pieces < 2 {
		return nil
	}
	base := ""
	if bounded {
		base = commonPrefix(from, to)
	}
	lo, hi := a.value(from, base), 1.0
	if bounded {
		hi = a.value(to, base)
	}
	radix := float64(len(chars) + 1)
	var cuts []string
	buf := []byte(base)
	for j := 1; j < pieces; j++ {
		v := lo + (hi-lo)*float64(j)/float64(pieces)
		b := buf[:len(base)]
		for range alphabetDigits {
			v *= radix
			d := int(v)
			v -= float64(d)
			if d == 0 {
				break
			}
			b = append(b, chars[min(d, len(chars))-1])
		}
		cut := string(b)
		if cut > from && (!bounded || cut < to) && (len(cuts) == 0 || cut > cuts[len(cuts)-1]) {
			cuts = append(cuts, cut)
		}
	}
	return cuts
}
