package xz

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	upstream "github.com/therootcompany/xz"

	"github.com/spate-io/beam-s3/internal/clitool"
)

var benchInput struct {
	sync.Once
	plain, comp []byte
	err         error
}

// benchXz returns about 64 MiB of NDJSON lines of about 200 bytes and the file `xz -6`
// makes of them (one stream, one block, LZMA2 alone: the common case).
func benchXz(b *testing.B) (plain, comp []byte) {
	benchInput.Do(func() {
		rng := rand.New(rand.NewPCG(1, 2))
		types := []string{"page_view", "click", "scroll", "search", "add_to_cart", "purchase"}
		var p []byte
		for len(p) < 64<<20 {
			start := len(p)
			p = fmt.Appendf(p, `{"ts":"2026-11-%02dT%02d:%02d:%02dZ","type":%q,"user":"u%07d","path":"/p/%d","ms":%d,"pad":"`,
				1+rng.IntN(30), rng.IntN(24), rng.IntN(60), rng.IntN(60), types[rng.IntN(len(types))], rng.IntN(10_000_000), rng.IntN(100_000), rng.IntN(5000))
			for len(p)-start < 197 {
				p = append(p, byte('a'+rng.IntN(26)))
			}
			p = append(p, '"', '}', '\n')
		}
		benchInput.plain = p
		benchInput.comp, benchInput.err = clitool.Output(p, "xz", "-6", "-c")
	})
	if benchInput.err != nil {
		b.Fatal(benchInput.err)
	}
	return benchInput.plain, benchInput.comp
}

// benchReaders are this package ("fork") and the library it was copied from,
// github.com/therootcompany/xz v1.0.1 ("v1.0.1"), each one Reader and its Reset.
var benchReaders = []struct {
	name string
	open func() (io.Reader, func(io.Reader) error)
}{
	{"fork", func() (io.Reader, func(io.Reader) error) {
		z, _ := NewReader(nil, 0)
		return z, z.Reset
	}},
	{"v1.0.1", func() (io.Reader, func(io.Reader) error) {
		z, _ := upstream.NewReader(nil, 0)
		return z, z.Reset
	}},
}

func benchDecode(b *testing.B, r io.Reader, reset func(io.Reader) error, plain, comp []byte) {
	if err := reset(bytes.NewReader(comp)); err != nil {
		b.Fatal(err)
	}
	if n, err := io.Copy(io.Discard, r); err != nil || n != int64(len(plain)) {
		b.Fatal(n, err)
	}
}

// BenchmarkDecode decodes benchXz's file with each of benchReaders, its Reader reset
// per pass as the decode package uses it. MB/s are of decompressed bytes.
func BenchmarkDecode(b *testing.B) {
	plain, comp := benchXz(b)
	for _, c := range benchReaders {
		b.Run(c.name, func(b *testing.B) {
			r, reset := c.open()
			b.SetBytes(int64(len(plain)))
			b.ReportAllocs()
			for b.Loop() {
				benchDecode(b, r, reset, plain, comp)
			}
		})
	}
}

// BenchmarkDecodeRatio decodes benchXz's file with the fork and with v1.0.1 in turn,
// in alternating order, and reports the median over the pairs of v1.0.1's time over
// the fork's ("fork/v1.0.1-speed": above 1, the fork is faster): a pair sees the
// same load of a shared machine, where separate runs do not. The fork must not be
// slower:
//
//	go test -run '^$' -bench DecodeRatio -benchtime 10x ./s3io/internal/xz/
func BenchmarkDecodeRatio(b *testing.B) {
	plain, comp := benchXz(b)
	fork, forkReset := benchReaders[0].open()
	up, upReset := benchReaders[1].open()
	var ratios []float64
	var forkTotal, upTotal time.Duration
	b.SetBytes(int64(2 * len(plain)))
	for i := 0; b.Loop(); i++ {
		var tf, tu time.Duration
		for k := range 2 {
			t0 := time.Now()
			if (i+k)%2 == 0 {
				benchDecode(b, fork, forkReset, plain, comp)
				tf = time.Since(t0)
			} else {
				benchDecode(b, up, upReset, plain, comp)
				tu = time.Since(t0)
			}
		}
		forkTotal += tf
		upTotal += tu
		ratios = append(ratios, float64(tu)/float64(tf))
	}
	slices.Sort(ratios)
	b.ReportMetric(ratios[len(ratios)/2], "fork/v1.0.1-speed")
	mb := float64(len(plain)) * float64(len(ratios)) / 1e6
	b.ReportMetric(mb/forkTotal.Seconds(), "fork-MB/s")
	b.ReportMetric(mb/upTotal.Seconds(), "v1.0.1-MB/s")
}
