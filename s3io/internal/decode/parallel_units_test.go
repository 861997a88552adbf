package decode

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/spate-io/beam-s3/internal/clitool"
)

// chunked is a ParallelUnits of small chunks, so that the test objects' segments are
// cut into many.
func chunked(chunk, search int) ParallelUnits {
	return ParallelUnits{Chunk: chunk, Search: search, Queued: 2, OutBytes: 64 << 10, MaxWindow: DefaultMaxWindow,
		Get: func() *Decompressors { return &Decompressors{} }, Put: func(d *Decompressors) { d.Close() }}
}

// decodeSegment reads the segment [from, to) of data, and past it when more, as OpenUnits
// does (parallel false) or OpenUnitsParallel.
func decodeSegment(t *testing.T, comp Compression, data []byte, from, to int64, parallel *ParallelUnits) ([]byte, error) {
	t.Helper()
	var d Decompressors
	defer d.Close()
	more := to < int64(len(data))
	if parallel == nil {
		s, err := d.OpenUnits(comp, bytes.NewReader(data[from:]), from, to-from, more)
		if err != nil {
			return nil, err
		}
		return io.ReadAll(s)
	}
	s, err := d.OpenUnitsParallel(comp, bytes.NewReader(data[from:]), from, to-from, more, *parallel)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	return io.ReadAll(s)
}

// A segment decoded in chunks is byte for byte the segment decoded on one decoder, for
// every tool's units, whatever the chunk size and however many chunks decode ahead, and for
// segments of one unit or of many.
func TestOpenUnitsParallelIsOpenUnits(t *testing.T) {
	text, _ := unitLines(6000)
	plain := []byte(text)
	r := rand.New(rand.NewPCG(5, 6))
	for _, o := range unitObjectsAndSeekable(t, plain) {
		t.Run(o.name, func(t *testing.T) {
			for trial := range 8 {
				i := r.IntN(len(o.starts) / 2)
				j := i + 1 + r.IntN(len(o.starts)-i)
				from, to := o.starts[i], int64(len(o.data))
				if j < len(o.starts) {
					to = o.starts[j]
				}
				if trial == 0 {
					from, to = 0, int64(len(o.data))
				}
				want, err := decodeSegment(t, o.comp, o.data, from, to, nil)
				if err != nil {
					t.Fatal(err)
				}
				cfg := chunked(1+r.IntN(200<<10), 256<<10)
				cfg.Queued = 1 + trial%2
				got, err := decodeSegment(t, o.comp, o.data, from, to, &cfg)
				if err != nil || !bytes.Equal(got, want) {
					t.Fatalf("segment [%d, %d) in chunks of %d: %d bytes, err %v; want %d bytes", from, to, cfg.Chunk, len(got), err, len(want))
				}
			}
		})
	}
}

// A gzip member inside another's stored blocks (gzip stores a .gz it is given: it does
// not compress) passes the unit proof, so a chunk is cut inside the outer member; that
// chunk does not decode to its end, and the read goes on on one decoder: the same bytes.
func TestOpenUnitsParallelWrongCut(t *testing.T) {
	clitool.Need(t, "gzip")
	text, _ := unitLines(3000)
	noise := make([]byte, 12<<10) // the first 8 KiB inside the inner member, the rest before it
	for i := range noise {
		noise[i] = byte(rand.N(256))
	}
	inner := clitool.Run(t, noise[:8<<10], "gzip", "-c") // stored blocks: noise does not compress
	// The inner member lies past the first chunk's least bytes (1 KiB), where the search is.
	outer := clitool.Run(t, append(append(append([]byte("head\n"), noise[8<<10:]...), inner...), "tail\n"...), "gzip", "-c")
	if off, found := FindUnitIn(Gzip, outer[1<<10:], len(outer), DefaultMaxWindow); !found || off+1<<10 >= int64(len(outer)) {
		t.Fatal("gzip did not store the inner member verbatim: no unit start proven inside the outer one")
	}
	next := clitool.Run(t, []byte(text), "gzip", "-c")
	data := append(append(append([]byte{}, outer...), next...), next...)
	own := int64(len(outer) + len(next))
	want, err := decodeSegment(t, Gzip, data, 0, own, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := chunked(1<<10, 64<<10)
	got, err := decodeSegment(t, Gzip, data, 0, own, &cfg)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("%d bytes, err %v; want %d", len(got), err, len(want))
	}
}

// A corrupt unit fails the read in chunks with the error of the read on one decoder: the
// member's stored offset, for gzip.
func TestOpenUnitsParallelCorrupt(t *testing.T) {
	text, _ := unitLines(6000)
	o := unitObjects(t, []byte(text))[1] // concatenated gzip
	bad := bytes.Clone(o.data)
	member := o.starts[2]
	for i := member + 200; i < member+260; i++ {
		bad[i] ^= 0x55
	}
	to := int64(len(bad))
	_, want := decodeSegment(t, Gzip, bad, o.starts[1], to, nil)
	cfg := chunked(4<<10, 256<<10)
	got, err := decodeSegment(t, Gzip, bad, o.starts[1], to, &cfg)
	if !errors.Is(err, ErrCorrupt) || want == nil || err.Error() != want.Error() {
		t.Fatalf("got %v after %d bytes; want %v", err, len(got), want)
	}
}
