package checksum

import (
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"hash/crc64"
	"math/rand/v2"
	"testing"
)

// The AWS SDK's own vectors (service/internal/checksum algorithms_test.go), as S3's
// headers carry them.
func TestVectors(t *testing.T) {
	for _, c := range []struct {
		a    Algorithm
		want string
	}{{CRC32, "DUoRhQ=="}, {CRC32C, "yZRlqg=="}, {CRC64NVME, "jSnVw/bqjr4="}} {
		v := c.a.Update(0, []byte("hello world"))
		if got := c.a.Encode(v); got != c.want {
			t.Errorf("%s(hello world) = %s, want %s", c.a, got, c.want)
		}
		back, err := c.a.Decode(c.want)
		if err != nil || back != v {
			t.Errorf("%s.Decode(%s) = %x, %v; want %x", c.a, c.want, back, err, v)
		}
	}
	// CRC-64/NVME's catalogued check value (the CRC of "123456789").
	if got := CRC64NVME.Update(0, []byte("123456789")); got != 0xae8b14860a799888 {
		t.Errorf("CRC64NVME(123456789) = %x", got)
	}
	// The standard library's table-driven CRC-64 over the same polynomial agrees.
	tab := crc64.MakeTable(polyCRC64NVME)
	b := randomBytes(1<<20+13, 1)
	if got, want := CRC64NVME.Update(0, b), crc64.Checksum(b, tab); got != want {
		t.Errorf("CRC64NVME of 1 MiB = %x, hash/crc64 %x", got, want)
	}
}

// Combining the values of any split equals the value of the whole, also across
// incremental updates, for every length up to a few KiB and some large ones.
func TestCombineAnySplit(t *testing.T) {
	b := randomBytes(4<<10, 2)
	r := rand.New(rand.NewPCG(3, 4))
	for _, a := range []Algorithm{CRC32, CRC32C, CRC64NVME} {
		for range 2000 {
			n := r.IntN(len(b) + 1)
			cut := r.IntN(n + 1)
			whole := a.Update(0, b[:n])
			if got := a.Combine(a.Update(0, b[:cut]), a.Update(0, b[cut:n]), int64(n-cut)); got != whole {
				t.Fatalf("%s: combine at %d of %d = %x, want %x", a, cut, n, got, whole)
			}
			if got := a.Update(a.Update(0, b[:cut]), b[cut:n]); got != whole {
				t.Fatalf("%s: update at %d of %d = %x, want %x", a, cut, n, got, whole)
			}
		}
		// Many pieces, then a large B: a 16 MiB part combined after 3 MiB.
		big := randomBytes(19<<20, 5)
		var acc uint64
		var off int
		for _, n := range []int{1, 0, 4095, 3<<20 - 4096, 16 << 20} {
			acc = a.Combine(acc, a.Update(0, big[off:off+n]), int64(n))
			off += n
		}
		if want := a.Update(0, big); acc != want {
			t.Fatalf("%s: pieces of 19 MiB combine to %x, want %x", a, acc, want)
		}
	}
}

func TestVerifierFullObject(t *testing.T) {
	b := randomBytes(10000, 6)
	for _, a := range []Algorithm{CRC32, CRC32C, CRC64NVME} {
		st := &Stored{Algorithm: a, Type: FullObject, Value: a.Encode(a.Update(0, b))}
		if err := st.Check(int64(len(b))); err != nil {
			t.Fatal(err)
		}
		if err := verify(st, b, []int{0, 3000, 3001, 7000}); err != nil {
			t.Fatalf("%s: %v", a, err)
		}
		bad := append([]byte(nil), b...)
		bad[5000] ^= 1
		err := verify(st, bad, []int{0, 3000, 3001, 7000})
		m, ok := err.(*Mismatch)
		if !ok || m.Algorithm != a || m.Expected != st.Value || m.Computed != a.Encode(a.Update(0, bad)) {
			t.Fatalf("%s: one flipped bit: %v", a, err)
		}
	}
}

// A composite value is the checksum of the parts' checksums; parts are checked against
// their own values where given, whatever the fetched parts' boundaries.
func TestVerifierComposite(t *testing.T) {
	b := randomBytes(25000, 7)
	sizes := []int64{8192, 8192, 8192, 424}
	for _, a := range []Algorithm{CRC32, CRC32C, CRC64NVME} {
		var parts []Part
		var ofParts uint64
		var off int64
		for _, n := range sizes {
			v := a.Update(0, b[off:off+n])
			parts = append(parts, Part{Size: n, Value: a.Encode(v)})
			var be [8]byte
			for i := range a.Size() {
				be[i] = byte(v >> (8 * (a.Size() - 1 - i)))
			}
			ofParts = a.Update(ofParts, be[:a.Size()])
			off += n
		}
		st := &Stored{Algorithm: a, Type: Composite, Value: a.Encode(ofParts) + "-4", Parts: parts}
		if err := st.Check(int64(len(b))); err != nil {
			t.Fatal(err)
		}
		cuts := []int{0, 5000, 10000, 16384, 20000}
		if err := verify(st, b, cuts); err != nil {
			t.Fatalf("%s: %v", a, err)
		}
		bad := append([]byte(nil), b...)
		bad[9000] ^= 0x80
		if m, ok := verify(st, bad, cuts).(*Mismatch); !ok || m.Part != 2 {
			t.Fatalf("%s: a flipped bit in part 2: %v", a, m)
		}
		// Without the parts' own values, the composite value catches it at the end.
		anon := *st
		anon.Parts = []Part{{Size: 8192}, {Size: 8192}, {Size: 8192}, {Size: 424}}
		if err := verify(&anon, b, cuts); err != nil {
			t.Fatalf("%s: %v", a, err)
		}
		if m, ok := verify(&anon, bad, cuts).(*Mismatch); !ok || m.Part != 0 || m.Expected != st.Value {
			t.Fatalf("%s: a flipped bit, composite value only: %v", a, m)
		}
	}
}

// verify hashes b in fetched parts starting at cuts, as the fetcher does, and folds them.
func verify(st *Stored, b []byte, cuts []int) error {
	v := NewVerifier(st, int64(len(b)))
	for i, c := range cuts {
		end := len(b)
		if i+1 < len(cuts) {
			end = cuts[i+1]
		}
		for _, p := range Hash(st.Algorithm, st.Ends(), int64(c), b[c:end], nil) {
			if err := v.Add(p); err != nil {
				return err
			}
		}
	}
	if !v.Done() {
		return errNotDone
	}
	return nil
}

var errNotDone = &Mismatch{Expected: "the whole object"}

func randomBytes(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, seed))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// SHA-1 and SHA-256, full-object and composite, hashed in order however the bytes arrive.
func TestSequential(t *testing.T) {
	b := randomBytes(25000, 8)
	sizes := []int64{8192, 8192, 8192, 424}
	for _, a := range []Algorithm{SHA1, SHA256} {
		sum := func(p []byte) []byte {
			if a == SHA1 {
				s := sha1.Sum(p)
				return s[:]
			}
			s := sha256.Sum256(p)
			return s[:]
		}
		full := &Stored{Algorithm: a, Type: FullObject, Value: base64.StdEncoding.EncodeToString(sum(b))}
		var parts []Part
		var digests []byte
		var off int64
		for _, n := range sizes {
			d := sum(b[off : off+n])
			parts = append(parts, Part{Size: n})
			digests = append(digests, d...)
			off += n
		}
		composite := &Stored{Algorithm: a, Type: Composite, Value: base64.StdEncoding.EncodeToString(sum(digests)) + "-4", Parts: parts}
		bad := append([]byte(nil), b...)
		bad[20000] ^= 4
		for _, st := range []*Stored{full, composite} {
			if err := st.Check(int64(len(b))); err != nil {
				t.Fatal(err)
			}
			for _, data := range [][]byte{b, bad} {
				s := NewSequential(st, int64(len(data)))
				var err error
				for _, r := range [][2]int{{0, 5000}, {5000, 16385}, {16385, 25000}} {
					if err = s.Write(data[r[0]:r[1]]); err != nil {
						break
					}
				}
				if good := &data[0] == &b[0]; good != (err == nil) || good && !s.Done() {
					t.Errorf("%s %s, intact %v: %v", a, st.Type, good, err)
				}
				if m, ok := err.(*Mismatch); err != nil && (!ok || m.Expected != st.Value) {
					t.Errorf("%s %s: %v", a, st.Type, err)
				}
			}
		}
	}
}
