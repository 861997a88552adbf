package xz

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// decodeAll reads the whole of data through a Reader, reset onto it as the decode
// package does (one Reader, Reset per object).
func decodeAll(t *testing.T, z *Reader, data []byte) ([]byte, error) {
	t.Helper()
	if err := z.Reset(bytes.NewReader(data)); err != nil {
		return nil, err
	}
	return io.ReadAll(z)
}

func newReader(t *testing.T) *Reader {
	t.Helper()
	z, err := NewReader(nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	return z
}

// TestXZUtilsFiles reads the .xz test files of xz-utils (tests/files at commit
// 28a66a3d1b6a, 0BSD; testdata/xz-utils/README describes each): every good file
// decodes, every bad file fails, and the unsupported ones are refused as what they
// are. The files of filters (x86, PowerPC, SPARC, ARM64 with and without a start
// offset, Delta) carry a check of their output, so decoding them without an error
// is decoding them exactly.
func TestXZUtilsFiles(t *testing.T) {
	files, err := filepath.Glob("testdata/xz-utils/*.xz")
	if err != nil || len(files) < 60 {
		t.Fatalf("%d files, %v", len(files), err)
	}
	unsupported := map[string]error{
		"unsupported-check.xz":          ErrUnsupportedCheck,
		"unsupported-block_header.xz":   &OptionsError{Detail: "non-zero block header padding"},
		"unsupported-filter_flags-1.xz": &OptionsError{Filter: 0x7f},
		"unsupported-filter_flags-2.xz": &OptionsError{Filter: 0x03, Detail: "as the last filter of the chain, where LZMA2 must be"},
		"unsupported-filter_flags-3.xz": &OptionsError{Filter: 0x21, Detail: "as filter 1 of a chain of 2, before its end"},
	}
	z := newReader(t)
	for _, f := range files {
		name := filepath.Base(f)
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		_, err = decodeAll(t, z, data)
		switch {
		case strings.HasPrefix(name, "good-"):
			if err != nil {
				t.Errorf("%s: %v", name, err)
			}
		case strings.HasPrefix(name, "bad-"):
			if err == nil {
				t.Errorf("%s: decoded without an error", name)
			} else if errors.Is(err, ErrOptions) {
				t.Errorf("%s: %v, an unsupported-options error for a bad file", name, err)
			}
		default:
			want, ok := unsupported[name]
			if !ok {
				t.Errorf("%s: no expectation", name)
				continue
			}
			if want, ok := want.(*OptionsError); ok {
				var got *OptionsError
				if !errors.As(err, &got) || *got != *want || !errors.Is(err, ErrOptions) {
					t.Errorf("%s: %v, want %v", name, err, want)
				}
				continue
			}
			if !errors.Is(err, want) {
				t.Errorf("%s: %v, want %v", name, err, want)
			}
		}
	}
}

// TestRISCV reads the files MakeRISCV.java wrote with XZ for Java's RISC-V BCJ
// encoder (xz-utils 5.4 has none): real RV64GC code from glibc, and noise shaped
// like JAL and AUIPC instructions, once from offset 0 and once with a start offset
// that makes the positions wrap around 2^32. Their SHA-256 checks and the
// digests below say the output is exact.
func TestRISCV(t *testing.T) {
	for name, want := range map[string]string{
		"riscv-lzma2.xz":       "bf9f077eaa49bfa97624ea059531020aad3c5b647a8f027a14d137ed313a1176",
		"riscv-start-lzma2.xz": "331efb0951746175f24feb8509a8cce14c6458b4ccd5533b9238cfe1d17481c7",
	} {
		data, err := os.ReadFile(filepath.Join("testdata/riscv", name))
		if err != nil {
			t.Fatal(err)
		}
		z := newReader(t)
		out, err := decodeAll(t, z, data)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if z.CheckType != CheckSHA256 {
			t.Errorf("%s: check %v, want SHA256", name, z.CheckType)
		}
		if sum := sha256.Sum256(out); hex.EncodeToString(sum[:]) != want {
			t.Errorf("%s: %d bytes with SHA-256 %x, want %s", name, len(out), sum, want)
		}
		// Read in small pieces too: the BCJ decoder then works through its
		// 16-byte buffer, where RISC-V's 8-byte look-ahead matters.
		if err := z.Reset(bytes.NewReader(data)); err != nil {
			t.Fatal(err)
		}
		var small []byte
		buf := make([]byte, 7)
		for {
			n, err := z.Read(buf)
			small = append(small, buf[:n]...)
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("%s: small reads: %v", name, err)
			}
		}
		if !bytes.Equal(small, out) {
			t.Errorf("%s: small reads differ from large ones", name)
		}
	}
}

// withFilter returns the .xz file data, whose first block header's first filter
// has the one-byte ID from, with that ID replaced by to and the header's CRC32
// made good again: a file whose block is intact but asks for another filter.
func withFilter(t *testing.T, data []byte, from, to byte) []byte {
	t.Helper()
	out := bytes.Clone(data)
	h := out[12:]
	size := (int(h[0]) + 1) * 4
	if h[2] != from {
		t.Fatalf("first filter 0x%02x, want 0x%02x", h[2], from)
	}
	h[2] = to
	binary.LittleEndian.PutUint32(h[size-4:], crc32.ChecksumIEEE(h[:size-4]))
	return out
}

// TestOptionsError: a block whose intact header names a filter this package does
// not know, or a BCJ start offset that is not a multiple of the filter's
// alignment, is refused with an OptionsError naming the filter; the same header
// with a flipped byte is corruption (its CRC32 fails), not an options error.
func TestOptionsError(t *testing.T) {
	arm64, err := os.ReadFile("testdata/xz-utils/good-1-arm64-lzma2-1.xz")
	if err != nil {
		t.Fatal(err)
	}
	z := newReader(t)
	_, err = decodeAll(t, z, withFilter(t, arm64, 0x0a, 0x0c))
	var oe *OptionsError
	if !errors.As(err, &oe) || oe.Filter != 0x0c || !errors.Is(err, ErrOptions) ||
		err.Error() != "xz: compression options not supported: filter ID 0x0c (not one this package knows)" {
		t.Errorf("unknown filter: %v", err)
	}

	_, err = decodeAll(t, z, withFilter(t, arm64, 0x0a, 0x00))
	if !errors.As(err, &oe) || *oe != (OptionsError{Detail: "filter ID 0x00"}) {
		t.Errorf("filter ID 0: %v", err)
	}

	// good-1-arm64-lzma2-2.xz has the start offset 4294963200; 4294963202 is
	// not a multiple of ARM64's 4.
	start, err := os.ReadFile("testdata/xz-utils/good-1-arm64-lzma2-2.xz")
	if err != nil {
		t.Fatal(err)
	}
	h := bytes.Clone(start)
	if h[12+3] != 4 || binary.LittleEndian.Uint32(h[12+4:]) != 4294963200 {
		t.Fatalf("header % x", h[12:24])
	}
	binary.LittleEndian.PutUint32(h[12+4:], 4294963202)
	size := (int(h[12]) + 1) * 4
	binary.LittleEndian.PutUint32(h[12+size-4:], crc32.ChecksumIEEE(h[12:12+size-4]))
	_, err = decodeAll(t, z, h)
	if !errors.As(err, &oe) || oe.Filter != 0x0a ||
		err.Error() != "xz: compression options not supported: BCJ filter ARM64 (ID 0x0a) with start offset 4294963202, not a multiple of 4" {
		t.Errorf("unaligned start offset: %v", err)
	}

	flipped := bytes.Clone(arm64)
	flipped[12+2] ^= 0x06 // 0x0a → 0x0c without mending the CRC32
	if _, err = decodeAll(t, z, flipped); !errors.Is(err, ErrData) {
		t.Errorf("flipped filter ID: %v, want ErrData", err)
	}

	// The Reader refuses, then reads a good file after Reset.
	if _, err = decodeAll(t, z, arm64); err != nil {
		t.Errorf("after a refusal: %v", err)
	}
}

func TestFilterName(t *testing.T) {
	for id, want := range map[uint64]string{
		0x03: "Delta", 0x04: "x86", 0x05: "PowerPC", 0x06: "IA-64", 0x07: "ARM",
		0x08: "ARM-Thumb", 0x09: "SPARC", 0x0a: "ARM64", 0x0b: "RISC-V", 0x21: "LZMA2",
		0x0c: "", 0x4000000000000001: "",
	} {
		if got := FilterName(id); got != want {
			t.Errorf("FilterName(%#x) = %q, want %q", id, got, want)
		}
		if got, want := IsBCJ(id), id >= 4 && id <= 0x0b; got != want {
			t.Errorf("IsBCJ(%#x) = %v", id, got)
		}
	}
}

// TestRangeCoderFirstByte: an LZMA chunk's range coder starts with a zero byte, which the
// decoder shifts out; xz refuses a chunk whose first byte is not zero, and so does this
// copy, though the rest decodes as before.
func TestRangeCoderFirstByte(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "xz-utils", "good-1-lzma2-1.xz"))
	if err != nil {
		t.Fatal(err)
	}
	// Stream header (12 bytes), the block header ((size byte + 1) * 4 bytes), then the
	// first LZMA2 chunk: control, unpacked and packed sizes, properties (6 bytes).
	at := 12 + (int(data[12])+1)*4 + 6
	if data[12+(int(data[12])+1)*4] < 0xe0 || data[at] != 0 {
		t.Fatalf("the first chunk is not an LZMA chunk with properties and a range coder starting 00")
	}
	z := newReader(t)
	if _, err := decodeAll(t, z, data); err != nil {
		t.Fatalf("the file itself: %v", err)
	}
	damaged := bytes.Clone(data)
	damaged[at] = 0x10
	if out, err := decodeAll(t, z, damaged); !errors.Is(err, ErrData) {
		t.Fatalf("first range coder byte 0x10: %d bytes, err %v; want ErrData", len(out), err)
	}
}
