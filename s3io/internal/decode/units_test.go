package decode

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/spate-io/beam-s3/internal/clitool"
	"github.com/spate-io/beam-s3/internal/s3test"
)

// unitLines returns n lines of varying length and random characters (compressed to about
// two thirds, as logs are not), one of them longer than a BGZF block (64 KiB),
// so that a record straddles several units.
func unitLines(n int) (string, []string) {
	r := rand.New(rand.NewPCG(7, 11))
	var b strings.Builder
	lines := make([]string, n)
	for i := range lines {
		size := 20 + r.IntN(300)
		if i == n/3 {
			size = 200 << 10
		}
		word := make([]byte, size)
		for j := range word {
			word[j] = "abcdefghijklmnopqrstuvwxyz0123456789 {}:,"[r.IntN(41)]
		}
		l := fmt.Sprintf("%d:%s", i, word)
		lines[i] = l
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return b.String(), lines
}

// unitObjects are objects made of units by real tools, with their units' stored offsets.
func unitObjects(t *testing.T, plain []byte) []struct {
	name   string
	comp   Compression
	data   []byte
	starts []int64
} {
	clitool.Need(t, "bgzip", "gzip", "zstd", "pzstd", "pbzip2", "bzip2")
	bg := clitool.Run(t, plain, "bgzip", "-c")
	gz, gzStarts := clitool.RunChunks(t, plain, 300<<10, "gzip", "-c")
	zs, zsStarts := clitool.RunChunks(t, plain, 300<<10, "zstd", "-c", "-q")
	pb, pbStarts := pbzip2Streams(t, plain)
	return []struct {
		name   string
		comp   Compression
		data   []byte
		starts []int64
	}{
		{"bgzip", Gzip, bg, clitool.BGZFBlocks(t, bg)},
		{"cat gzip", Gzip, gz, gzStarts},
		{"cat zstd", Zstd, zs, zsStarts},
		{"pbzip2", Bzip2, pb, pbStarts},
	}
}

// unitObjectsAndSeekable is unitObjects and a zstd seekable-format object of plain.
func unitObjectsAndSeekable(t *testing.T, plain []byte) []struct {
	name   string
	comp   Compression
	data   []byte
	starts []int64
} {
	objects := unitObjects(t, plain)
	seekable := s3test.ZstdSeekable(plain, 100<<10, true)
	return append(objects, struct {
		name   string
		comp   Compression
		data   []byte
		starts []int64
	}{"zstd seekable", Zstd, seekable, seekStarts(t, seekable)})
}

// pbzip2Streams returns what `pbzip2 -b1` writes of plain, and where its streams start:
// pbzip2 compresses each 100,000 bytes (-b1) as a bzip2 -9 stream of its own, so its output
// is byte for byte the concatenated `bzip2 -9` outputs of those chunks, whose starts
// RunChunks knows.
func pbzip2Streams(t *testing.T, plain []byte) ([]byte, []int64) {
	t.Helper()
	pb := clitool.Run(t, plain, "pbzip2", "-b1", "-p2", "-c")
	chunks, starts := clitool.RunChunks(t, plain, 100_000, "bzip2", "-9", "-c")
	if !bytes.Equal(pb, chunks) {
		t.Fatal("pbzip2 -b1 did not write the bzip2 -9 streams of its 100,000-byte chunks: the stream starts are unknown")
	}
	return pb, starts
}

// FindUnit finds, from any cut, exactly the next unit start within its window, in objects
// the tools wrote; in a single gzip member or zstd frame it finds none: no compressed byte
// that happens to match a magic number is taken for a unit.
func TestFindUnit(t *testing.T) {
	text, _ := unitLines(6000)
	plain := []byte(text)
	r := rand.New(rand.NewPCG(1, 2))
	for _, o := range unitObjects(t, plain) {
		t.Run(o.name, func(t *testing.T) {
			for range 40 {
				cut := r.Int64N(int64(len(o.data)))
				window := 256 << 10
				off, found, err := FindUnit(o.comp, bytes.NewReader(o.data[cut:]), window, DefaultMaxWindow)
				if err != nil {
					t.Fatal(err)
				}
				want := int64(-1)
				for _, s := range o.starts {
					if s >= cut && s < cut+int64(window) {
						want = s
						break
					}
				}
				if !found && want >= 0 || found && cut+off != want {
					t.Fatalf("cut %d: found=%v at %d, want unit at %d (starts %v)", cut, found, cut+off, want, o.starts)
				}
			}
		})
	}
	for _, single := range []struct {
		comp Compression
		data []byte
	}{{Gzip, clitool.Run(t, plain, "gzip", "-c")}, {Zstd, clitool.Run(t, plain, "zstd", "-c", "-q")},
		{Bzip2, clitool.Run(t, plain, "bzip2", "-1", "-c")}} { // one stream of 100 kB blocks
		for cut := int64(1); cut < int64(len(single.data)); cut += 37 << 10 {
			if off, found, err := FindUnit(single.comp, bytes.NewReader(single.data[cut:]), 1<<20, DefaultMaxWindow); err != nil || found {
				t.Fatalf("%s single unit, cut %d: found=%v at %d, err %v", single.comp, cut, found, off, err)
			}
		}
	}
}

// readSegments reads data cut at cuts (unit starts) as the segments' readers do: each decodes
// its own units and the next ones up to the end of its last record, and every segment but the
// first drops the record in progress at its start.
func readSegments(t *testing.T, comp Compression, data []byte, cuts []int64) ([]string, error) {
	var got []string
	bounds := append(append([]int64{0}, cuts...), int64(len(data)))
	for i := 0; i+1 < len(bounds); i++ {
		from, to := bounds[i], bounds[i+1]
		var d Decompressors
		s, err := d.OpenUnits(comp, bytes.NewReader(data[from:]), from, to-from, to < int64(len(data)))
		if err != nil {
			return got, err
		}
		rr := NewRecordReader(s, FramerFunc(FrameLines), 1<<20, 0)
		if from > 0 {
			if err := rr.SkipPastNewline(); err != nil {
				return got, err
			}
		}
		for {
			rec, _, err := rr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				return got, err
			}
			got = append(got, string(rec))
		}
	}
	return got, nil
}

// Segments cut at any set of unit starts read every record once, in order: a record that
// straddles units or segments (one is longer than a BGZF block) is read by the segment it
// starts in, and one whose first byte is a unit's first byte by the segment before it.
func TestOpenUnitsReadsEachRecordOnce(t *testing.T) {
	text, lines := unitLines(6000)
	plain := []byte(text)
	r := rand.New(rand.NewPCG(3, 4))
	for _, o := range unitObjectsAndSeekable(t, plain) {
		t.Run(o.name, func(t *testing.T) {
			for trial := range 12 {
				var cuts []int64
				for _, s := range o.starts[1:] {
					if trial == 0 || r.IntN(3) == 0 {
						cuts = append(cuts, s)
					}
				}
				got, err := readSegments(t, o.comp, o.data, cuts)
				if err != nil {
					t.Fatalf("cuts %v: %v", cuts, err)
				}
				if len(got) != len(lines) || strings.Join(got, "\n") != strings.Join(lines, "\n") {
					t.Fatalf("cuts %v: %d records, want %d, or not the same", cuts, len(got), len(lines))
				}
			}
		})
	}
}

func seekStarts(t *testing.T, data []byte) []int64 {
	starts, _, ok := ZstdSeekTable(data[max(len(data)-ZstdSeekTail, 0):], int64(len(data)))
	if !ok {
		t.Fatal("no seek table")
	}
	return starts
}

// A seekable-format object's seek table gives its frames' offsets, with or without
// checksums, asking for more bytes when the table is longer than the tail read; a tail that
// does not end with a table, or whose frames do not add up to the object, gives none.
func TestZstdSeekTable(t *testing.T) {
	plain := bytes.Repeat([]byte("seekable line\n"), 50000)
	for _, sums := range []bool{false, true} {
		data := s3test.ZstdSeekable(plain, 4096, sums)
		starts, _, ok := ZstdSeekTable(data, int64(len(data)))
		if !ok || len(starts) != (len(plain)+4095)/4096 || starts[0] != 0 {
			t.Fatalf("checksums %v: ok %v, %d frames", sums, ok, len(starts))
		}
		var d Decompressors
		for _, s := range starts {
			// every listed offset is a frame's first byte
			if !bytes.HasPrefix(data[s:], zstdMagic) {
				t.Fatalf("offset %d is no frame", s)
			}
		}
		if _, need, ok := ZstdSeekTable(data[len(data)-100:], int64(len(data))); ok || need <= 100 {
			t.Fatalf("short tail: ok %v, need %d", ok, need)
		}
		bad := bytes.Clone(data)
		binary.LittleEndian.PutUint32(bad[len(bad)-9:], uint32(len(starts)+1))
		if _, _, ok := ZstdSeekTable(bad, int64(len(bad))); ok {
			t.Fatal("a table whose frames do not add up was used")
		}
		s, _, err := d.Open(Zstd, "", bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		if all, err := io.ReadAll(s); err != nil || !bytes.Equal(all, plain) {
			t.Fatalf("the seekable object does not decode whole: %v", err)
		}
	}
	if _, _, ok := ZstdSeekTable(clitool.Run(t, []byte("x\n"), "zstd", "-c", "-q"), 15); ok {
		t.Fatal("a plain zstd frame read as a seek table")
	}
}

// A corrupt gzip member fails its segment as ErrCorrupt naming the member's stored offset;
// units that end before the segment's end (a cut that is no unit start) fail as corrupt too.
func TestOpenUnitsCorrupt(t *testing.T) {
	text, _ := unitLines(6000)
	o := unitObjects(t, []byte(text))[1] // concatenated gzip
	bad := bytes.Clone(o.data)
	member := o.starts[2]
	for i := member + 200; i < member+260; i++ {
		bad[i] ^= 0x55
	}
	_, err := readSegments(t, Gzip, bad, []int64{o.starts[1], o.starts[3]})
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), fmt.Sprintf("gzip member at stored offset %d", member)) {
		t.Fatalf("corrupt member: %v", err)
	}
	if _, err := readSegments(t, Gzip, o.data, []int64{o.starts[1] + 100}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("cut inside a member: %v", err)
	}

	pb := unitObjects(t, []byte(text))[3]
	bad = bytes.Clone(pb.data)
	for i := pb.starts[2] + 300; i < pb.starts[2]+330; i++ {
		bad[i] ^= 0x55
	}
	_, err = readSegments(t, Bzip2, bad, []int64{pb.starts[1], pb.starts[3]})
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), fmt.Sprintf("bzip2 units stored from offset %d", pb.starts[1])) {
		t.Fatalf("corrupt bzip2 stream: %v", err)
	}
	if _, err := readSegments(t, Bzip2, pb.data, []int64{pb.starts[1] + 100}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("cut inside a bzip2 stream: %v", err)
	}
}
