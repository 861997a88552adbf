package checksum

import (
	"fmt"
	"sort"
)

// Piece is the checksum of n consecutive bytes of an object, none of which crosses the
// end of a composite object's part (Hash cuts at them).
type Piece struct {
	N   int64
	CRC uint64
}

// Hash appends to pieces the checksums of b, the bytes of an object from offset off, cut
// at ends (Stored.Ends): what one ranged part contributes, computed on the goroutine that
// fetched it.
func Hash(a Algorithm, ends []int64, off int64, b []byte, pieces []Piece) []Piece {
	i := sort.Search(len(ends), func(i int) bool { return ends[i] > off })
	for len(b) > 0 {
		n := int64(len(b))
		if i < len(ends) && ends[i]-off < n {
			n = ends[i] - off
			i++
		}
		pieces = append(pieces, Piece{N: n, CRC: a.Update(0, b[:n])})
		b, off = b[n:], off+n
	}
	return pieces
}

// Mismatch is an object whose bytes do not match its stored checksum: its reason is
// corrupt.
type Mismatch struct {
	Algorithm Algorithm
	Type      Type
	// Part is the composite part (1-based) whose own value failed; 0 for the object's.
	Part               int
	Expected, Computed string
}

func (e *Mismatch) Error() string {
	what := "the object's " + string(e.Type)
	if e.Part > 0 {
		what = fmt.Sprintf("part %d's", e.Part)
	}
	return fmt.Sprintf("%s checksum mismatch: %s %s stored, %s computed from the bytes read", e.Algorithm, what, e.Expected, e.Computed)
}

// Verifier folds one object's pieces, in object order from its first byte, and checks
// them against its stored checksum: each composite part as its end is reached (where
// the server gave the part's value), and the object's value at its end.
type Verifier struct {
	st   *Stored
	size int64
	ends []int64
	pos  int64
	// crc is the value of the bytes since the start of the current part (the object's
	// start for a full-object checksum).
	crc  uint64
	part int
	// ofParts is the checksum of the part values so far, each as its big-endian bytes:
	// what a composite value is.
	ofParts uint64
}

// NewVerifier returns the verifier of an object of size bytes, whose stored checksum st
// passed st.Check(size).
func NewVerifier(st *Stored, size int64) *Verifier {
	return &Verifier{st: st, size: size, ends: st.Ends()}
}

// Add folds the next piece in and checks what it completes.
func (v *Verifier) Add(p Piece) error {
	a := v.st.Algorithm
	v.crc = a.Combine(v.crc, p.CRC, p.N)
	v.pos += p.N
	if v.st.Type != Composite {
		if v.pos == v.size {
			return v.compare(0, v.st.Value, v.crc)
		}
		return nil
	}
	if v.part >= len(v.ends) || v.pos != v.ends[v.part] {
		return nil
	}
	if want := v.st.Parts[v.part].Value; want != "" {
		if err := v.compare(v.part+1, want, v.crc); err != nil {
			return err
		}
	}
	var be [8]byte
	for i := range a.Size() {
		be[i] = byte(v.crc >> (8 * (a.Size() - 1 - i)))
	}
	v.ofParts = a.Update(v.ofParts, be[:a.Size()])
	v.crc = 0
	v.part++
	if v.part == len(v.ends) {
		return v.compare(0, v.st.Value, v.ofParts)
	}
	return nil
}

// Done reports whether every byte of the object has been added.
func (v *Verifier) Done() bool { return v.pos == v.size }

func (v *Verifier) compare(part int, want string, got uint64) error {
	computed := v.st.Algorithm.Encode(got)
	if part == 0 && v.st.Type == Composite {
		computed += fmt.Sprintf("-%d", len(v.ends))
	}
	if computed == want {
		return nil
	}
	return &Mismatch{Algorithm: v.st.Algorithm, Type: v.st.Type, Part: part, Expected: want, Computed: computed}
}
