package decode

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/spate-io/beam-s3/internal/clitool"
)

// xzBCJFilters are the BCJ filters xz-utils 5.4 writes (RISC-V came in 5.6: see
// TestXzRISCV), with their .xz filter IDs.
var xzBCJFilters = []struct {
	name, flag string
	id         byte
}{
	{"x86", "--x86", 0x04},
	{"PowerPC", "--powerpc", 0x05},
	{"IA-64", "--ia64", 0x06},
	{"ARM", "--arm", 0x07},
	{"ARM-Thumb", "--armthumb", 0x08},
	{"SPARC", "--sparc", 0x09},
	{"ARM64", "--arm64", 0x0a},
}

var bcjInputOnce struct {
	sync.Once
	data []byte
	err  error
}

// bcjInput is executable-like input for the BCJ filters, about 1.2 MiB: the first 768 KiB of
// this test binary (Go-built x86-64 code), the xz binary, 128 KiB of random bytes (in
// which every filter finds branch instructions to convert) and text lines.
func bcjInput(t *testing.T) []byte {
	t.Helper()
	bcjInputOnce.Do(func() {
		var exe, xzBin []byte
		path, err := os.Executable()
		if err == nil {
			exe, err = os.ReadFile(path)
		}
		if err != nil {
			bcjInputOnce.err = err
			return
		}
		if path, err = exec.LookPath("xz"); err == nil {
			xzBin, err = os.ReadFile(path)
		}
		if err != nil {
			bcjInputOnce.err = err
			return
		}
		rng := rand.New(rand.NewPCG(29, 6))
		noise := make([]byte, 128<<10)
		for i := range noise {
			noise[i] = byte(rng.Uint32())
		}
		bcjInputOnce.data = cat(exe[:min(len(exe), 768<<10)], xzBin, noise, []byte(sampleText(29, 256_000)))
	})
	if bcjInputOnce.err != nil {
		t.Fatal(bcjInputOnce.err)
	}
	return bcjInputOnce.data
}

// xzReadExact reads data through d as an .xz object and fails t unless it decodes to want.
func xzReadExact(t *testing.T, d *Decompressors, data, want []byte) {
	t.Helper()
	out, err := readErr(d, Auto, "obj.xz", data)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	if !bytes.Equal(out, want) {
		at := 0
		for at < min(len(out), len(want)) && out[at] == want[at] {
			at++
		}
		t.Fatalf("read %d bytes, want %d; first difference at %d", len(out), len(want), at)
	}
}

// xzTest runs xz -t on data, which fails t unless xz-utils accepts the file.
func xzTest(t *testing.T, data []byte) {
	t.Helper()
	clitool.Run(t, data, "xz", "-t")
}

// TestXzBCJFilters reads the files xz-utils writes with each BCJ filter before LZMA2: in
// one block, in several (each block starts its filter over), and with a start offset
// near 2^32 (positions wrap around). Each is one `xz -t` accepts and each is read
// exactly, by a Decompressors used before and by a fresh one. A byte flipped in the
// compressed data or in the block header's filter ID is corruption.
func TestXzBCJFilters(t *testing.T) {
	clitool.Need(t, "xz")
	input := bcjInput(t)
	for _, f := range xzBCJFilters {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			// The filter converts branches in this input: reading it without the
			// filter (raw LZMA2 only) gives other bytes, so a reader that ignored
			// the filter would fail below.
			raw := clitool.Run(t, input, "xz", "--format=raw", f.flag, "--lzma2=preset=0", "-c")
			filtered := clitool.Run(t, raw, "xz", "--format=raw", "--lzma2=preset=0", "-dc")
			changed := 0
			for i := range min(len(filtered), len(input)) {
				if filtered[i] != input[i] {
					changed++
				}
			}
			if len(filtered) != len(input) || changed < 100 {
				t.Fatalf("the %s filter changed %d bytes of the input (%d bytes, %d filtered); want at least 100", f.name, changed, len(input), len(filtered))
			}

			var shared Decompressors
			defer shared.Close()
			for _, v := range []struct {
				name string
				args []string
			}{
				{"one block", []string{f.flag, "--lzma2"}},
				{"several blocks", []string{"-T2", "--block-size=384KiB", f.flag, "--lzma2=preset=1"}},
				{"start offset", []string{f.flag + "=start=4294963200", "--lzma2=preset=1"}},
			} {
				data := clitool.Run(t, input, "xz", append([]string{"-c"}, v.args...)...)
				idAt := 12 + xzFirstFilter(data[12:])
				if data[idAt] != f.id {
					t.Fatalf("%s: the first block's first filter is 0x%02x, want 0x%02x", v.name, data[idAt], f.id)
				}
				xzTest(t, data)
				t.Run(v.name, func(t *testing.T) {
					xzReadExact(t, &shared, data, input)
					var fresh Decompressors
					defer fresh.Close()
					xzReadExact(t, &fresh, data, input)
				})
				if v.name != "one block" {
					continue
				}
				for _, at := range []int{len(data) / 2, idAt} {
					flipped := bytes.Clone(data)
					flipped[at] ^= 0x01
					out, err := readErr(&shared, Auto, "obj.xz", flipped)
					if !errors.Is(err, ErrCorrupt) || errors.Is(err, ErrUnsupported) {
						t.Errorf("byte %d of %d flipped: %d bytes out, err %v; want ErrCorrupt", at, len(data), len(out), err)
					}
				}
			}
		})
	}
}

// TestXzFilterChains reads files whose filter chains xz-utils writes with the Delta
// filter, alone or with BCJ filters, and with two BCJ filters.
func TestXzFilterChains(t *testing.T) {
	clitool.Need(t, "xz")
	input := bcjInput(t)
	var d Decompressors
	defer d.Close()
	for _, args := range [][]string{
		{"--delta=dist=4", "--lzma2"},
		{"--delta=dist=256", "--lzma2=preset=1"},
		{"--x86", "--delta=dist=2", "--lzma2=preset=1"},
		{"--delta=dist=4", "--arm64", "--lzma2=preset=1"},
		{"--arm64", "--powerpc", "--sparc", "--lzma2=preset=1"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			data := clitool.Run(t, input, "xz", append([]string{"-c"}, args...)...)
			xzTest(t, data)
			xzReadExact(t, &d, data, input)
		})
	}
}

// xzBlockOffsets returns where each block of the single-stream .xz file data starts, from
// its index.
func xzBlockOffsets(t *testing.T, data []byte) []int {
	t.Helper()
	footer := data[len(data)-12:]
	backward := (int(binary.LittleEndian.Uint32(footer[4:])) + 1) * 4
	index := data[len(data)-12-backward : len(data)-12]
	vli := func() int {
		v, n := binary.Uvarint(index)
		if n <= 0 {
			t.Fatalf("index % x", index)
		}
		index = index[n:]
		return int(v)
	}
	index = index[1:] // the index indicator
	offsets := []int{}
	for pos, n := 12, vli(); len(offsets) < n; {
		offsets = append(offsets, pos)
		unpadded := vli()
		vli() // uncompressed size
		pos += (unpadded + 3) &^ 3
	}
	return offsets
}

// xzFirstFilter returns where the first filter's ID is in the block header h: after the
// size byte, the flags and the compressed and uncompressed sizes the flags say are there.
func xzFirstFilter(h []byte) int {
	at := 2
	for _, bit := range []byte{0x40, 0x80} {
		if h[1]&bit != 0 {
			_, n := binary.Uvarint(h[at:])
			at += n
		}
	}
	return at
}

// xzEditBlockHeader returns a copy of data whose block header at off edit changed, its
// CRC32 made good again: an intact header that asks for something else.
func xzEditBlockHeader(t *testing.T, data []byte, off int, edit func(h []byte)) []byte {
	t.Helper()
	out := bytes.Clone(data)
	h := out[off:]
	size := (int(h[0]) + 1) * 4
	edit(h[:size-4])
	binary.LittleEndian.PutUint32(h[size-4:], crc32.ChecksumIEEE(h[:size-4]))
	return out
}

// TestXzUnsupportedFilter: a filter the decoder does not know (here the ARM64 filter's ID
// changed to 0x0c, which no xz-utils defines) and an ARM64 start offset that is not a
// multiple of 4 are refused as ErrUnsupported naming the filter, never as ErrCorrupt,
// whether in the first block or a later one; xz -t refuses the same files
// ("Unsupported options").
func TestXzUnsupportedFilter(t *testing.T) {
	clitool.Need(t, "xz")
	input := bcjInput(t)
	several := clitool.Run(t, input, "xz", "-c", "-T2", "--block-size=512KiB", "--arm64", "--lzma2=preset=1")
	blocks := xzBlockOffsets(t, several)
	if len(blocks) < 3 {
		t.Fatalf("%d blocks", len(blocks))
	}
	setID := func(h []byte) {
		at := xzFirstFilter(h)
		if h[at] != 0x0a {
			t.Fatalf("first filter 0x%02x, want ARM64's 0x0a", h[at])
		}
		h[at] = 0x0c
	}
	start := clitool.Run(t, input, "xz", "-c", "--arm64=start=4", "--lzma2=preset=1")
	setStart := func(h []byte) {
		if h[2] != 0x0a || h[3] != 4 || binary.LittleEndian.Uint32(h[4:]) != 4 {
			t.Fatalf("block header % x, want ARM64 with start offset 4", h)
		}
		binary.LittleEndian.PutUint32(h[4:], 6)
	}
	var d Decompressors
	defer d.Close()
	for _, c := range []struct {
		name   string
		data   []byte
		prefix int // bytes read exactly before the refusal
		want   string
	}{
		{"unknown filter in the first block", xzEditBlockHeader(t, several, blocks[0], setID), 0,
			"s3io: unsupported format: the xz stream asks for an xz filter of unknown ID 0x0c, which s3io does not decode"},
		{"unknown filter in the third block", xzEditBlockHeader(t, several, blocks[2], setID), 2 * 512 << 10,
			"the xz stream asks for an xz filter of unknown ID 0x0c"},
		{"ARM64 start offset 6", xzEditBlockHeader(t, start, 12, setStart), 0,
			"the xz stream asks for the xz BCJ filter ARM64 (ID 0x0a) with start offset 6, not a multiple of 4, which s3io does not decode"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := clitool.Output(c.data, "xz", "-t"); err == nil || !strings.Contains(err.Error(), "Unsupported options") {
				t.Errorf("xz -t: %v, want Unsupported options", err)
			}
			out, err := readErr(&d, Auto, "obj.xz", c.data)
			if !errors.Is(err, ErrUnsupported) || errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err %v; want ErrUnsupported saying %q", err, c.want)
			}
			if len(out) < c.prefix || !bytes.Equal(out, input[:len(out)]) {
				t.Errorf("%d bytes out before the refusal, want %d of the input", len(out), c.prefix)
			}
			// The same Decompressors reads the next object.
			xzReadExact(t, &d, several, input)
		})
	}
}

// TestXzRISCV reads, through Decompressors.Open, the RISC-V BCJ file that XZ for Java
// wrote (xz-utils 5.4 has no RISC-V filter; see s3io/internal/xz/testdata/riscv): its
// SHA-256 check and the digest of the output say it is read exactly.
func TestXzRISCV(t *testing.T) {
	data, err := os.ReadFile("../xz/testdata/riscv/riscv-lzma2.xz")
	if err != nil {
		t.Fatal(err)
	}
	var d Decompressors
	defer d.Close()
	out, err := readErr(&d, Auto, "riscv.xz", data)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(out)
	if got := hex.EncodeToString(sum[:]); len(out) != 106496 || got != "bf9f077eaa49bfa97624ea059531020aad3c5b647a8f027a14d137ed313a1176" {
		t.Errorf("%d bytes with SHA-256 %s", len(out), got)
	}
}
