package checksum

// A reflected CRC of width w over polynomial p, with the bit of x^0 in bit w-1 (the
// reflected form hash/crc32 and hash/crc64 use). For CRCs whose initial value and final
// xor are all ones, as all of S3's are, crc(A‖B) = crc(A)·x^(8|B|) mod p ⊕ crc(B): the
// conditioning terms cancel (zlib's crc32_combine, Mark Adler's multmodp form).
type gf2 struct {
	width uint
	rev   uint64     // the polynomial, reflected, without its x^w term
	x2n   [64]uint64 // x^(2^k) mod p
}

func newGF2(width uint, rev uint64) *gf2 {
	g := &gf2{width: width, rev: rev}
	p := uint64(1) << (width - 2) // x^1
	g.x2n[0] = p
	for k := 1; k < len(g.x2n); k++ {
		p = g.mul(p, p)
		g.x2n[k] = p
	}
	return g
}

// mul returns a·b mod p.
func (g *gf2) mul(a, b uint64) uint64 {
	m := uint64(1) << (g.width - 1)
	var prod uint64
	for a != 0 {
		if a&m != 0 {
			prod ^= b
			a &^= m
		}
		m >>= 1
		if b&1 != 0 {
			b = b>>1 ^ g.rev
		} else {
			b >>= 1
		}
	}
	return prod
}

// xPow8n returns x^(8n) mod p.
func (g *gf2) xPow8n(n int64) uint64 {
	p := uint64(1) << (g.width - 1) // x^0
	k := 3                          // x^(2^3) = x^8: one byte
	for u := uint64(n); u != 0; u >>= 1 {
		if u&1 != 0 {
			p = g.mul(g.x2n[k%len(g.x2n)], p)
		}
		k++
	}
	return p
}

// combine returns the CRC of A‖B from crcA, crcB and B's length.
func (g *gf2) combine(crcA, crcB uint64, lenB int64) uint64 {
	if lenB <= 0 {
		return crcA
	}
	return g.mul(g.xPow8n(lenB), crcA) ^ crcB
}
