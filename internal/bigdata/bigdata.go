// Package bigdata is test support for reads of large objects: records generated from their
// index, files of them written without holding them in memory, and a pipeline check that
// every record arrived exactly once which costs no element per record downstream (each
// bundle marks the indices it saw in a bitset, and the bitsets are combined).
package bigdata

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
)

func init() {
	register.DoFn3x1[context.Context, []byte, func([]byte), error](&checkFn{})
	register.Emitter1[[]byte]()
	register.Combiner2[[]byte, string](&bitsetCombine{})
}

// Line is record i of a plain dataset, about 200 bytes; its padding repeats, so it
// compresses about tenfold.
func Line(i int64) string { return string(appendLine(nil, i, false)) }

// NoisyLine is record i of a dataset that compresses about fourfold, as logs do: its padding
// holds 32 pseudo-random characters of 16, then repeats them.
func NoisyLine(i int64) string { return string(appendLine(nil, i, true)) }

// AppendLine appends record i (Line's, or NoisyLine's when noisy) to b.
func AppendLine(b []byte, i int64, noisy bool) []byte { return appendLine(b, i, noisy) }

func appendLine(b []byte, i int64, noisy bool) []byte {
	pad := 150 + int(i*7919%90)
	b = append(b, `{"i":`...)
	b = strconv.AppendInt(b, i, 10)
	b = append(b, `,"pad":"`...)
	x := uint64(i)*0x9e3779b97f4a7c15 + 1
	var noise [32]byte
	for j := range noise {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		noise[j] = "abcdefghijklmnop"[x&15]
	}
	for j := 0; j < pad; j++ {
		if noisy {
			b = append(b, noise[j%len(noise)])
		} else {
			b = append(b, byte('a'+(i+int64(j))%26))
		}
	}
	return append(b, `"}`...)
}

// WriteFile writes records until the file holds at least size bytes and returns how many.
func WriteFile(t testing.TB, path string, size int64, noisy bool) int64 {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	var n, written int64
	var line []byte
	for written < size {
		line = append(appendLine(line[:0], n, noisy), '\n')
		w.Write(line)
		written += int64(len(line))
		n++
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return n
}

// CheckExactlyOnce asserts that recs holds records 0 … records-1 of the dataset, each once.
func CheckExactlyOnce(s beam.Scope, recs beam.PCollection, records int64, noisy bool) {
	bitsets := beam.ParDo(s, &checkFn{Records: records, Noisy: noisy}, recs)
	passert.Equals(s, beam.Combine(s, &bitsetCombine{Records: records}, bitsets), "missing=0 duplicated=0")
}

// checkFn verifies each record against the generator and marks its index in a per-bundle
// bitset, emitted at the end of the bundle.
type checkFn struct {
	Records int64
	Noisy   bool
	seen    []byte
	want    []byte
}

func (fn *checkFn) StartBundle(context.Context, func([]byte)) { fn.seen = nil }

func (fn *checkFn) ProcessElement(ctx context.Context, rec []byte, _ func([]byte)) error {
	var i int64
	if _, err := fmt.Sscanf(string(rec[:min(len(rec), 24)]), `{"i":%d,`, &i); err != nil || i < 0 || i >= fn.Records {
		return fmt.Errorf("unexpected record %.60q", rec)
	}
	if fn.want = appendLine(fn.want[:0], i, fn.Noisy); string(rec) != string(fn.want) {
		return fmt.Errorf("record %d is %.60q, want %.60q", i, rec, fn.want)
	}
	if fn.seen == nil {
		fn.seen = make([]byte, 2*((fn.Records+7)/8)) // seen, then seen twice
	}
	half := len(fn.seen) / 2
	if fn.seen[i/8]&(1<<(i%8)) != 0 {
		fn.seen[half+int(i/8)] |= 1 << (i % 8)
	}
	fn.seen[i/8] |= 1 << (i % 8)
	return nil
}

func (fn *checkFn) FinishBundle(_ context.Context, emit func([]byte)) {
	if fn.seen != nil {
		emit(fn.seen)
	}
}

// bitsetCombine ORs per-bundle bitsets and reports records missing and duplicated.
type bitsetCombine struct{ Records int64 }

func (c *bitsetCombine) MergeAccumulators(a, b []byte) []byte {
	if a == nil {
		return b
	}
	if b == nil {
		return a
	}
	half := len(a) / 2
	out := make([]byte, len(a))
	for i := 0; i < half; i++ {
		out[i] = a[i] | b[i]
		out[half+i] = a[half+i] | b[half+i] | (a[i] & b[i])
	}
	return out
}

func (c *bitsetCombine) ExtractOutput(a []byte) string {
	var missing, dup int64
	half := len(a) / 2
	for i := int64(0); i < c.Records; i++ {
		if half == 0 || a[i/8]&(1<<(i%8)) == 0 {
			missing++
		} else if a[half+int(i/8)]&(1<<(i%8)) != 0 {
			dup++
		}
	}
	return fmt.Sprintf("missing=%d duplicated=%d", missing, dup)
}
