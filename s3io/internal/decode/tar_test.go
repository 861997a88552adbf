package decode

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spate-io/beam-s3/internal/clitool"
)

// tarCodecs are the codecs a tarball is compressed with, by the real tools, under the
// names users give them.
var tarCodecs = []struct {
	ext  string
	tool []string // reads the tar on stdin, writes the compressed object; nil: stored
}{
	{".tar", nil},
	{".tar.gz", []string{"gzip", "-c"}},
	{".tar.bz2", []string{"bzip2", "-c"}},
	{".tar.xz", []string{"xz", "-c"}},
	{".tar.lz4", []string{"lz4", "-c", "-q"}},
	{".tar.zst", []string{"zstd", "-c", "-q"}},
}

func compressTar(t *testing.T, tarball []byte, tool []string) []byte {
	t.Helper()
	if tool == nil {
		return tarball
	}
	return clitool.Run(t, tarball, tool[0], tool[1:]...)
}

// fileRecords frames files' bytes, each an entry, as readObject does.
func fileRecords(t *testing.T, dir string, names ...string) []entryRecord {
	t.Helper()
	var want []entryRecord
	for _, name := range names {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		recs, _, err := readObject(t, None, "plain", data, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			want = append(want, entryRecord{name, r.rec})
		}
	}
	return want
}

// sparseFile writes a file with holes (zeros the file system does not store) between its
// lines, the kind GNU tar -S archives as a sparse entry.
func sparseFile(t *testing.T, dir, name string) {
	t.Helper()
	f, err := os.Create(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, w := range []struct {
		at   int64
		text string
	}{{0, "head\n"}, {64 << 10, "\nmiddle\n"}, {192 << 10, "tail\n"}} {
		if _, err := f.WriteAt([]byte(w.text), w.at); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Truncate(256 << 10); err != nil {
		t.Fatal(err)
	}
}

// TestTarDialectsInEveryCodec reads the tar dialects GNU tar writes, stored and inside
// every codec: each is read as `tar -x` extracts it.
func TestTarDialectsInEveryCodec(t *testing.T) {
	dir := clitool.WriteFiles(t, archiveInput)
	sparseFile(t, dir, "sparse.bin")
	dialects := []struct {
		name  string
		args  []string
		files []string
	}{
		{"v7", []string{"--format=v7"}, archiveOrder},
		{"oldgnu", []string{"--format=oldgnu"}, archiveOrder},
		{"gnu", []string{"--format=gnu"}, archiveOrder},
		{"pax", []string{"--format=pax"}, archiveOrder},
		{"old GNU sparse", []string{"--format=gnu", "-S"}, []string{"a.txt", "sparse.bin", "d.txt"}},
		{"oldgnu sparse", []string{"--format=oldgnu", "-S"}, []string{"a.txt", "sparse.bin", "d.txt"}},
		{"PAX sparse 0.0", []string{"--format=pax", "-S", "--sparse-version=0.0"}, []string{"a.txt", "sparse.bin", "d.txt"}},
		{"PAX sparse 0.1", []string{"--format=pax", "-S", "--sparse-version=0.1"}, []string{"a.txt", "sparse.bin", "d.txt"}},
		{"PAX sparse 1.0", []string{"--format=pax", "-S", "--sparse-version=1.0"}, []string{"a.txt", "sparse.bin", "d.txt"}},
	}
	for _, dl := range dialects {
		tarball := clitool.RunIn(t, dir, nil, "tar", append(append([]string{"-cf", "-"}, dl.args...), dl.files...)...)
		if at := bytes.Index(tarball, []byte("sparse.bin\x00")); at >= 0 && tarball[at-at%512+156] != 'S' && !bytes.Contains(tarball, []byte("GNU.sparse")) {
			t.Fatalf("%s: GNU tar wrote no sparse entry (the file system keeps no holes?)", dl.name)
		}
		if dl.name == "v7" && IsTar(tarball) && bytes.Contains(tarball[:512], []byte("ustar")) {
			t.Fatalf("the v7 tar has ustar magic")
		}
		want := fileRecords(t, dir, dl.files...)
		// Without the end-of-archive marker: what a tar cut on an entry's boundary holds.
		last := bytes.LastIndex(tarball, []byte(dl.files[len(dl.files)-1]+"\x00"))
		last -= last % 512
		if strings.Contains(dl.name, "PAX") {
			last = bytes.LastIndex(tarball[:last], []byte("PaxHeaders")) // the entry's PAX header
			last -= last % 512
		}
		for _, c := range tarCodecs {
			t.Run(dl.name+"/"+c.ext, func(t *testing.T) {
				for _, key := range []string{"x" + c.ext, "x"} {
					recs, _, err := readObject(t, Auto, key, compressTar(t, tarball, c.tool), 0)
					if err != nil {
						t.Fatalf("%s: %v", key, err)
					}
					sameRecords(t, recs, want)
				}
				recs, _, err := readObject(t, Auto, "x"+c.ext, compressTar(t, tarball[:last], c.tool), 0)
				if err != nil {
					t.Fatalf("no end-of-archive marker: %v", err)
				}
				sameRecords(t, recs, want[:len(want)-len(fileRecords(t, dir, dl.files[len(dl.files)-1]))])
			})
		}
	}
}

// TestCompressedTarTrailers checks that a compressed tarball is read to its codec's end:
// a tar whose entry data changed after compression ("Kimts" where the object was written
// with "Kilts", the structure intact, only the checksum telling) and a damaged trailer are
// corrupt, though the tar's end-of-archive marker comes first. The records before the
// check are emitted first: the check is at the codec's end (see the package doc of s3io).
func TestCompressedTarTrailers(t *testing.T) {
	good := clitool.WriteFiles(t, map[string]string{"a.txt": "Kilts\n"})
	bad := clitool.WriteFiles(t, map[string]string{"a.txt": "Kimts\n"})
	tarOf := func(dir string) []byte {
		return clitool.RunIn(t, dir, nil, "tar", "--mtime=2020-01-01", "--owner=0", "--group=0", "-cf", "-", "a.txt")
	}
	for _, c := range tarCodecs[1:] {
		t.Run(c.ext, func(t *testing.T) {
			a, b := compressTar(t, tarOf(good), c.tool), compressTar(t, tarOf(bad), c.tool)
			if len(a) != len(b) {
				t.Fatalf("the two objects differ in length (%d, %d)", len(a), len(b))
			}
			// b's compressed data under a's checksum.
			spliced := bytes.Clone(b)
			from, to := checksumSpan(t, c.ext, a)
			copy(spliced[from:to], a[from:to])
			if bytes.Equal(spliced, b) {
				t.Fatal("the checksums of the two objects are the same")
			}
			recs, _, err := readObject(t, Auto, "x"+c.ext, spliced, 0)
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("changed data under the old checksum: records %v, err %v; want ErrCorrupt", recs, err)
			}
			// The trailer itself: flipped, cut, and followed by junk.
			flipped := bytes.Clone(a)
			flipped[from] ^= 0x10
			for name, data := range map[string][]byte{
				"flipped checksum": flipped,
				"cut trailer":      a[:len(a)-2],
				"junk after":       append(bytes.Clone(a), "junk"...),
			} {
				if _, _, err := readObject(t, Auto, "x"+c.ext, data, 0); !errors.Is(err, ErrCorrupt) {
					t.Errorf("%s: err %v, want ErrCorrupt", name, err)
				}
			}
		})
	}
}

// checksumSpan returns where the object's check of its decoded bytes is, as each tool
// writes it.
func checksumSpan(t *testing.T, ext string, obj []byte) (from, to int) {
	n := len(obj)
	switch ext {
	case ".tar.gz":
		return n - 8, n - 4 // CRC-32, then ISIZE
	case ".tar.zst", ".tar.lz4":
		return n - 4, n // the content checksum ends the frame
	case ".tar.bz2":
		return 10, 14 // the block CRC, after "BZh9" and the block magic
	case ".tar.xz":
		// The block's check (CRC64 by default) precedes the index, whose size the footer
		// gives (backward size, in 4-byte units less one).
		index := n - 12 - int(binary.LittleEndian.Uint32(obj[n-8:])+1)*4
		return index - 8, index
	}
	t.Fatalf("no checksum span for %s", ext)
	return 0, 0
}

// patchTarHeader rewrites the header block at off with edit and sets its checksum.
func patchTarHeader(tarball []byte, off int, edit func(h []byte)) []byte {
	out := bytes.Clone(tarball)
	h := out[off : off+512]
	edit(h)
	copy(h[148:156], "        ")
	sum := 0
	for _, b := range h {
		sum += int(b)
	}
	copy(h[148:156], fmt.Sprintf("%06o\x00 ", sum))
	return out
}

// TestTarFieldsAsOtherReadersRead covers the header fields GNU tar, bsdtar and Python's
// tarfile read otherwise than Go's archive/tar: what they agree on is what s3io reads.
func TestTarFieldsAsOtherReadersRead(t *testing.T) {
	dir := clitool.WriteFiles(t, map[string]string{"e.txt": "", "a.txt": "a1\n"})
	tarball := clitool.RunIn(t, dir, nil, "tar", "--format=ustar", "-cf", "-", "e.txt", "a.txt")
	t.Run("a size field starting with NUL is 0", func(t *testing.T) {
		data := patchTarHeader(tarball, 0, func(h []byte) { copy(h[124:136], "\x00\x00\x00\x00\x00\x00\x00\x000016") })
		for _, ref := range [][]string{{"tar", "-tvf", "-"}, {"bsdtar", "-tvf", "-"}} {
			if out := clitool.Run(t, data, ref[0], ref[1:]...); !bytes.Contains(out, []byte("a.txt")) {
				t.Fatalf("%s does not read the patched tar as the test expects:\n%s", ref[0], out)
			}
		}
		recs, _, err := readObject(t, Auto, "x.tar", data, 0)
		if err != nil {
			t.Fatal(err)
		}
		sameRecords(t, recs, []entryRecord{{"a.txt", "a1"}}) // no record of 14 NULs in e.txt
	})
	t.Run("a header's malformed mtime is refused, as GNU tar refuses it", func(t *testing.T) {
		data := patchTarHeader(tarball, 512, func(h []byte) { copy(h[136:148], "12x4567\x00\x00\x00\x00\x00") })
		if _, err := clitool.Output(data, "tar", "-tf", "-"); err == nil {
			t.Fatal("GNU tar reads the patched header")
		}
		if recs, _, err := readObject(t, Auto, "x.tar", data, 0); !errors.Is(err, ErrCorrupt) || len(recs) != 0 {
			t.Fatalf("records %v, err %v; want none and ErrCorrupt", recs, err)
		}
	})
	t.Run("a stream that ends inside an entry's padding is cut short", func(t *testing.T) {
		end := 512 + 512 + 3 // a.txt's header, its 3 bytes, then 509 bytes of padding
		for _, cut := range []int{end, end + 100} {
			recs, _, err := readObject(t, Auto, "x.tar", tarball[:cut], 0)
			if !errors.Is(err, ErrCorrupt) {
				t.Errorf("cut at %d: records %v, err %v; want ErrCorrupt", cut, recs, err)
			}
		}
	})
	t.Run("PAX records: a malformed mtime, a NUL in the path", func(t *testing.T) {
		// Written by Python's tarfile, which writes the records it is given.
		script := `import sys, tarfile, io
t = tarfile.open(fileobj=sys.stdout.buffer, mode="w|", format=tarfile.PAX_FORMAT)
for name, pax in (("m.txt", {"mtime": "12:30"}), ("n.txt", {"path": "n.txt\x00junk"})):
    ti = tarfile.TarInfo(name); ti.size = 3; ti.pax_headers = pax
    t.addfile(ti, io.BytesIO(b"r1\n"))
t.close()`
		data := clitool.Run(t, nil, "python3", "-c", script)
		if out := clitool.Run(t, data, "tar", "-tf", "-"); !bytes.Contains(out, []byte("n.txt\n")) {
			t.Fatalf("GNU tar lists:\n%s", out)
		}
		recs, _, err := readObject(t, Auto, "x.tar", data, 0)
		if err != nil {
			t.Fatal(err)
		}
		sameRecords(t, recs, []entryRecord{{"m.txt", "r1"}, {"n.txt", "r1"}})
	})
	t.Run("a tar-named object that is no tar is refused", func(t *testing.T) {
		data := bytes.Clone(tarball)
		data[148] ^= 1 // the first header's checksum
		for _, c := range tarCodecs {
			recs, _, err := readObject(t, Auto, "x"+c.ext, compressTar(t, data, c.tool), 0)
			if !errors.Is(err, ErrCorrupt) || len(recs) != 0 {
				t.Errorf("%s: records %v, err %v; want none and ErrCorrupt", c.ext, recs, err)
			}
		}
		// Empty archives are archives: no bytes, or only the end-of-archive blocks.
		for _, empty := range [][]byte{nil, make([]byte, 10240)} {
			for _, c := range tarCodecs[1:] {
				if recs, _, err := readObject(t, Auto, "x"+c.ext, compressTar(t, empty, c.tool), 0); err != nil || len(recs) != 0 {
					t.Errorf("empty %s (%d bytes): records %v, err %v", c.ext, len(empty), recs, err)
				}
			}
		}
	})
	t.Run("GNU sparse PAX versions", func(t *testing.T) {
		sp := clitool.WriteFiles(t, nil)
		sparseFile(t, sp, "sparse.bin")
		data := clitool.RunIn(t, sp, nil, "tar", "--format=pax", "-S", "--sparse-version=1.0", "-cf", "-", "sparse.bin")
		want := fileRecords(t, sp, "sparse.bin")
		// The minor record lost: GNU tar reads it as 1.0, and so does s3io.
		lost := bytes.Replace(data, []byte("GNU.sparse.minor=0"), []byte("GNU.sparse.minoq=0"), 1)
		if bytes.Equal(lost, data) {
			t.Fatal("no GNU.sparse.minor record")
		}
		recs, _, err := readObject(t, Auto, "x.tar", lost, 0)
		if err != nil {
			t.Fatal(err)
		}
		sameRecords(t, recs, want)
		// An unknown version is refused: read as a regular file, its sparse map would be
		// records.
		unknown := bytes.Replace(data, []byte("GNU.sparse.major=1"), []byte("GNU.sparse.major=3"), 1)
		if recs, _, err := readObject(t, Auto, "x.tar", unknown, 0); !errors.Is(err, ErrCorrupt) || len(recs) != 0 {
			t.Fatalf("version 3.0: records %d, err %v; want none and ErrCorrupt", len(recs), err)
		}
	})
	t.Run("what tar readers read two ways is refused", func(t *testing.T) {
		// A FIFO's header declaring one block of data: GNU tar skips the block, bsdtar and
		// Python read a header there. Here that block is a.txt's header: GNU tar lists no
		// a.txt, the others do.
		fifo := patchTarHeader(tarball, 0, func(h []byte) { h[156] = '6'; copy(h[124:136], "00000001000\x00") })
		gnu, _ := clitool.Output(fifo, "tar", "-tf", "-")
		bsd, _ := clitool.Output(fifo, "bsdtar", "-tf", "-")
		if bytes.Contains(gnu, []byte("a.txt")) || !bytes.Contains(bsd, []byte("a.txt")) {
			t.Fatalf("GNU tar lists %q, bsdtar %q: not the disagreement the test expects", gnu, bsd)
		}
		if recs, _, err := readObject(t, Auto, "x.tar", fifo, 0); !errors.Is(err, ErrCorrupt) || len(recs) != 0 {
			t.Fatalf("a FIFO with data: records %v, err %v; want none and ErrCorrupt", recs, err)
		}
	})
	t.Run("entry types s3io does not read are refused by name", func(t *testing.T) {
		for _, flag := range []byte{'M', 'A', 'X'} {
			data := patchTarHeader(tarball, 512, func(h []byte) { h[156] = flag })
			recs, _, err := readObject(t, Auto, "x.tar", data, 0)
			if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), `"a.txt"`) || len(recs) != 0 {
				t.Errorf("type %q: records %v, err %v; want ErrUnsupported naming a.txt", flag, recs, err)
			}
		}
	})
}

// TestTarballResumesReachTheCheck resumes a compressed tarball after each of its records, as
// a split's residual does (Discard decodes up to its offset without framing): every resumed
// read still ends in the codec's check and fails a tarball whose data changed under it, and
// one whose tar is followed by junk.
func TestTarballResumesReachTheCheck(t *testing.T) {
	good := clitool.WriteFiles(t, map[string]string{"a.txt": "Kilts\nsecond\n", "b.txt": "b1\nb2\n"})
	bad := clitool.WriteFiles(t, map[string]string{"a.txt": "Kimts\nsecond\n", "b.txt": "b1\nb2\n"})
	tarOf := func(dir string) []byte {
		return clitool.RunIn(t, dir, nil, "tar", "--mtime=2020-01-01", "--owner=0", "--group=0", "-cf", "-", "a.txt", "b.txt")
	}
	a, b := clitool.Run(t, tarOf(good), "gzip", "-c"), clitool.Run(t, tarOf(bad), "gzip", "-c")
	if len(a) != len(b) {
		t.Fatal("the two tarballs differ in length")
	}
	objects := map[string][]byte{
		"changed under its CRC": append(bytes.Clone(b[:len(b)-8]), a[len(a)-8:]...),
		"junk after the tar":    clitool.Run(t, append(tarOf(good), "junk"...), "gzip", "-c"),
	}
	open := func(data []byte) *RecordReader {
		d := &Decompressors{}
		t.Cleanup(d.Close)
		entries, _, _, err := d.OpenEntries(Auto, ObjectInfo{Key: "x.tar.gz", Size: int64(len(data))}, bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		return NewEntriesRecordReader(entries, func() Framer { return FramerFunc(FrameLines) }, 1<<20)
	}
	for name, data := range objects {
		// The offsets after each record, from a whole read that fails at the end.
		rr := open(data)
		var ends []int64
		for {
			_, _, err := rr.Next()
			if err != nil {
				if !errors.Is(err, ErrCorrupt) {
					t.Fatalf("%s, whole: err %v, want ErrCorrupt", name, err)
				}
				break
			}
			ends = append(ends, rr.offset)
		}
		if len(ends) != 4 {
			t.Fatalf("%s: %d records before the failure, want 4", name, len(ends))
		}
		for _, end := range ends {
			rr := open(data)
			err := rr.Discard(end)
			for err == nil {
				_, _, err = rr.Next()
			}
			if !errors.Is(err, ErrCorrupt) {
				t.Errorf("%s, resumed at byte %d: err %v, want ErrCorrupt", name, end, err)
			}
		}
	}
}
