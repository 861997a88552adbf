package decode

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/spate-io/beam-s3/internal/clitool"
)

// TestRecordsBeforeAFailedCheck asserts s3io.ReasonCorrupt's godoc, codec by codec: an
// object of two units (members, frames, streams) whose second unit decodes to other bytes
// than it was written with (its data changed, its check not) fails as corrupt, having
// emitted at most the first unit's records and the second's as decoded (the bytes a
// decoder returns with its error are not framed, so fewer may come out); a Snappy chunk
// is checked before its bytes are used, so none of it comes out.
func TestRecordsBeforeAFailedCheck(t *testing.T) {
	first := "u1 first\nu1 second\n"
	written, changed := "u2 Kilts\n", "u2 Kimts\n"
	lines := func(s string) []entryRecord {
		var out []entryRecord
		for _, l := range strings.Split(strings.TrimSuffix(s, "\n"), "\n") {
			out = append(out, entryRecord{"", l})
		}
		return out
	}
	for _, c := range []struct {
		name string
		tool []string
		span func(unit []byte) (int, int) // the unit's check of its decoded bytes
	}{
		{"gzip", []string{"gzip", "-c"}, func(u []byte) (int, int) { return len(u) - 8, len(u) - 4 }},
		{"zstd", []string{"zstd", "-c", "-q"}, func(u []byte) (int, int) { return len(u) - 4, len(u) }},
		{"bzip2", []string{"bzip2", "-c"}, func(u []byte) (int, int) { return 10, 14 }},
		{"xz", []string{"xz", "-c"}, func(u []byte) (int, int) { return checksumSpan(t, ".tar.xz", u) }},
		{"lz4", []string{"lz4", "-c", "-q"}, func(u []byte) (int, int) { return len(u) - 4, len(u) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			enc := func(s string) []byte { return clitool.Run(t, []byte(s), c.tool[0], c.tool[1:]...) }
			a, b := enc(written), enc(changed)
			if len(a) != len(b) {
				t.Fatalf("the units differ in length")
			}
			from, to := c.span(a)
			unit2 := bytes.Clone(b)
			copy(unit2[from:to], a[from:to])
			recs, _, err := readObject(t, Auto, "x", cat(enc(first), unit2), 0)
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("err %v, want ErrCorrupt", err)
			}
			prefixRecords(t, recs, append(lines(first), lines(changed)...))
		})
	}
	t.Run("zlib", func(t *testing.T) {
		data := pyDeflate(t, []byte(first+changed), 15)
		copy(data[len(data)-4:], pyDeflate(t, []byte(first+written), 15)[len(data)-4:])
		recs, _, err := readObject(t, Auto, "x.zz", data, 0)
		if !errors.Is(err, ErrCorrupt) {
			t.Fatalf("err %v, want ErrCorrupt", err)
		}
		prefixRecords(t, recs, append(lines(first), lines(changed)...))
	})
	t.Run("snappy", func(t *testing.T) {
		// Two chunks: the framing format cuts at 64 KiB of input.
		var one strings.Builder
		for i := 0; one.Len() < 64<<10-20; i++ {
			fmt.Fprintf(&one, "line %06d\n", i)
		}
		pad := 64<<10 - one.Len()
		one.WriteString(strings.Repeat("p", pad-1) + "\n")
		data := golangSnappy(t, []byte(one.String()+changed))
		// The second chunk's CRC: after the stream identifier (10 bytes), the first chunk's
		// 4-byte header and its body, and the second chunk's 4-byte header.
		second := 10 + 4 + int(data[11]) | int(data[12])<<8 | int(data[13])<<16
		data[second+4] ^= 1
		recs, _, err := readObject(t, Auto, "x.sz", data, 0)
		if !errors.Is(err, ErrCorrupt) {
			t.Fatalf("err %v, want ErrCorrupt", err)
		}
		prefixRecords(t, recs, lines(one.String()))
	})
}

// prefixRecords fails t unless got is a prefix of bound: nothing that may not precede.
func prefixRecords(t *testing.T, got, bound []entryRecord) {
	t.Helper()
	if len(got) > len(bound) || fmt.Sprint(got) != fmt.Sprint(bound[:len(got)]) {
		t.Fatalf("records:\n got %v\nwant a prefix of %v", got, bound)
	}
}
