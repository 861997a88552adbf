package s3io

import (
	"fmt"
	"math"
	"testing"
)

// Bit widths of a packed position: 2^20 members and 2^43 records per object, more than the
// 5 TiB S3 object limit holds even as one-byte records. Packing is what a position's order
// would take as one int64; only these tests use it, to check that the order is total.
const (
	memberBits = 20
	recordBits = 43
)

// pack encodes p into one int64 that orders like p: the member in the high 20 bits, the
// record index in the low 43. It fails for a position outside those widths.
func (p position) pack() (int64, error) {
	if p.Member < 0 || p.Member >= 1<<memberBits || p.Index < 0 || p.Index >= 1<<recordBits {
		return 0, fmt.Errorf("s3io: %v does not fit a packed position (members < 2^%d, records < 2^%d)", p, memberBits, recordBits)
	}
	return int64(p.Member)<<recordBits | p.Index, nil
}

// unpackPosition is the inverse of position.pack.
func unpackPosition(v int64) position {
	return position{Member: int(v >> recordBits), Index: v & (1<<recordBits - 1)}
}

func TestPositionPackRoundTrip(t *testing.T) {
	const maxMember = 1<<20 - 1
	const maxRecord = int64(1)<<43 - 1
	cases := []struct {
		p    position
		want int64
	}{
		{rtPos(0, 0), 0},
		{rtPos(0, 1), 1},
		{rtPos(1, 0), 1 << 43},
		{rtPos(1, 1), 1<<43 + 1},
		{rtPos(0, maxRecord), maxRecord},
		{rtPos(maxMember, 0), int64(maxMember) << 43},
		{rtPos(maxMember, maxRecord), math.MaxInt64},
		{rtPos(12345, 67890), 12345<<43 | 67890},
	}
	for _, c := range cases {
		v, err := c.p.pack()
		if err != nil {
			t.Errorf("%v.Pack(): %v", c.p, err)
			continue
		}
		if v != c.want {
			t.Errorf("%v.Pack() = %d, want %d", c.p, v, c.want)
		}
		if got := unpackPosition(v); got != c.p {
			t.Errorf("UnpackPosition(%d) = %v, want %v", v, got, c.p)
		}
	}
	// Packing preserves order.
	for i := range cases {
		for j := range cases {
			a, _ := cases[i].p.pack()
			b, _ := cases[j].p.pack()
			if cases[i].p.Less(cases[j].p) != (a < b) {
				t.Errorf("order of %v, %v not preserved by Pack (%d, %d)", cases[i].p, cases[j].p, a, b)
			}
		}
	}
}

func TestPositionPackOutOfRange(t *testing.T) {
	for _, p := range []position{
		rtPos(-1, 0),
		rtPos(0, -1),
		rtPos(-1, -1),
		rtPos(1<<20, 0),
		rtPos(0, 1<<43),
		rtPos(1<<20, 1<<43),
		rtPos(math.MaxInt, 0),
		rtPos(0, math.MaxInt64),
		rtPos(0, math.MinInt64),
	} {
		v, err := p.pack()
		if err == nil {
			t.Errorf("%v.Pack() = %d, nil; want an error", p, v)
		}
		if v != 0 {
			t.Errorf("%v.Pack() value = %d on error, want 0", p, v)
		}
	}
}
