package decode

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/spate-io/beam-s3/internal/clitool"
)

// entryRecord is one framed record and the entry it came from.
type entryRecord struct{ entry, rec string }

// readObject opens obj (its bytes data) as s3io does and frames it with lines, served in
// chunks of at most chunk bytes; it returns the records and the tail GETs made.
func readObject(t *testing.T, mode Compression, key string, data []byte, skipHeaders int) (recs []entryRecord, gets int, err error) {
	t.Helper()
	d := &Decompressors{}
	defer d.Close()
	info := ObjectInfo{Key: key, Size: int64(len(data)), ReadRange: func(from, to int64) ([]byte, error) {
		gets++
		return bytes.Clone(data[from:to]), nil
	}}
	entries, stream, _, err := d.OpenEntries(mode, info, iotest.HalfReader(bytes.NewReader(data)))
	if err != nil {
		return nil, gets, err
	}
	var rr *RecordReader
	if entries != nil {
		rr = NewEntriesRecordReader(entries, func() Framer { return FramerFunc(FrameLines) }, 1<<20)
	} else {
		rr = NewRecordReader(stream, FramerFunc(FrameLines), 1<<20, 0)
	}
	rr.SkipHeaders(skipHeaders)
	for {
		rec, _, err := rr.Next()
		if err == io.EOF {
			return recs, gets, nil
		}
		if err != nil {
			return recs, gets, err
		}
		recs = append(recs, entryRecord{rr.Entry(), string(rec)})
	}
}

func sameRecords(t *testing.T, got, want []entryRecord) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("records:\n got %v\nwant %v", got, want)
	}
}

var archiveInput = map[string]string{
	"a.txt":       "a1\na2\n",
	"b/c.txt":     "c1\r\nc2", // no final newline: the entry's end ends the record
	"b/empty.txt": "",
	"d.txt":       "d1\n",
}

// archiveWant is what archiveInput's entries hold, in the order tar and zip store them
// (the tools are given the names in this order).
var archiveOrder = []string{"a.txt", "b/c.txt", "b/empty.txt", "d.txt"}

var archiveWant = []entryRecord{{"a.txt", "a1"}, {"a.txt", "a2"}, {"b/c.txt", "c1"}, {"b/c.txt", "c2"}, {"d.txt", "d1"}}

func TestTarEntries(t *testing.T) {
	dir := clitool.WriteFiles(t, archiveInput)
	tarball := clitool.RunIn(t, dir, nil, "tar", append([]string{"-cf", "-"}, archiveOrder...)...)
	cases := []struct {
		name, key string
		data      []byte
	}{
		{"tar", "x.tar", tarball},
		{"tar by magic", "x", tarball},
		{"tar.gz", "x.tar.gz", clitool.RunIn(t, dir, tarball, "gzip", "-c")},
		{"tgz by magic", "x.bin", clitool.RunIn(t, dir, tarball, "pigz", "-c")},
		{"tar.zst", "x.tar.zst", clitool.RunIn(t, dir, tarball, "zstd", "-c", "-q")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			recs, _, err := readObject(t, Auto, c.key, c.data, 0)
			if err != nil {
				t.Fatal(err)
			}
			sameRecords(t, recs, archiveWant)
		})
	}
	t.Run("directories and links hold no records", func(t *testing.T) {
		if err := os.Symlink("a.txt", filepath.Join(dir, "link")); err != nil {
			t.Fatal(err)
		}
		data := clitool.RunIn(t, dir, nil, "tar", "-cf", "-", "a.txt", "b", "link")
		recs, _, err := readObject(t, Auto, "x.tar", data, 0)
		if err != nil {
			t.Fatal(err)
		}
		sameRecords(t, recs, []entryRecord{{"a.txt", "a1"}, {"a.txt", "a2"}, {"b/c.txt", "c1"}, {"b/c.txt", "c2"}})
	})
	t.Run("entries decoded by their own names", func(t *testing.T) {
		d2 := clitool.WriteFiles(t, nil)
		os.WriteFile(filepath.Join(d2, "log.gz"), clitool.RunIn(t, d2, []byte("g1\ng2\n"), "gzip", "-c"), 0o644)
		os.WriteFile(filepath.Join(d2, "log.zst"), clitool.RunIn(t, d2, []byte("z1\n"), "zstd", "-c", "-q"), 0o644)
		data := clitool.RunIn(t, d2, nil, "tar", "-cf", "-", "log.gz", "log.zst")
		recs, _, err := readObject(t, Auto, "logs.tar", data, 0)
		if err != nil {
			t.Fatal(err)
		}
		sameRecords(t, recs, []entryRecord{{"log.gz", "g1"}, {"log.gz", "g2"}, {"log.zst", "z1"}})
	})
	t.Run("a header record is skipped in every entry", func(t *testing.T) {
		recs, _, err := readObject(t, Auto, "x.tar", tarball, 1)
		if err != nil {
			t.Fatal(err)
		}
		sameRecords(t, recs, []entryRecord{{"a.txt", "a2"}, {"b/c.txt", "c2"}})
	})
	t.Run("truncated", func(t *testing.T) {
		// Inside a header and inside an entry's data.
		for _, cut := range []int{100, 512 + 3} {
			_, _, err := readObject(t, Auto, "x.tar", tarball[:cut], 0)
			if !errors.Is(err, ErrCorrupt) {
				t.Errorf("cut at %d: err = %v, want ErrCorrupt", cut, err)
			}
		}
	})
	t.Run("no end-of-archive marker", func(t *testing.T) {
		// Cut on the block boundary before a header: GNU tar, bsdtar, Python's tarfile and
		// archive/tar all read the entries before it, and so does s3io (a stored object's
		// size is pinned, so this is how the object was written).
		cut := bytes.Index(tarball, []byte("b/c.txt\x00"))
		recs, _, err := readObject(t, Auto, "x.tar", tarball[:cut], 0)
		if err != nil {
			t.Fatal(err)
		}
		sameRecords(t, recs, archiveWant[:2])
	})
	t.Run("bytes after the end-of-archive marker", func(t *testing.T) {
		// Zero padding of any length is a tar's; anything else is refused, though GNU tar
		// and bsdtar stop at the marker without looking.
		padded := append(bytes.Clone(tarball), make([]byte, 10240+7)...)
		for _, key := range []string{"x.tar", "x.tar.gz"} {
			data := padded
			if key == "x.tar.gz" {
				data = clitool.RunIn(t, dir, padded, "gzip", "-c")
			}
			recs, _, err := readObject(t, Auto, key, data, 0)
			if err != nil {
				t.Fatalf("%s padded with zeros: %v", key, err)
			}
			sameRecords(t, recs, archiveWant)
		}
		junk := append(bytes.Clone(tarball), "junk\n"...)
		for _, key := range []string{"x.tar", "x.tar.gz"} {
			data := junk
			if key == "x.tar.gz" {
				data = clitool.RunIn(t, dir, junk, "gzip", "-c")
			}
			recs, _, err := readObject(t, Auto, key, data, 0)
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "end-of-archive") {
				t.Errorf("%s with junk after the marker: err = %v, want ErrCorrupt", key, err)
			}
			sameRecords(t, recs, archiveWant) // every record came before the junk
		}
	})
	t.Run("nested archive is unsupported", func(t *testing.T) {
		d2 := clitool.WriteFiles(t, nil)
		os.WriteFile(filepath.Join(d2, "inner.tar"), tarball, 0o644)
		data := clitool.RunIn(t, d2, nil, "tar", "-cf", "-", "inner.tar")
		recs, _, err := readObject(t, Auto, "outer.tar", data, 0)
		if !errors.Is(err, ErrUnsupported) || len(recs) != 0 || !strings.Contains(err.Error(), `"inner.tar"`) {
			t.Fatalf("records %v, err = %v; want none and ErrUnsupported naming the entry", recs, err)
		}
	})
}

func TestZipEntries(t *testing.T) {
	dir := clitool.WriteFiles(t, archiveInput)
	zipped := func(t *testing.T, args ...string) []byte {
		os.Remove(filepath.Join(dir, "out.zip"))
		clitool.RunIn(t, dir, nil, "zip", append(append([]string{"-q", "-X"}, args...), append([]string{"out.zip"}, archiveOrder...)...)...)
		data, err := os.ReadFile(filepath.Join(dir, "out.zip"))
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	deflated := zipped(t)
	cases := []struct {
		name string
		key  string
		data []byte
	}{
		{"deflate", "x.zip", deflated},
		{"by magic", "x", deflated},
		{"stored", "x.zip", zipped(t, "-0")},
		{"bzip2 method", "x.zip", zipped(t, "-Z", "bzip2")},
		{"zip64", "x.zip", zipped(t, "-fz")},
		{"with an archive comment", "x.zip", func() []byte {
			data := zipped(t)
			// The comment is the EOCD's last field; zip -z reads it from stdin.
			os.WriteFile(filepath.Join(dir, "c.zip"), data, 0o644)
			clitool.RunIn(t, dir, []byte(strings.Repeat("comment ", 40)), "zip", "-q", "-z", "c.zip")
			data, _ = os.ReadFile(filepath.Join(dir, "c.zip"))
			return data
		}()},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			recs, gets, err := readObject(t, Auto, c.key, c.data, 0)
			if err != nil {
				t.Fatal(err)
			}
			sameRecords(t, recs, archiveWant)
			if gets != 1 {
				t.Errorf("%d ranged GETs of the tail, want 1", gets)
			}
		})
	}
	t.Run("streamed zip with data descriptors", func(t *testing.T) {
		// zip reading stdin writes one entry "-" with a data descriptor after its data.
		data := clitool.RunIn(t, dir, []byte("s1\ns2\n"), "zip", "-q", "-", "-")
		recs, _, err := readObject(t, Auto, "x.zip", data, 0)
		if err != nil {
			t.Fatal(err)
		}
		sameRecords(t, recs, []entryRecord{{"-", "s1"}, {"-", "s2"}})
	})
	t.Run("a large central directory takes a second GET", func(t *testing.T) {
		many := map[string]string{}
		var want []entryRecord
		for i := range 3000 {
			name := fmt.Sprintf("dir/entry-with-a-longish-name-%05d.txt", i)
			many[name] = fmt.Sprintf("r%d\n", i)
			want = append(want, entryRecord{name, fmt.Sprintf("r%d", i)})
		}
		d2 := clitool.WriteFiles(t, many)
		clitool.RunIn(t, d2, nil, "zip", "-q", "-r", "-X", "out.zip", "dir")
		data, _ := os.ReadFile(filepath.Join(d2, "out.zip"))
		recs, gets, err := readObject(t, Auto, "many.zip", data, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != len(want) {
			t.Fatalf("%d records, want %d", len(recs), len(want))
		}
		got := map[entryRecord]bool{}
		for _, r := range recs {
			got[r] = true
		}
		for _, w := range want {
			if !got[w] {
				t.Fatalf("missing %v", w)
			}
		}
		if gets != 2 {
			t.Errorf("%d ranged GETs, want 2 (the first tail, then the rest of the directory)", gets)
		}
	})
	t.Run("encrypted entry is unsupported", func(t *testing.T) {
		data := zipped(t, "-P", "secret")
		recs, _, err := readObject(t, Auto, "x.zip", data, 0)
		if !errors.Is(err, ErrUnsupported) || len(recs) != 0 || !strings.Contains(err.Error(), "encrypted") {
			t.Fatalf("records %v, err %v; want none and ErrUnsupported (encrypted)", recs, err)
		}
	})
	t.Run("corrupt", func(t *testing.T) {
		bad := zipped(t, "-0")
		bad[bytes.Index(bad, []byte("a1\na2"))] ^= 0xff // the first entry's CRC-32 cannot match
		if _, _, err := readObject(t, Auto, "x.zip", bad, 0); !errors.Is(err, ErrCorrupt) {
			t.Errorf("flipped byte: err = %v, want ErrCorrupt", err)
		}
		for _, cut := range []int{10, len(deflated) / 2, len(deflated) - 10} {
			if _, _, err := readObject(t, Auto, "x.zip", deflated[:cut], 0); !errors.Is(err, ErrCorrupt) {
				t.Errorf("cut at %d: err = %v, want ErrCorrupt", cut, err)
			}
		}
	})
	t.Run("empty zip", func(t *testing.T) {
		empty := []byte("PK\x05\x06" + strings.Repeat("\x00", 18))
		recs, _, err := readObject(t, Auto, "x.zip", empty, 0)
		if err != nil || len(recs) != 0 {
			t.Fatalf("records %v, err %v; want none", recs, err)
		}
	})
}

// TestEntriesDiscard resumes an archive's framing at every record boundary, as a resume
// hint does: the rest of the records, and nothing else, follow.
func TestEntriesDiscard(t *testing.T) {
	dir := clitool.WriteFiles(t, archiveInput)
	tarball := clitool.RunIn(t, dir, nil, "tar", append([]string{"-cf", "-"}, archiveOrder...)...)
	open := func() *RecordReader {
		d := &Decompressors{}
		entries, _, _, err := d.OpenEntries(Auto, ObjectInfo{Key: "x.tar", Size: int64(len(tarball))}, bytes.NewReader(tarball))
		if err != nil {
			t.Fatal(err)
		}
		rr := NewEntriesRecordReader(entries, func() Framer { return FramerFunc(FrameLines) }, 1<<20)
		rr.SkipHeaders(1)
		return rr
	}
	rr := open()
	var ends []int64
	var all []entryRecord
	for {
		rec, _, err := rr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		ends = append(ends, rr.offset)
		all = append(all, entryRecord{rr.Entry(), string(rec)})
	}
	for i, end := range ends {
		rr := open()
		if err := rr.Discard(end); err != nil {
			t.Fatal(err)
		}
		var rest []entryRecord
		for {
			rec, _, err := rr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			rest = append(rest, entryRecord{rr.Entry(), string(rec)})
		}
		sameRecords(t, rest, all[i+1:])
	}
}
