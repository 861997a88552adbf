package decode

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spate-io/beam-s3/internal/clitool"
)

// zipBuilt runs each command (a tool and its arguments) in dir, the tools writing or
// updating out.zip there, and returns out.zip's bytes.
func zipBuilt(t *testing.T, dir string, cmds ...[]string) []byte {
	t.Helper()
	os.Remove(filepath.Join(dir, "out.zip"))
	for _, c := range cmds {
		clitool.RunIn(t, dir, nil, c[0], c[1:]...)
	}
	data, err := os.ReadFile(filepath.Join(dir, "out.zip"))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// unzipRecords is what `unzip -p` extracts of each of the entries names, in that order,
// framed as lines (a final line without a newline is a record, a CR before the LF is not
// part of it).
func unzipRecords(t *testing.T, data []byte, names ...string) []entryRecord {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "x.zip"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	var want []entryRecord
	for _, name := range names {
		s := bufio.NewScanner(bytes.NewReader(clitool.RunIn(t, dir, nil, "unzip", "-p", "x.zip", name)))
		s.Buffer(nil, 1<<20)
		for s.Scan() {
			want = append(want, entryRecord{name, s.Text()})
		}
		if s.Err() != nil {
			t.Fatal(s.Err())
		}
	}
	if len(want) == 0 {
		t.Fatal("unzip -p extracted no records")
	}
	return want
}

// zipEOCD returns the offset of data's end of central directory record, the last one.
func zipEOCD(t *testing.T, data []byte) int {
	t.Helper()
	i := bytes.LastIndex(data[:len(data)-18], []byte("PK\x05\x06"))
	if i < 0 {
		t.Fatal("no end of central directory record")
	}
	return i
}

// zipHeaders returns the offsets of the local header and the central directory header of
// the entry name.
func zipHeaders(t *testing.T, data []byte, name string) (local, central int) {
	t.Helper()
	local, central = -1, -1
	for i := 0; i+46 <= len(data); i++ {
		switch {
		case bytes.HasPrefix(data[i:], []byte("PK\x03\x04")):
			n := int(binary.LittleEndian.Uint16(data[i+26:]))
			if string(data[i+30:i+30+n]) == name {
				local = i
			}
		case bytes.HasPrefix(data[i:], []byte("PK\x01\x02")):
			n := int(binary.LittleEndian.Uint16(data[i+28:]))
			if string(data[i+46:i+46+n]) == name {
				central = i
			}
		}
	}
	if local < 0 || central < 0 {
		t.Fatalf("no headers for %q", name)
	}
	return local, central
}

// refusedWhole fails t unless reading data yielded no records and an error wrapping
// ErrUnsupported that holds each of says (the refused entry's quoted name first).
func refusedWhole(t *testing.T, data []byte, says ...string) {
	t.Helper()
	recs, _, err := readObject(t, Auto, "x.zip", data, 0)
	if !errors.Is(err, ErrUnsupported) || len(recs) != 0 {
		t.Fatalf("records %v, err %v; want none and ErrUnsupported", recs, err)
	}
	for _, s := range says {
		if !strings.Contains(err.Error(), s) {
			t.Fatalf("err %q does not say %q", err, s)
		}
	}
}

// TestZipRefusedBeforeTheFirstRecord: a zip whose later entry s3io does not read
// (encrypted, LZMA, another method, a name s3io refuses) is refused before its first
// entry's records, naming that entry: an unsupported object emits no records.
func TestZipRefusedBeforeTheFirstRecord(t *testing.T) {
	files := map[string]string{"a.txt": "a1\na2\n", "d.txt": "d1\nd2\n", "old.7z": "not read\n", "empty.7z": ""}
	var big strings.Builder // 7z stores what it cannot shrink: big.txt compresses
	for i := range 500 {
		fmt.Fprintf(&big, "line %d\n", i)
	}
	files["big.txt"] = big.String()
	dir := clitool.WriteFiles(t, files)
	clitool.RunIn(t, dir, nil, "tar", "-cf", "inner.tar", "a.txt")
	first := []string{"zip", "-q", "-X", "out.zip", "a.txt"} // a readable first entry
	for _, c := range []struct {
		name string
		then []string // adds the refused entry
		says []string
	}{
		{"encrypted (zip -P)", []string{"zip", "-q", "-X", "-P", "pw", "out.zip", "d.txt"}, []string{`"d.txt"`, "encrypted"}},
		{"AES-encrypted (7z -mem=AES256)", []string{"7z", "a", "-tzip", "-mem=AES256", "-ppw", "out.zip", "big.txt"}, []string{`"big.txt"`, "encrypted"}},
		{"LZMA (7z -mm=LZMA)", []string{"7z", "a", "-tzip", "-mm=LZMA", "out.zip", "big.txt"}, []string{`"big.txt"`, "LZMA (method 14)"}},
		{"PPMd (7z -mm=PPMd)", []string{"7z", "a", "-tzip", "-mm=PPMd", "out.zip", "big.txt"}, []string{`"big.txt"`, "method 98"}},
		{"Deflate64 (7z -mm=Deflate64)", []string{"7z", "a", "-tzip", "-mm=Deflate64", "out.zip", "big.txt"}, []string{`"big.txt"`, "method 9;"}},
		{"named as a 7z archive", []string{"zip", "-q", "-X", "out.zip", "old.7z"}, []string{`"old.7z"`, "7z archive"}},
		{"named as a tar", []string{"zip", "-q", "-X", "out.zip", "inner.tar"}, []string{`"inner.tar"`, "itself a tar archive"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			refusedWhole(t, zipBuilt(t, dir, first, c.then), c.says...)
		})
	}
	t.Run("the first refused entry is named; what yields no records refuses nothing", func(t *testing.T) {
		// After a.txt: a directory flagged encrypted (no tool writes one: the flag is set by
		// hand), a link zip -P encrypts, an empty entry named .7z (an empty stream whatever
		// its name), then an LZMA entry and an encrypted one.
		if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("a.txt", filepath.Join(dir, "link")); err != nil {
			t.Fatal(err)
		}
		data := zipBuilt(t, dir, first,
			[]string{"zip", "-q", "-X", "-y", "-P", "pw", "out.zip", "sub", "link"},
			[]string{"zip", "-q", "-X", "out.zip", "empty.7z"},
			[]string{"7z", "a", "-tzip", "-mm=LZMA", "out.zip", "big.txt"},
			[]string{"zip", "-q", "-X", "-P", "pw", "out.zip", "d.txt"})
		local, central := zipHeaders(t, data, "sub/")
		data[local+6] |= 1
		data[central+8] |= 1
		refusedWhole(t, data, `"big.txt"`, "LZMA", "1 later entry")
	})
}

// TestZipCommentLength reads zips whose end of central directory record declares a
// comment that is not the bytes after it, as `unzip -p` extracts them.
func TestZipCommentLength(t *testing.T) {
	dir := clitool.WriteFiles(t, archiveInput)
	deflated := zipBuilt(t, dir, append([]string{"zip", "-q", "-X", "out.zip"}, archiveOrder...))
	withComment := func(comment string, data []byte) []byte {
		if err := os.WriteFile(filepath.Join(dir, "c.zip"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		clitool.RunIn(t, dir, []byte(comment), "zip", "-q", "-z", "c.zip") // zip -z reads stdin
		data, err := os.ReadFile(filepath.Join(dir, "c.zip"))
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	// declare sets the comment length data's record declares.
	declare := func(data []byte, n int) []byte {
		data = bytes.Clone(data)
		binary.LittleEndian.PutUint16(data[zipEOCD(t, data)+20:], uint16(n))
		return data
	}
	commented := withComment("a comment", deflated)
	// An entry larger than the first ranged GET: it is read from the stream, not the tail.
	large := clitool.WriteFiles(t, map[string]string{"large.txt": strings.Repeat("a 40-byte line of the larger entry ...\n", 5000)})
	largeZip := zipBuilt(t, large, []string{"zip", "-q", "-X", "-0", "out.zip", "large.txt"})
	cases := []struct {
		name  string
		data  []byte
		names []string
	}{
		{"the declared comment overruns the object", declare(commented, len("a comment")+100), archiveOrder},
		{"a comment declared, no bytes after the record", declare(deflated, 5), archiveOrder},
		{"the declared comment overruns, entries past the tail", declare(largeZip, 300), []string{"large.txt"}},
		// Bytes after the comment archive/zip reads already, but one that holds the record's
		// signature within 22 bytes of the end was taken for the record.
		{"bytes after the declared comment", declare(append(bytes.Clone(commented), "trailing PK\x05\x06 bytes"...), 3), archiveOrder},
		{"bytes after the record", append(bytes.Clone(deflated), "PK\x05\x06"...), archiveOrder},
		{"the signature at the comment's end (zip -z)", withComment("a comment PK\x05\x06", deflated), archiveOrder},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want := unzipRecords(t, c.data, c.names...)
			recs, gets, err := readObject(t, Auto, "x.zip", c.data, 0)
			if err != nil {
				t.Fatal(err)
			}
			sameRecords(t, recs, want)
			if gets != 1 {
				t.Errorf("%d ranged GETs of the tail, want 1", gets)
			}
		})
	}
	t.Run("the comment changes no content", func(t *testing.T) {
		// Still every entry's CRC-32 is checked: the entries before the changed one are read.
		bad := declare(zipBuilt(t, dir, append([]string{"zip", "-q", "-X", "-0", "out.zip"}, archiveOrder...)), 100)
		bad[bytes.Index(bad, []byte("d1\n"))] ^= 0x20
		recs, _, err := readObject(t, Auto, "x.zip", bad, 0)
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "CRC-32") {
			t.Fatalf("err %v, want ErrCorrupt for the CRC-32", err)
		}
		if bound := append(archiveWant[:4:4], entryRecord{"d.txt", "D1"}); len(recs) < 4 || fmt.Sprint(recs) != fmt.Sprint(bound[:len(recs)]) {
			t.Fatalf("records %v, want the first 4 of %v", recs, bound)
		}
	})
}

// TestZipLastEntryChecked: every entry, the last one too, is read to its end, where its
// CRC-32 is checked: a last entry with bytes after its last newline, an empty last entry,
// a changed byte in the last entry, a last entry whose CRC-32 is given as 0, in stored,
// deflated and bzip2 entries.
func TestZipLastEntryChecked(t *testing.T) {
	var last strings.Builder // long enough for zip to compress it rather than store it
	for i := range 200 {
		fmt.Fprintf(&last, "l%d\n", i)
	}
	last.WriteString("l200 after the last newline")
	files := map[string]string{"a.txt": "a1\na2\n", "last.txt": last.String(), "empty.txt": ""}
	dir := clitool.WriteFiles(t, files)
	for _, m := range []struct {
		name   string
		args   []string
		method uint16
	}{{"stored", []string{"-0"}, 0}, {"deflate", nil, 8}, {"bzip2", []string{"-Z", "bzip2"}, 12}} {
		build := func(t *testing.T, names ...string) []byte {
			data := zipBuilt(t, dir, append(append(append([]string{"zip", "-q", "-X"}, m.args...), "out.zip"), names...))
			if local, _ := zipHeaders(t, data, "last.txt"); binary.LittleEndian.Uint16(data[local+8:]) != m.method {
				t.Fatalf("zip wrote last.txt with method %d, want %d", binary.LittleEndian.Uint16(data[local+8:]), m.method)
			}
			return data
		}
		t.Run(m.name+"/bytes after the last newline", func(t *testing.T) {
			data := build(t, "a.txt", "last.txt")
			recs, _, err := readObject(t, Auto, "x.zip", data, 0)
			if err != nil {
				t.Fatal(err)
			}
			sameRecords(t, recs, unzipRecords(t, data, "a.txt", "last.txt"))
		})
		t.Run(m.name+"/an empty last entry", func(t *testing.T) {
			data := build(t, "a.txt", "last.txt", "empty.txt")
			recs, _, err := readObject(t, Auto, "x.zip", data, 0)
			if err != nil {
				t.Fatal(err)
			}
			sameRecords(t, recs, unzipRecords(t, data, "a.txt", "last.txt", "empty.txt"))
		})
		t.Run(m.name+"/a changed byte in the last entry", func(t *testing.T) {
			data := build(t, "a.txt", "last.txt")
			local, _ := zipHeaders(t, data, "last.txt")
			size := int(binary.LittleEndian.Uint32(data[local+18:]))
			body := local + 30 + int(binary.LittleEndian.Uint16(data[local+26:])) + int(binary.LittleEndian.Uint16(data[local+28:]))
			for _, at := range []int{body, body + size/2, body + size - 1} {
				bad := bytes.Clone(data)
				bad[at] ^= 0x01
				recs, _, err := readObject(t, Auto, "x.zip", bad, 0)
				if !errors.Is(err, ErrCorrupt) {
					t.Fatalf("byte %d of the entry's %d changed: records %v, err %v; want ErrCorrupt", at-body, size, recs, err)
				}
			}
		})
		t.Run(m.name+"/a CRC-32 of 0 is checked too", func(t *testing.T) {
			// archive/zip takes a CRC-32 of 0 for "not set"; unzip, Python's zipfile and
			// bsdtar check it, and refuse these bytes, changed or not.
			data := build(t, "a.txt", "last.txt")
			local, central := zipHeaders(t, data, "last.txt")
			clear(data[local+14 : local+18])
			clear(data[central+16 : central+20])
			bad := [][]byte{data}
			if m.method == 0 {
				changed := bytes.Clone(data)
				changed[bytes.Index(changed, []byte("l200 after"))] ^= 0x20
				bad = append(bad, changed)
			}
			for i, b := range bad {
				recs, _, err := readObject(t, Auto, "x.zip", b, 0)
				if !errors.Is(err, ErrCorrupt) {
					t.Fatalf("object %d: records %v, err %v; want ErrCorrupt", i, recs, err)
				}
			}
		})
	}
}

// TestZipManyEntries reads a zip of more than 65535 entries: its end of central directory
// record counts 0xffff and a zip64 record the rest, while the directory's size and offset
// fit in the first record (Python's zipfile writes it so).
func TestZipManyEntries(t *testing.T) {
	const n = 65537
	data := clitool.Run(t, nil, "python3", "-c", fmt.Sprintf(`
import io, sys, zipfile
b = io.BytesIO()
with zipfile.ZipFile(b, "w") as z:
    for i in range(%d):
        z.writestr("e%%05d" %% i, "r%%d\n" %% i if i %% 20000 == 0 or i == %d - 1 else "")
sys.stdout.buffer.write(b.getvalue())
`, n, n))
	eocd := zipEOCD(t, data)
	if binary.LittleEndian.Uint16(data[eocd+10:]) != 0xffff || binary.LittleEndian.Uint32(data[eocd+16:]) == 0xffffffff {
		t.Fatal("python3 wrote no zip64 count with a 32-bit directory offset")
	}
	var want []entryRecord
	for i := 0; i < n; i++ {
		if i%20000 == 0 || i == n-1 {
			want = append(want, entryRecord{fmt.Sprintf("e%05d", i), fmt.Sprintf("r%d", i)})
		}
	}
	recs, _, err := readObject(t, Auto, "x.zip", data, 0)
	if err != nil {
		t.Fatal(err)
	}
	sameRecords(t, recs, want)
}

// TestZipHeaderPastTheEnd: a directory entry whose local header offset lies past the
// object's end is corruption, not the end of the stream.
func TestZipHeaderPastTheEnd(t *testing.T) {
	dir := clitool.WriteFiles(t, archiveInput)
	data := zipBuilt(t, dir, append([]string{"zip", "-q", "-X", "-0", "out.zip"}, archiveOrder...))
	_, central := zipHeaders(t, data, "a.txt")
	binary.LittleEndian.PutUint32(data[central+42:], 1<<24) // sorted last: read after the others
	recs, _, err := readObject(t, Auto, "x.zip", data, 0)
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), `"a.txt"`) {
		t.Fatalf("records %v, err %v; want ErrCorrupt naming the entry", recs, err)
	}
}

// refusedCorrupt fails t unless reading data yielded no records and an error wrapping
// ErrCorrupt that holds each of says.
func refusedCorrupt(t *testing.T, data []byte, says ...string) {
	t.Helper()
	recs, _, err := readObject(t, Auto, "x.zip", data, 0)
	if !errors.Is(err, ErrCorrupt) || len(recs) != 0 {
		t.Fatalf("%d records (%v), err %v; want none and ErrCorrupt", len(recs), recs[:min(len(recs), 2)], err)
	}
	for _, s := range says {
		if !strings.Contains(err.Error(), s) {
			t.Fatalf("err %q does not say %q", err, s)
		}
	}
}

// unzipRefuses fails t unless `unzip -p` exits non-zero on data (a warning, exit 1, too).
func unzipRefuses(t *testing.T, data []byte) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "x.zip"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := clitool.OutputIn(dir, nil, "unzip", "-p", "x.zip"); err == nil {
		t.Fatalf("unzip -p reads the object (%q); the case assumes it refuses it", out)
	}
}

// TestZipLocalHeaderDisagrees: an entry whose local header disagrees with its central
// directory record (the name, the method, the encryption or UTF-8 flag; the CRC-32 or a
// size where no data descriptor follows, in the zip64 extra field too) is corrupt, refused
// before its first record. archive/zip reads the directory's fields alone; unzip extracts
// by the local header's and refuses these (bad CRC, unknown method, ucsize <> csize for a
// stored entry, a warning for a name or UTF-8 flag), all but the encryption flag, which it
// takes from the directory: that entry is damaged all the same. Headers that agree are
// read, a zip64 local header (zip -fz) and local headers of zeros before a data
// descriptor (zip writing to a pipe) among them.
func TestZipLocalHeaderDisagrees(t *testing.T) {
	var big strings.Builder // long enough for zip to deflate it
	for i := range 200 {
		fmt.Fprintf(&big, "line %d\n", i)
	}
	dir := clitool.WriteFiles(t, map[string]string{"a.txt": "a1\na2\n", "b.txt": "b1\nb2\n", "big.txt": big.String()})
	stored := zipBuilt(t, dir, []string{"zip", "-q", "-X", "-0", "out.zip", "a.txt", "b.txt"})
	deflated := zipBuilt(t, dir, []string{"zip", "-q", "-X", "out.zip", "big.txt", "b.txt"})
	zip64 := zipBuilt(t, dir, []string{"zip", "-q", "-X", "-0", "-fz", "out.zip", "a.txt", "b.txt"})
	piped := clitool.RunIn(t, dir, nil, "zip", "-q", "-X", "-", "big.txt", "b.txt") // stdout is a pipe
	if local, _ := zipHeaders(t, deflated, "big.txt"); binary.LittleEndian.Uint16(deflated[local+8:]) != 8 {
		t.Fatal("zip stored big.txt; the cases want it deflated")
	}
	if local, _ := zipHeaders(t, piped, "big.txt"); binary.LittleEndian.Uint16(piped[local+6:])&0x8 == 0 {
		t.Fatal("zip wrote to a pipe without a data descriptor")
	}
	t.Run("headers that agree are read", func(t *testing.T) {
		for i, c := range []struct {
			data  []byte
			names []string
		}{{stored, []string{"a.txt", "b.txt"}}, {deflated, []string{"big.txt", "b.txt"}}, {zip64, []string{"a.txt", "b.txt"}}, {piped, []string{"big.txt", "b.txt"}}} {
			recs, _, err := readObject(t, Auto, "x.zip", c.data, 0)
			if err != nil {
				t.Fatalf("object %d: %v", i, err)
			}
			sameRecords(t, recs, unzipRecords(t, c.data, c.names...))
		}
	})
	for _, c := range []struct {
		name         string
		data         []byte
		entry        string // the first entry, whose local header is changed
		change       func(b []byte, local int)
		unzipRefuses bool
		says         string
	}{
		{"the name", stored, "a.txt", func(b []byte, l int) { b[l+30] = 'A' }, true, `its local header names it "A.txt"`},
		{"the method, deflate to store", deflated, "big.txt", func(b []byte, l int) { b[l+8] = 0 }, true, "its local header says method 0, the central directory 8"},
		{"an unknown method", deflated, "big.txt", func(b []byte, l int) { b[l+8] = 77 }, true, "its local header says method 77, the central directory 8"},
		{"the encryption flag", stored, "a.txt", func(b []byte, l int) { b[l+6] |= 0x1 }, false, "bit 0 (encrypted)"},
		{"the UTF-8 flag", stored, "a.txt", func(b []byte, l int) { b[l+7] |= 0x8 }, true, "bit 11"},
		{"the CRC-32", stored, "a.txt", func(b []byte, l int) { b[l+14] ^= 0x1 }, true, "CRC-32"},
		{"the compressed size", stored, "a.txt", func(b []byte, l int) { b[l+18]++ }, true, "7 compressed bytes, the central directory 6"},
		{"the uncompressed size", stored, "a.txt", func(b []byte, l int) { b[l+22]-- }, true, "5 uncompressed bytes, the central directory 6"},
		{"the compressed size in the zip64 extra field", zip64, "a.txt", func(b []byte, l int) {
			if binary.LittleEndian.Uint32(b[l+18:]) != 0xffffffff || binary.LittleEndian.Uint16(b[l+30+5:]) != 1 {
				t.Fatal("zip -fz wrote no zip64 sizes into the local header")
			}
			b[l+30+5+4+8]++ // after the uncompressed size
		}, true, "7 compressed bytes, the central directory 6"},
	} {
		t.Run(c.name, func(t *testing.T) {
			data := bytes.Clone(c.data)
			local, _ := zipHeaders(t, data, c.entry)
			if local != 0 {
				t.Fatalf("%s is not the first entry", c.entry)
			}
			c.change(data, local)
			if c.unzipRefuses {
				unzipRefuses(t, data)
			}
			refusedCorrupt(t, data, fmt.Sprintf("%q", c.entry), c.says)
		})
	}
	t.Run("a data descriptor's local header is not compared", func(t *testing.T) {
		// Before a data descriptor the local CRC-32 and sizes are zeros (unzip takes the
		// directory's); set, they change nothing either.
		data := bytes.Clone(piped)
		local, _ := zipHeaders(t, data, "big.txt")
		binary.LittleEndian.PutUint32(data[local+14:], 0x12345678)
		binary.LittleEndian.PutUint32(data[local+18:], 3)
		recs, _, err := readObject(t, Auto, "x.zip", data, 0)
		if err != nil {
			t.Fatal(err)
		}
		sameRecords(t, recs, unzipRecords(t, data, "big.txt", "b.txt"))
	})
}

// refusedSplit fails t unless reading data yielded no records and an error wrapping
// ErrUnsupported that names a split zip and holds says.
func refusedSplit(t *testing.T, data []byte, says string) {
	t.Helper()
	refusedWhole(t, data, "a zip split across disks (zip -s)", "zip -s 0", says)
}

// TestZipSplitAcrossDisks: the last part of a split zip (zip -s), and an end record or zip64
// end record whose disk numbers are not 0 or whose entry counts on this disk and in all
// differ (a spanned archive, or damage), is refused as unsupported before any record, as
// unzip ("Zipfile is disk N of a multi-disk archive", exit 11, or a warning) and Python's
// zipfile ("zipfiles that span multiple disks are not supported") refuse it. archive/zip
// checks none of these fields.
func TestZipSplitAcrossDisks(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	random := make([]byte, 200<<10) // incompressible: the parts of 64 KiB are 4
	for i := range random {
		random[i] = byte(r.Uint32())
	}
	dir := clitool.WriteFiles(t, map[string]string{"r.bin": string(random), "a.txt": "a1\na2\n", "b.txt": "b1\nb2\n"})
	t.Run("the last part of zip -s 64k", func(t *testing.T) {
		clitool.RunIn(t, dir, nil, "zip", "-q", "-X", "-s", "64k", "split.zip", "a.txt", "r.bin", "b.txt")
		data, err := os.ReadFile(filepath.Join(dir, "split.zip"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(dir, "split.z03")); err != nil {
			t.Fatalf("zip -s 64k wrote no fourth part: %v", err)
		}
		unzipRefuses(t, data)
		refusedSplit(t, data, "this is disk 3 and the central directory starts on disk 3")
	})
	plain := zipBuilt(t, dir, []string{"zip", "-q", "-X", "-0", "out.zip", "a.txt", "b.txt"})
	zip64 := zipBuilt(t, dir, []string{"zip", "-q", "-X", "-0", "-fz", "out.zip", "a.txt", "b.txt"})
	// at returns the offset of data's last signature sig.
	at := func(data []byte, sig string) int {
		i := bytes.LastIndex(data, []byte(sig))
		if i < 0 {
			t.Fatalf("no %q record", sig)
		}
		return i
	}
	put16 := func(off int, v uint16) func([]byte) {
		return func(b []byte) { binary.LittleEndian.PutUint16(b[at(b, "PK\x05\x06")+off:], v) }
	}
	put64 := func(sig string, off int, v uint64) func([]byte) {
		return func(b []byte) {
			switch sig {
			case "PK\x06\x06": // 32-bit disk numbers, 64-bit counts
				if off < 24 {
					binary.LittleEndian.PutUint32(b[at(b, sig)+off:], uint32(v))
					return
				}
				binary.LittleEndian.PutUint64(b[at(b, sig)+off:], v)
			case "PK\x06\x07": // 32-bit disk numbers
				binary.LittleEndian.PutUint32(b[at(b, sig)+off:], uint32(v))
			}
		}
	}
	if eocd := at(zip64, "PK\x05\x06"); binary.LittleEndian.Uint32(zip64[eocd+16:]) != 0xffffffff || at(zip64, "PK\x06\x07") != eocd-20 {
		t.Fatal("zip -fz wrote no end record that sends the reader to the zip64 record")
	}
	for _, c := range []struct {
		name   string
		data   []byte
		change func([]byte)
		says   string
	}{
		{"the end record's disk is 1", plain, put16(4, 1), "this is disk 1 and the central directory starts on disk 0"},
		{"the end record's directory disk is 1", plain, put16(6, 1), "this is disk 0 and the central directory starts on disk 1"},
		{"the end record counts 1 entry on this disk of 2", plain, put16(8, 1), "counts 1 central directory entries on this disk of 2"},
		{"the zip64 record's disk is 1", zip64, put64("PK\x06\x06", 16, 1), "its zip64 end record says this is disk 1"},
		{"the zip64 record's directory disk is 1", zip64, put64("PK\x06\x06", 20, 1), "the central directory starts on disk 1"},
		{"the zip64 record counts 1 entry on this disk of 2", zip64, put64("PK\x06\x06", 24, 1), "its zip64 end record counts 1"},
		{"the zip64 locator counts 2 disks", zip64, put64("PK\x06\x07", 16, 2), "zip64 end record is on disk 0 of 2"},
		{"the zip64 locator's disk is 1", zip64, put64("PK\x06\x07", 4, 1), "zip64 end record is on disk 1 of 1"},
		{"the end record's 0xffff defers to the zip64 record's 1", zip64, func(b []byte) {
			put16(4, 0xffff)(b)
			put64("PK\x06\x06", 16, 1)(b)
		}, "its end record says this is disk 1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			data := bytes.Clone(c.data)
			c.change(data)
			refusedSplit(t, data, c.says)
		})
	}
	t.Run("the end record's 0xffff defers to the zip64 record's 0", func(t *testing.T) {
		data := bytes.Clone(zip64)
		for _, off := range []int{4, 6, 8, 10} {
			put16(off, 0xffff)(data)
		}
		recs, _, err := readObject(t, Auto, "x.zip", data, 0)
		if err != nil {
			t.Fatal(err)
		}
		sameRecords(t, recs, unzipRecords(t, data, "a.txt", "b.txt"))
	})
}

// TestZipDirectoryFieldsUnzipRefuses: a directory record whose Unix mode names no file
// type unzip knows (it lists the entry as "?" and extracts no file), or whose "version
// needed to extract" is above 6.3 (unzip exits 81, Python refuses), fails before any record.
func TestZipDirectoryFieldsUnzipRefuses(t *testing.T) {
	dir := clitool.WriteFiles(t, map[string]string{"a.txt": "a1\n", "b.txt": "b1\n"})
	data := zipBuilt(t, dir, []string{"zip", "-q", "-X", "out.zip", "a.txt", "b.txt"})
	_, central := zipHeaders(t, data, "b.txt")
	if data[central+5] != 3 {
		t.Fatalf("zip did not write the entry as made on Unix (creator %d)", data[central+5])
	}
	unknownType := bytes.Clone(data)
	unknownType[central+38+3] = unknownType[central+38+3]&0x0f | 0xe0 // the mode's type bits
	recs, _, err := readObject(t, Auto, "x.zip", unknownType, 0)
	if !errors.Is(err, ErrCorrupt) || len(recs) != 0 || !strings.Contains(err.Error(), `"b.txt"`) {
		t.Fatalf("unknown file type: records %v, err %v; want none and ErrCorrupt naming b.txt", recs, err)
	}
	version := bytes.Clone(data)
	version[central+6] = 64
	if _, err := clitool.Output(nil, "unzip", "-p", writeTemp(t, version)); err == nil {
		t.Fatal("unzip reads an entry that needs version 6.4")
	}
	refusedWhole(t, version, `"b.txt"`, "version 6.4")
}

func writeTemp(t *testing.T, data []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "x.zip")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
