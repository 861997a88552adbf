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
