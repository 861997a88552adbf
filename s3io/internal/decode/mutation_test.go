package decode

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spate-io/beam-s3/internal/clitool"
)

// TestMutants is the mutation test of issue 29. s3io promises that an object is read
// exactly as the reference tool reads it, or refused with a Failure (an error wrapping
// ErrCorrupt or ErrUnsupported): never a record the reference does not produce, with no
// error.
//
// The originals are written by the real command-line tools from a small tree (files of
// lines, one without a final newline, an empty file, a subdirectory, a long path, a
// symlink, a hard link, a sparse file): GNU tar in the gnu, ustar, pax and v7 formats,
// stored and compressed by gzip, bzip2, xz, lz4 and zstd; zip (deflate, store, bzip2, and
// streamed to a pipe, which writes data descriptors) and 7z -tzip (deflate, xz); and the
// lines alone through each codec. Every original must be read without an error and equal
// to the reference.
//
// Each original's bytes are split into classes (a tar's header blocks, extended headers,
// entry data, padding, end-of-archive blocks and record padding; a codec's header, body and
// trailer; a zip's local headers, data, data descriptors, central directory and end
// record), and each class is mutated at positions drawn with math/rand/v2 from a fixed
// seed: a bit flipped, a byte flipped (xor 0xff), the object cut before the position; a
// tar header also has a bit flipped with its checksum recomputed, a stored tar is cut at
// every 512-byte boundary, a compressed tar has its inner tar mutated and compressed again
// by the CLI; and every object has zeros, junk and a copy of itself appended. (An object cut
// to nothing is not a mutant: Open reads an empty object as an empty stream by design.)
//
// Each mutant is read as s3io reads it (readObject, mode Auto) under the original's key
// (x.tar.gz) and under a key with no extension (x), where the format comes from the magic
// bytes. A Failure passes. A read without an error must equal the reference: the codec's
// CLI (gzip -dc, …; exit 0), then GNU tar (each regular file's name and bytes through
// --to-command; exit 0) or unzip (-Z1 for the names, -Z for the types, -p per regular
// entry; exit 0 or 1, a warning, is a read and 2 or more a refusal: see mutUnzip; 7z x -so
// or bsdtar -xOf for the xz entries unzip 6 does not read), each entry framed into lines as
// FrameLines frames it. Under the key with no extension the reference is that of the format the magic bytes name (when they no longer
// name the original's format, the mutant is what they name: text, say). Where bsdtar reads
// a tar other than GNU tar does, the summary says so (GNU tar is the reference).
//
// The originals are the same bytes every run (fixed times, owners and modes; the pid GNU
// tar writes into a PAX sparse entry's placeholder name is made 0), and so are the
// mutants: the run is deterministic. The default run takes ~20 s on two cores (~10 s with
// -short).
//
// Environment:
//
//	S3IO_MUTANTS=N          positions per byte class and mutation kind (default 4, 1 with
//	                        -short); a long campaign: S3IO_MUTANTS=100 go test -timeout 2h
//	                        -run TestMutants ./s3io/internal/decode/
//	S3IO_MUTANT='ORIG#ID'   run that one mutant (IDs as logged: gnu.tar.gz#codec
//	                        trailer/flipbit/0) and log both sides' records; an ID does not
//	                        depend on S3IO_MUTANTS
//	S3IO_MUTANTS_DIR=dir    where violating mutants are written (default: a new directory
//	                        under $TMPDIR, kept, its path logged)
//
// Violations are reported per original as they are found, then grouped by their cause in
// the summary the test logs last, each group with reproductions.
func TestMutants(t *testing.T) {
	clitool.Need(t, "tar", "bsdtar", "gzip", "bzip2", "xz", "lz4", "zstd", "zip", "unzip", "7z", "sh", "od", "touch")
	run := &mutationRun{perClass: mutantsPerClass(t), only: os.Getenv("S3IO_MUTANT")}
	start := time.Now()
	origs := mutationOriginals(t)
	t.Run("originals", func(t *testing.T) {
		for _, o := range origs {
			t.Run(o.name, func(t *testing.T) {
				t.Parallel()
				run.original(t, o)
			})
		}
	})
	run.summarize(t, time.Since(start))
}

func mutantsPerClass(t *testing.T) int {
	if s := os.Getenv("S3IO_MUTANTS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("S3IO_MUTANTS=%q: want a positive number of positions per class", s)
		}
		return n
	}
	if testing.Short() {
		return 1
	}
	return 4
}

const (
	mutationSeed  = 29
	mutationMtime = "@1577934245" // 2020-01-02T03:04:05Z: the originals are the same bytes every run
)

// mutCodec is a codec's CLI.
type mutCodec struct {
	ext, tool string
	args      []string // compress to stdout
	comp      Compression
}

var mutCodecs = []mutCodec{
	{".gz", "gzip", []string{"-n", "-c"}, Gzip},
	{".bz2", "bzip2", []string{"-c"}, Bzip2},
	{".xz", "xz", []string{"-c"}, Xz},
	{".lz4", "lz4", []string{"-c"}, Lz4},
	{".zst", "zstd", []string{"-c", "-q"}, Zstd},
}

// mutPipeline is a reference: the codec's CLI (or none), then the archiver (or none: lines).
type mutPipeline struct{ codec, archive string }

func (p mutPipeline) String() string {
	var s []string
	if p.codec != "" {
		s = append(s, p.codec+" -dc")
	}
	switch p.archive {
	case "tar":
		s = append(s, "GNU tar -x --to-command")
	case "zip":
		s = append(s, "unzip -p (7z x -so or bsdtar -xOf for the methods unzip lacks)")
	default:
		s = append(s, "lines")
	}
	return strings.Join(s, " | ")
}

// mutOriginal is an object a tool wrote, and what is known of it.
type mutOriginal struct {
	name, key string // "gnu.tar.gz", "x.tar.gz"
	data      []byte
	pipe      mutPipeline
	codec     *mutCodec         // the codec around it, nil if none
	inner     []byte            // the tar inside the codec
	want      map[string]string // the regular entries (name: bytes) the reference finds in data
	spans     []mutSpan         // data's byte classes
}

// mutSpan is a run of bytes of one class.
type mutSpan struct {
	class    string
	from, to int
}

// The input tree.
var (
	mutLongDir  = "b/" + strings.Repeat("d", 60)
	mutLongFile = mutLongDir + "/" + strings.Repeat("f", 50) + ".txt" // > 100 bytes: gnu L, ustar prefix, pax path
)

func mutLines() string {
	var b strings.Builder
	for i := range 40 {
		end := "\n"
		if i%7 == 3 {
			end = "\r\n"
		}
		fmt.Fprintf(&b, "%02d the quick brown fox jumps over the lazy dog %d%s", i, i*i, end)
	}
	return b.String()
}

// mutationTree writes the input tree and returns its directory and its regular files.
func mutationTree(t *testing.T) (string, map[string]string) {
	files := map[string]string{
		"a.txt":       "a1\na2\n",
		"lines.txt":   mutLines(),
		"b/c.txt":     "c1\r\nc2", // no final newline
		"b/empty.txt": "",
		mutLongFile:   "long1\nlong2\n",
	}
	dir := clitool.WriteFiles(t, files)
	f, err := os.Create(filepath.Join(dir, "sp"))
	if err != nil {
		t.Fatal(err)
	}
	// A hole from 4096 to 8192: GNU tar --sparse writes an old GNU sparse entry ('S').
	if _, err := f.WriteString("head\n"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("tail\n"), 8192); err != nil {
		t.Fatal(err)
	}
	f.Close()
	files["sp"] = "head\n" + strings.Repeat("\x00", 8192-5) + "tail\n"
	if err := os.Symlink("a.txt", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(dir, "a.txt"), filepath.Join(dir, "hard")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"a.txt", "lines.txt", "b/c.txt", "b/empty.txt", mutLongFile, "sp"} {
		if err := os.Chmod(filepath.Join(dir, p), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{"b", mutLongDir} {
		if err := os.Chmod(filepath.Join(dir, p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// Files first, then directories, deepest first: touching a file leaves its directory be.
	clitool.RunIn(t, dir, nil, "touch", "-h", "-d", mutationMtime, "a.txt", "lines.txt", "b/c.txt", "b/empty.txt", mutLongFile, "sp", "link", mutLongDir, "b")
	return dir, files
}

func mutationOriginals(t *testing.T) []*mutOriginal {
	dir, files := mutationTree(t)
	pick := func(names ...string) map[string]string {
		m := map[string]string{}
		for _, n := range names {
			m[n] = files[n]
		}
		return m
	}
	var origs []*mutOriginal
	add := func(name string, data []byte, pipe mutPipeline, codec *mutCodec, inner []byte, want map[string]string) {
		ext := name[strings.Index(name, "."):]
		o := &mutOriginal{name: name, key: "x" + ext, data: data, pipe: pipe, codec: codec, inner: inner, want: want}
		o.spans = mutClasses(t, o)
		origs = append(origs, o)
	}

	// Tars: the names given in order, no recursion; v7 stores no name above 99 bytes.
	all := []string{"a.txt", "lines.txt", "b", "b/c.txt", "b/empty.txt", mutLongDir, mutLongFile, "link", "hard", "sp"}
	tarWant := pick("a.txt", "lines.txt", "b/c.txt", "b/empty.txt", mutLongFile, "sp")
	for _, format := range []string{"gnu", "ustar", "pax", "v7"} {
		names, want := all, tarWant
		if format == "v7" {
			names = slices.DeleteFunc(slices.Clone(all), func(n string) bool { return strings.HasPrefix(n, mutLongDir) })
			want = pick("a.txt", "lines.txt", "b/c.txt", "b/empty.txt", "sp")
		}
		args := []string{"--format=" + format, "--no-recursion", "--numeric-owner", "--owner=0", "--group=0", "--mtime=" + mutationMtime}
		if format == "gnu" || format == "pax" {
			args = append(args, "--sparse") // ustar and v7 hold no sparse entries: sp is stored whole
		}
		if format == "pax" {
			args = append(args, "--pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime")
		}
		tarball := mutFixSparseName(clitool.RunIn(t, dir, nil, "tar", append(append(args, "-cf", "-"), names...)...))
		if format == "gnu" && !mutHasTypeflag(tarball, 'S') {
			t.Fatalf("GNU tar --sparse wrote no sparse entry: the temporary directory's file system (TMPDIR) keeps no holes")
		}
		add(format+".tar", tarball, mutPipeline{archive: "tar"}, nil, nil, want)
		for i := range mutCodecs {
			c := &mutCodecs[i]
			add(format+".tar"+c.ext, clitool.Run(t, tarball, c.tool, c.args...), mutPipeline{c.tool, "tar"}, c, tarball, want)
		}
	}

	// Zips: the same names; zip -y keeps the symlink a link, the hard link is a file.
	zipWant := pick("a.txt", "lines.txt", "b/c.txt", "b/empty.txt", mutLongFile, "sp")
	zipWant["hard"] = files["a.txt"]
	zipFile := func(tool string, args ...string) []byte {
		out := filepath.Join(dir, "out.zip")
		os.Remove(out)
		clitool.RunIn(t, dir, nil, tool, args...)
		data, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		os.Remove(out)
		return data
	}
	zipArgs := func(args ...string) []string { return append(append([]string{"-q", "-X", "-y"}, args...), all...) }
	add("zip-deflate.zip", zipFile("zip", zipArgs("out.zip")...), mutPipeline{archive: "zip"}, nil, nil, zipWant)
	add("zip-store.zip", zipFile("zip", zipArgs("-0", "out.zip")...), mutPipeline{archive: "zip"}, nil, nil, zipWant)
	add("zip-bzip2.zip", zipFile("zip", zipArgs("-Z", "bzip2", "out.zip")...), mutPipeline{archive: "zip"}, nil, nil, zipWant)
	// To a pipe zip cannot seek back: every entry has a data descriptor.
	add("zip-stream.zip", clitool.RunIn(t, dir, nil, "zip", zipArgs("-")...), mutPipeline{archive: "zip"}, nil, nil, zipWant)
	// 7z follows the symlink: not given it; it recurses into b.
	sevenWant := pick("a.txt", "lines.txt", "b/c.txt", "b/empty.txt", mutLongFile, "sp")
	sevenWant["hard"] = files["a.txt"]
	for _, m := range []string{"Deflate", "XZ"} {
		add("7z-"+strings.ToLower(m)+".zip", zipFile("7z", "a", "-tzip", "-mm="+m, "-bd", "-bso0", "-bsp0", "out.zip", "a.txt", "lines.txt", "b", "hard", "sp"),
			mutPipeline{archive: "zip"}, nil, nil, sevenWant)
	}

	// The lines alone, through each codec.
	text := files["lines.txt"] + "the last line has no newline"
	for i := range mutCodecs {
		c := &mutCodecs[i]
		add("text"+c.ext, clitool.Run(t, []byte(text), c.tool, c.args...), mutPipeline{codec: c.tool}, c, nil, map[string]string{"": text})
	}
	return origs
}

// mutClasses splits an original's bytes into classes.
func mutClasses(t *testing.T, o *mutOriginal) []mutSpan {
	var spans []mutSpan
	var err error
	switch {
	case o.codec != nil:
		spans, err = mutCodecSpans(o.codec.tool, o.data)
	case o.pipe.archive == "tar":
		spans, _, _ = mutWalkTar(o.data)
	case o.pipe.archive == "zip":
		spans, err = mutWalkZip(o.data)
	}
	if err == nil && len(spans) == 0 {
		err = errors.New("no byte classes")
	}
	if err != nil {
		t.Fatalf("%s: %v", o.name, err)
	}
	return spans
}

// mutTarMember is a tar header the walk passed.
type mutTarMember struct {
	name     string
	typeflag byte
	magic    string // "ustar\x0000" (POSIX), "ustar  \x00" (GNU), else v7
}

// mutWalkTar classes a tar's bytes block by block and returns its members and the offset
// after its end-of-archive marker (-1 if it has none).
func mutWalkTar(b []byte) (spans []mutSpan, members []mutTarMember, end int) {
	add := func(class string, from, to int) {
		to = min(to, len(b))
		if from >= to {
			return
		}
		if n := len(spans); n > 0 && spans[n-1].class == class && spans[n-1].to == from {
			spans[n-1].to = to
			return
		}
		spans = append(spans, mutSpan{class, from, to})
	}
	var longName string
	off := 0
	for off+512 <= len(b) {
		blk := b[off : off+512]
		if mutAllZero(blk) {
			add("end-of-archive", off, off+512)
			if off+1024 <= len(b) && mutAllZero(b[off+512:off+1024]) {
				add("end-of-archive", off+512, off+1024)
				add("record padding", off+1024, len(b))
				return spans, members, off + 1024
			}
			add("after a lone zero block", off+512, len(b))
			return spans, members, -1
		}
		typeflag := blk[156]
		size := mutTarNumber(blk[124:136])
		class := "header"
		if strings.IndexByte("LKxgX", typeflag) >= 0 {
			class = "extended header"
		}
		add(class, off, off+512)
		name := mutCString(blk[:100])
		magic := string(blk[257:265])
		if magic == "ustar\x0000" {
			if p := mutCString(blk[345:500]); p != "" {
				name = p + "/" + name
			}
		}
		off += 512
		if typeflag == 'S' && blk[482] != 0 { // old GNU sparse: extension blocks of the map
			for off+512 <= len(b) {
				add("header", off, off+512)
				more := b[off+504] != 0
				off += 512
				if !more {
					break
				}
			}
		}
		if size < 0 || size > int64(len(b)) {
			size = int64(len(b))
		}
		dataClass := "data"
		if class != "header" {
			dataClass = "extended header data"
		}
		data := b[off:min(off+int(size), len(b))]
		add(dataClass, off, off+int(size))
		add("padding", off+int(size), off+int((size+511)/512*512))
		off += int((size + 511) / 512 * 512)
		switch typeflag {
		case 'L':
			longName = mutCString(data)
			continue
		case 'x':
			if p := mutPaxName(data); p != "" {
				longName = p
			}
			continue
		case 'K', 'g', 'X':
			continue
		}
		if longName != "" {
			name, longName = longName, ""
		}
		members = append(members, mutTarMember{name, typeflag, magic})
	}
	add("cut block", off, len(b))
	return spans, members, -1
}

// mutFixSparseName makes a pax tar the same bytes every run: GNU tar names a PAX 1.0 sparse
// entry's ustar header "./GNUSparseFile.<its pid>/sp" (the real name is in the PAX
// header), and the pid becomes 0, the checksum made right again.
func mutFixSparseName(tarball []byte) []byte {
	re := regexp.MustCompile(`GNUSparseFile\.[0-9]+/`)
	for off := 0; off+512 <= len(tarball); off += 512 {
		blk := tarball[off : off+512]
		name := blk[:100]
		if loc := re.FindIndex(name); loc != nil && mutTarNumber(blk[148:156]) >= 0 {
			fixed := append(append(bytes.Clone(name[:loc[0]]), "GNUSparseFile.0/"...), name[loc[1]:]...)
			copy(name, make([]byte, 100))
			copy(name, fixed)
			mutFixChecksum(blk)
		}
	}
	return tarball
}

func mutHasTypeflag(tarball []byte, typeflag byte) bool {
	_, members, _ := mutWalkTar(tarball)
	for _, m := range members {
		if m.typeflag == typeflag {
			return true
		}
	}
	return false
}

func mutAllZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

func mutCString(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

// mutTarNumber reads a tar numeric field: octal, or base-256 when its first bit is set.
func mutTarNumber(f []byte) int64 {
	if f[0]&0x80 != 0 {
		var n int64
		for i, c := range f {
			if i == 0 {
				c &= 0x7f
			}
			n = n<<8 | int64(c)
			if n > 1<<40 {
				return -1
			}
		}
		return n
	}
	s := strings.Trim(string(f), " \x00")
	n, err := strconv.ParseInt(s, 8, 64)
	if err != nil {
		return -1
	}
	return n
}

// mutPaxName is the path (or GNU.sparse.name) a pax extended header gives.
func mutPaxName(data []byte) string {
	var name string
	for len(data) > 0 {
		sp := bytes.IndexByte(data, ' ')
		if sp < 0 {
			break
		}
		n, err := strconv.Atoi(string(data[:sp]))
		if err != nil || n <= sp || n > len(data) {
			break
		}
		kv := strings.TrimSuffix(string(data[sp+1:n]), "\n")
		if k, v, ok := strings.Cut(kv, "="); ok && (k == "path" || k == "GNU.sparse.name") {
			name = v
		}
		data = data[n:]
	}
	return name
}

// mutCodecSpans classes a codec's stream: its header, body and trailer.
func mutCodecSpans(tool string, b []byte) ([]mutSpan, error) {
	var head, tail int
	switch tool {
	case "gzip":
		head, tail = 10, 8
		if len(b) < 18 {
			return nil, errors.New("gzip: too short")
		}
		flags, p := b[3], 10
		if flags&4 != 0 {
			p += 2 + int(binary.LittleEndian.Uint16(b[p:]))
		}
		for _, bit := range []byte{8, 16} { // FNAME, FCOMMENT
			if flags&bit != 0 {
				p += bytes.IndexByte(b[p:], 0) + 1
			}
		}
		if flags&2 != 0 {
			p += 2
		}
		head = p
	case "bzip2":
		head, tail = 10, 12 // "BZh9" and the first block's magic; the end-of-stream magic, CRC, padding
	case "xz":
		if len(b) < 24 {
			return nil, errors.New("xz: too short")
		}
		head = 12 + (int(b[12])+1)*4 // the stream header and the first block's header
		backward := (int(binary.LittleEndian.Uint32(b[len(b)-8:])) + 1) * 4
		tail = 12 + backward // the index and the stream footer
	case "lz4":
		if len(b) < 15 {
			return nil, errors.New("lz4: too short")
		}
		flg := b[4]
		head = 7
		if flg&0x08 != 0 {
			head += 8
		}
		if flg&0x01 != 0 {
			head += 4
		}
		tail = 4 // the end mark
		if flg&0x04 != 0 {
			tail += 4 // the content checksum
		}
	case "zstd":
		if len(b) < 16 {
			return nil, errors.New("zstd: too short")
		}
		fhd := b[4]
		single := fhd&0x20 != 0
		head = 5
		if !single {
			head++
		}
		head += []int{0, 1, 2, 4}[fhd&3]
		fcs := []int{0, 2, 4, 8}[fhd>>6]
		if fcs == 0 && single {
			fcs = 1
		}
		head += fcs
		tail = 12 // the checksum and the last block
	default:
		return nil, fmt.Errorf("no classes for %s", tool)
	}
	if head+tail > len(b) {
		return nil, fmt.Errorf("%s: %d bytes hold no body", tool, len(b))
	}
	return []mutSpan{{"codec header", 0, head}, {"codec body", head, len(b) - tail}, {"codec trailer", len(b) - tail, len(b)}}, nil
}

// mutWalkZip classes a zip's bytes, from its central directory.
func mutWalkZip(b []byte) ([]mutSpan, error) {
	eocd := bytes.LastIndex(b, []byte("PK\x05\x06"))
	if eocd < 0 || len(b)-eocd < 22 {
		return nil, errors.New("zip: no end of central directory record")
	}
	count := int(binary.LittleEndian.Uint16(b[eocd+10:]))
	dirSize := int(binary.LittleEndian.Uint32(b[eocd+12:]))
	dirOff := int(binary.LittleEndian.Uint32(b[eocd+16:]))
	if dirOff+dirSize != eocd {
		return nil, errors.New("zip: the directory does not end at the end record")
	}
	var spans []mutSpan
	dir := b[dirOff:eocd]
	for range count {
		if len(dir) < 46 || !bytes.HasPrefix(dir, []byte("PK\x01\x02")) {
			return nil, errors.New("zip: a malformed directory entry")
		}
		flags := binary.LittleEndian.Uint16(dir[8:])
		csize := int(binary.LittleEndian.Uint32(dir[20:]))
		off := int(binary.LittleEndian.Uint32(dir[42:]))
		n, m, k := int(binary.LittleEndian.Uint16(dir[28:])), int(binary.LittleEndian.Uint16(dir[30:])), int(binary.LittleEndian.Uint16(dir[32:]))
		dir = dir[46+n+m+k:]
		if off+30 > len(b) || !bytes.HasPrefix(b[off:], []byte("PK\x03\x04")) {
			return nil, errors.New("zip: no local header where the directory says")
		}
		data := off + 30 + int(binary.LittleEndian.Uint16(b[off+26:])) + int(binary.LittleEndian.Uint16(b[off+28:]))
		spans = append(spans, mutSpan{"local header", off, data}, mutSpan{"data", data, data + csize})
		if flags&8 != 0 {
			dd := 12
			if bytes.HasPrefix(b[data+csize:], []byte("PK\x07\x08")) {
				dd = 16
			}
			spans = append(spans, mutSpan{"data descriptor", data + csize, data + csize + dd})
		}
	}
	spans = append(spans, mutSpan{"central directory", dirOff, eocd}, mutSpan{"end record", eocd, len(b)})
	sort.SliceStable(spans, func(i, j int) bool { return spans[i].from < spans[j].from })
	return slices.DeleteFunc(spans, func(s mutSpan) bool { return s.from >= s.to }), nil
}

// mutant is one mutation of an original. Its id (class/kind/n) names it for S3IO_MUTANT.
type mutant struct {
	id, desc string
	data     []byte
}

// mutClassOrder lists an original's classes in the order they first appear.
func mutClassOrder(spans []mutSpan) []string {
	var order []string
	for _, s := range spans {
		if !slices.Contains(order, s.class) {
			order = append(order, s.class)
		}
	}
	return order
}

// mutRand is the generator of one original's class and kind: positions do not depend on
// how many are drawn (S3IO_MUTANTS), nor on the other originals.
func mutRand(parts ...string) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(strings.Join(parts, "\x00")))
	return rand.New(rand.NewPCG(mutationSeed, h.Sum64()))
}

// mutPositions draws n positions among the bytes of class.
func mutPositions(spans []mutSpan, class string, r *rand.Rand, n int) []int {
	total := 0
	for _, s := range spans {
		if s.class == class {
			total += s.to - s.from
		}
	}
	if total == 0 {
		return nil
	}
	var pos []int
	for range n {
		k := r.IntN(total)
		for _, s := range spans {
			if s.class != class {
				continue
			}
			if k < s.to-s.from {
				pos = append(pos, s.from+k)
				break
			}
			k -= s.to - s.from
		}
	}
	return pos
}

func mutFlip(b []byte, at int, mask byte) []byte {
	c := bytes.Clone(b)
	c[at] ^= mask
	return c
}

// mutByteMutants flips bits and bytes of each class of b, and cuts b in each.
func mutByteMutants(name, prefix string, b []byte, spans []mutSpan, n int) []mutant {
	var ms []mutant
	for _, class := range mutClassOrder(spans) {
		for _, kind := range []string{"flipbit", "flipbyte", "cut"} {
			r := mutRand(name, prefix+class, kind)
			for i, at := range mutPositions(spans, class, r, n) {
				id := fmt.Sprintf("%s%s/%s/%d", prefix, class, kind, i)
				switch kind {
				case "flipbit":
					bit := r.IntN(8)
					ms = append(ms, mutant{id, fmt.Sprintf("flip bit %d of byte %d", bit, at), mutFlip(b, at, 1<<bit)})
				case "flipbyte":
					ms = append(ms, mutant{id, fmt.Sprintf("flip byte %d (xor 0xff)", at), mutFlip(b, at, 0xff)})
				case "cut":
					if at == 0 {
						continue // an empty object: read as empty by design
					}
					ms = append(ms, mutant{id, fmt.Sprintf("cut to %d bytes", at), bytes.Clone(b[:at])})
				}
			}
		}
		if class == "header" || class == "extended header" {
			// A bit flipped with the checksum made right again: the header's fields changed.
			r := mutRand(name, prefix+class, "flipbit+checksum")
			for i, at := range mutPositions(spans, class, r, n) {
				bit := r.IntN(8)
				blk := at - at%512
				if at%512 >= 148 && at%512 < 156 {
					at = blk + 156 // not the checksum itself: the typeflag instead
				}
				c := mutFlip(b, at, 1<<bit)
				mutFixChecksum(c[blk : blk+512])
				ms = append(ms, mutant{fmt.Sprintf("%s%s/flipbit+checksum/%d", prefix, class, i),
					fmt.Sprintf("flip bit %d of byte %d (field at %d of the header at %d), checksum recomputed", bit, at, at%512, blk), c})
			}
		}
	}
	return ms
}

func mutFixChecksum(blk []byte) {
	copy(blk[148:156], "        ")
	sum := 0
	for _, c := range blk {
		sum += int(c)
	}
	copy(blk[148:156], fmt.Sprintf("%06o\x00 ", sum))
}

// mutAppends appends zeros, junk and a copy of b.
func mutAppends(name, prefix string, b []byte, zeros []int) []mutant {
	var ms []mutant
	for _, z := range zeros {
		ms = append(ms, mutant{fmt.Sprintf("%send/append-zeros-%d", prefix, z), fmt.Sprintf("append %d zero bytes", z), append(bytes.Clone(b), make([]byte, z)...)})
	}
	r := mutRand(name, prefix+"end", "junk")
	junk := make([]byte, 37)
	for i := range junk {
		junk[i] = byte(r.IntN(256))
	}
	ms = append(ms, mutant{prefix + "end/append-junk", "append 37 random bytes", append(bytes.Clone(b), junk...)})
	ms = append(ms, mutant{prefix + "end/append-copy", "append a copy of the object", append(bytes.Clone(b), b...)})
	return ms
}

// mutants returns the original's mutants, n positions per class and kind.
func (o *mutOriginal) mutants(t *testing.T, n int) []mutant {
	ms := mutByteMutants(o.name, "", o.data, o.spans, n)
	zeros := []int{1, 4}
	if o.pipe.archive == "tar" && o.codec == nil {
		zeros = []int{1, 512, 1024}
		for at := 512; at < len(o.data); at += 512 {
			ms = append(ms, mutant{fmt.Sprintf("blocks/cut/%d", at/512), fmt.Sprintf("cut to %d bytes (%d blocks)", at, at/512), bytes.Clone(o.data[:at])})
		}
	}
	ms = append(ms, mutAppends(o.name, "", o.data, zeros)...)
	if o.inner == nil {
		return ms
	}
	// The tar inside, mutated and compressed again by the codec's CLI.
	spans, _, end := mutWalkTar(o.inner)
	var inner []mutant
	r := mutRand(o.name, "inner", "cut512")
	for i := range n {
		at := 512 * (1 + r.IntN(len(o.inner)/512-1))
		inner = append(inner, mutant{fmt.Sprintf("inner tar/cut512/%d", i), fmt.Sprintf("the tar cut to %d bytes (%d blocks)", at, at/512), bytes.Clone(o.inner[:at])})
	}
	if end > 0 {
		inner = append(inner,
			mutant{"inner tar/cut-after-marker", fmt.Sprintf("the tar cut after its end-of-archive marker (%d bytes, no record padding)", end), bytes.Clone(o.inner[:end])},
			mutant{"inner tar/cut-in-marker", fmt.Sprintf("the tar cut after the marker's first zero block (%d bytes)", end-512), bytes.Clone(o.inner[:end-512])})
	}
	for _, m := range mutByteMutants(o.name, "inner tar/", o.inner, spans, n) {
		if strings.Contains(m.id, "/data/") || strings.Contains(m.id, "/padding/") || strings.Contains(m.id, "/record padding/") {
			inner = append(inner, m)
		}
	}
	inner = append(inner, mutAppends(o.name, "inner tar/", o.inner, []int{512})...)
	for _, m := range inner {
		m.desc = "in the tar inside: " + m.desc + ", compressed again by " + o.codec.tool
		m.data = clitool.Run(t, m.data, o.codec.tool, o.codec.args...)
		ms = append(ms, m)
	}
	return ms
}

// mutRef is what the reference made of a mutant.
type mutRef struct {
	recs    []entryRecord
	refusal string // "" when every tool exited 0
	// the codec refused: what it wrote before refusing (for the causes)
	codecRefused bool
	partial      []byte
	tarData      []byte // the tar the reference read, for the causes
	bsd          string // how bsdtar read it otherwise, "" if alike
}

// mutRun runs a tool in dir, returning its stdout and, if it does not exit 0, why.
func mutRun(dir string, stdin []byte, name string, args ...string) ([]byte, string) {
	return mutRunUpTo(dir, stdin, 0, name, args...)
}

// mutRunUpTo is mutRun for a tool whose exit statuses up to ok report a success.
func mutRunUpTo(dir string, stdin []byte, ok int, name string, args ...string) ([]byte, string) {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Stdin = bytes.NewReader(stdin)
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) && exit.ExitCode() >= 0 && exit.ExitCode() <= ok {
			return stdout.Bytes(), ""
		}
		msg := strings.TrimSpace(stderr.String())
		if len(msg) > 300 {
			msg = msg[:300] + "…"
		}
		return stdout.Bytes(), fmt.Sprintf("%s: %v: %s", name, err, strings.ReplaceAll(msg, "\n", "; "))
	}
	return stdout.Bytes(), ""
}

// mutFrame frames b into lines as FrameLines does.
func mutFrame(entry string, b []byte) []entryRecord {
	var recs []entryRecord
	for len(b) > 0 {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		recs = append(recs, entryRecord{entry, string(bytes.TrimSuffix(line, []byte("\r")))})
	}
	return recs
}

// The --to-command GNU tar runs for each regular file: its name, type and bytes (in hex).
const mutToCommand = `printf '%s\0%s\0' "$TAR_FILENAME" "$TAR_FILETYPE"; od -An -v -tx1; printf '\0'`

// mutReference reads data with the pipeline's tools, in dir.
func mutReference(dir string, p mutPipeline, data []byte) *mutRef {
	r := &mutRef{}
	if p.codec != "" {
		out, refusal := mutRun(dir, data, p.codec, "-dc")
		if refusal != "" {
			r.refusal, r.codecRefused, r.partial = refusal, true, out
			return r
		}
		data = out
	}
	switch p.archive {
	case "":
		r.recs = mutFrame("", data)
	case "tar":
		r.tarData = data
		entries, refusal := mutGNUTar(dir, data)
		r.refusal = refusal
		var gnu []byte
		for _, e := range entries {
			r.recs = append(r.recs, mutFrame(e[0], []byte(e[1]))...)
			gnu = append(gnu, e[1]...)
		}
		bsd, bsdRefusal := mutRun(dir, data, "bsdtar", "-xOf", "-")
		switch {
		case refusal == "" && bsdRefusal != "":
			r.bsd = "GNU tar reads it, bsdtar refuses: " + mutReason(bsdRefusal)
		case refusal != "" && bsdRefusal == "":
			r.bsd = "bsdtar reads it, GNU tar refuses: " + mutReason(refusal)
		case refusal == "" && !bytes.Equal(gnu, bsd):
			r.bsd = "both read it, to other bytes of the regular files"
		}
	case "zip":
		entries, refusal := mutUnzip(dir, data)
		r.refusal = refusal
		for _, e := range entries {
			r.recs = append(r.recs, mutFrame(e[0], []byte(e[1]))...)
		}
	}
	return r
}

func mutVerdict(refusal string) string {
	if refusal == "" {
		return "reads it (exit 0)"
	}
	return "refuses (" + refusal + ")"
}

// mutGNUTar extracts each regular file's name and bytes with GNU tar.
func mutGNUTar(dir string, data []byte) (entries [][2]string, refusal string) {
	out, refusal := mutRun(dir, data, "tar", "-xf", "-", "--to-command="+mutToCommand)
	if refusal != "" {
		return nil, refusal
	}
	return mutParseToCommand(out)
}

// mutParseToCommand parses what mutToCommand wrote for each regular file.
func mutParseToCommand(out []byte) (entries [][2]string, refusal string) {
	parts := strings.Split(string(out), "\x00")
	if len(parts)%3 != 1 || parts[len(parts)-1] != "" {
		return nil, "tar --to-command: unparseable output"
	}
	for i := 0; i+2 < len(parts); i += 3 {
		b, err := hex.DecodeString(strings.Join(strings.Fields(parts[i+2]), ""))
		if err != nil {
			return nil, "tar --to-command: unparseable od output"
		}
		entries = append(entries, [2]string{parts[i], string(b)})
	}
	return entries, ""
}

// mutUnzip extracts each regular entry's name and bytes with unzip.
//
// unzip's exit status 1 is a read, not a refusal: unzip(1), DIAGNOSTICS, documents it as
// "one or more warning errors were encountered, but processing completed successfully
// anyway" (extra bytes before the first entry or after the last, an end record's
// contradictory disk numbers that unzip works around), and 2 and above as errors ("a
// generic error in the zipfile format was detected", a severe one, no matching files, …).
// After exit 1 the bytes unzip -p wrote are compared entry by entry like those of exit 0:
// the warning does not excuse s3io from reading what unzip read. (The same status also
// covers an entry skipped for its method or encryption, whose bytes unzip -p leaves out:
// s3io refuses such an entry, and a read that does not is compared against the nothing
// unzip extracted.)
func mutUnzip(dir string, data []byte) (entries [][2]string, refusal string) {
	path := filepath.Join(dir, "m.zip")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return nil, err.Error()
	}
	unzip := func(args ...string) ([]byte, string) { return mutRunUpTo(dir, nil, 1, "unzip", args...) }
	list, refusal := unzip("-Z1", path)
	if refusal != "" {
		return nil, refusal
	}
	long, refusal := unzip("-Z", "-s", path)
	if refusal != "" {
		return nil, refusal
	}
	names := strings.Split(strings.TrimSuffix(string(list), "\n"), "\n")
	lines := strings.Split(string(long), "\n")
	if len(lines) < 2+len(names) || !strings.HasPrefix(lines[0], "Archive:") {
		return nil, "unzip -Z: unparseable listing"
	}
	next := 2
	for _, name := range names {
		// The entries' lines come in the order of -Z1's names; the warnings of an exit 1
		// ("43 extra bytes at beginning or within zipfile") may come between.
		i := next
		for i < len(lines) && !strings.HasSuffix(lines[i], " "+name) {
			i++
		}
		if i == len(lines) {
			return nil, "unzip -Z: unparseable listing"
		}
		line := lines[i]
		next = i + 1
		if line[0] != '-' || strings.HasSuffix(name, "/") {
			continue // directories and links: no records
		}
		var b []byte
		if strings.Contains(line, " u0") {
			// A method unzip 6 does not know (xz, 95): 7z, which wrote it, or bsdtar
			// (libarchive) reads it; no one tool is the reference. 7z extracts every byte of
			// an archive whose end record's comment length overruns the file and then exits
			// 2, where unzip, bsdtar and Python read it; bsdtar refuses damage 7z reads past.
			// Either one reading it is a read, its bytes compared.
			if strings.ContainsAny(name, "*?[") {
				return nil, "7z: the name " + strconv.Quote(name) + " holds wildcards"
			}
			b, refusal = mutRun(dir, nil, "7z", "x", "-so", path, "--", name)
			if refusal != "" {
				if bb, bsd := mutRun(dir, nil, "bsdtar", "-xOf", path, name); bsd == "" {
					b, refusal = bb, ""
				}
			}
		} else {
			b, refusal = unzip("-p", path, mutUnzipPattern(name))
			if strings.Contains(refusal, "filename not matched") {
				// unzip -p cannot select a name it listed (bytes beyond ASCII, taken for
				// CP437): its verdict on the whole archive stands in.
				if out, tested := unzip("-t", path); tested != "" {
					// unzip -t writes its complaints among the entries it tests, to stdout.
					var complaints []string
					for _, l := range strings.Split(string(out), "\n") {
						if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "Archive:") && !strings.HasPrefix(l, "testing:") {
							complaints = append(complaints, l)
						}
					}
					refusal = strings.TrimSuffix(tested, " ") + " " + strings.Join(complaints, "; ")
				}
			}
		}
		if refusal != "" {
			return nil, refusal
		}
		entries = append(entries, [2]string{name, string(b)})
	}
	return entries, ""
}

// mutUnzipPattern escapes unzip's wildcards.
func mutUnzipPattern(name string) string {
	var b strings.Builder
	for _, c := range name {
		if strings.ContainsRune("*?[]", c) {
			b.WriteString("[" + string(c) + "]")
		} else {
			b.WriteRune(c)
		}
	}
	return b.String()
}

// mutPipelineOf is the reference of an object whose magic bytes name c, for an original
// of pipeline p: a codec keeps the tar expected inside.
func mutPipelineOf(c Compression, p mutPipeline) (mutPipeline, bool) {
	switch c {
	case None:
		return mutPipeline{}, true
	case Tar:
		return mutPipeline{archive: "tar"}, true
	case Zip:
		return mutPipeline{archive: "zip"}, true
	}
	for _, cd := range mutCodecs {
		if cd.comp == c {
			if p.archive == "tar" {
				return mutPipeline{cd.tool, "tar"}, true
			}
			return mutPipeline{codec: cd.tool}, true
		}
	}
	return mutPipeline{}, false
}

// mutS3io reads data as s3io does, a panic being an error of its own.
func mutS3io(t *testing.T, key string, data []byte) (recs []entryRecord, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	recs, _, err = readObject(t, Auto, key, data, 0)
	return recs, err
}

func mutIsFailure(err error) bool {
	return errors.Is(err, ErrCorrupt) || errors.Is(err, ErrUnsupported)
}

// mutViolation is a read that broke the promise.
type mutViolation struct {
	orig, id, desc, key string
	n                   int // s3io's records
	s3ioErr             error
	pipe                mutPipeline
	verdict             string // the reference's
	cause, detail       string // detail: the reference's reason, where the cause holds several
	artifact            string
}

type mutationRun struct {
	perClass int
	only     string // S3IO_MUTANT

	mu                                   sync.Mutex
	violations                           []mutViolation
	bsd                                  map[string][]string // where bsdtar reads a tar otherwise than GNU tar: the mutants, by how
	mutants, reads, failures, equal, alt int
	artifactDir                          string
	artifacts                            int
}

func (m *mutationRun) original(t *testing.T, o *mutOriginal) {
	dir := t.TempDir()
	keys := []string{o.key, "x"}

	// The original: the reference finds the tree's files, and s3io reads it exactly.
	t.Logf("%s: %d bytes, sha256 %.16x (the same every run, and so are the mutants); byte classes: %s",
		o.name, len(o.data), sha256.Sum256(o.data), strings.Join(mutClassOrder(o.spans), ", "))
	ref := mutReference(dir, o.pipe, o.data)
	if ref.refusal != "" {
		t.Fatalf("the reference refuses the original: %s", ref.refusal)
	}
	var want []entryRecord
	for name, body := range o.want {
		want = append(want, mutFrame(name, []byte(body))...)
	}
	sortRecs := func(rs []entryRecord) []entryRecord {
		rs = slices.Clone(rs)
		slices.SortStableFunc(rs, func(a, b entryRecord) int { return strings.Compare(a.entry, b.entry) })
		return rs
	}
	if !slices.Equal(sortRecs(ref.recs), sortRecs(want)) {
		t.Fatalf("the reference (%s) does not read the original as the tree holds it:\n got %q\nwant %q", o.pipe, ref.recs, want)
	}
	if ref.bsd != "" {
		m.noteBSD(t, o, "original", ref.bsd)
	}
	for _, key := range keys {
		recs, err := mutS3io(t, key, o.data)
		if err != nil || !slices.Equal(recs, ref.recs) {
			m.violate(t, o, mutant{"original", "the original", o.data}, key, recs, err, o.pipe, ref)
		}
	}

	n := 0
	for _, mu := range o.mutants(t, m.perClass) {
		if m.only != "" && m.only != o.name+"#"+mu.id {
			continue
		}
		n++
		m.check(t, dir, o, mu, keys)
	}
	m.mu.Lock()
	m.mutants += n
	m.mu.Unlock()
}

func (m *mutationRun) check(t *testing.T, dir string, o *mutOriginal, mu mutant, keys []string) {
	refs := map[mutPipeline]*mutRef{}
	for _, key := range keys {
		recs, err := mutS3io(t, key, mu.data)
		m.mu.Lock()
		m.reads++
		m.mu.Unlock()
		p, known := o.pipe, true
		if key == "x" {
			p, known = mutPipelineOf(Detect(Auto, key, mu.data[:min(len(mu.data), MagicLen)]), o.pipe)
			if p != o.pipe {
				m.mu.Lock()
				m.alt++
				m.mu.Unlock()
			}
		}
		var ref *mutRef
		if known && (err == nil || m.only != "") {
			if ref = refs[p]; ref == nil {
				ref = mutReference(dir, p, mu.data)
				refs[p] = ref
				if ref.bsd != "" {
					m.noteBSD(t, o, mu.id, ref.bsd)
				}
			}
		}
		if m.only != "" {
			t.Logf("%s#%s (%s) under key %q: s3io: %d records, err %v: %q", o.name, mu.id, mu.desc, key, len(recs), err, recs)
			if ref != nil {
				t.Logf("reference %s: %s: %d records: %q", p, mutVerdict(ref.refusal), len(ref.recs), ref.recs)
			}
		}
		switch {
		case err != nil && mutIsFailure(err):
			m.mu.Lock()
			m.failures++
			m.mu.Unlock()
		case err == nil && known && ref.refusal == "" && slices.Equal(recs, ref.recs):
			m.mu.Lock()
			m.equal++
			m.mu.Unlock()
		default:
			m.violate(t, o, mu, key, recs, err, p, ref)
		}
	}
}

func (m *mutationRun) noteBSD(t *testing.T, o *mutOriginal, id, note string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.bsd == nil {
		m.bsd = map[string][]string{}
	}
	m.bsd[note] = append(m.bsd[note], o.name+"#"+id)
}

// violate records a violation, its cause, and the mutant's bytes for reproduction.
func (m *mutationRun) violate(t *testing.T, o *mutOriginal, mu mutant, key string, recs []entryRecord, err error, p mutPipeline, ref *mutRef) {
	v := mutViolation{orig: o.name, id: mu.id, desc: mu.desc, key: key, n: len(recs), s3ioErr: err, pipe: p}
	switch {
	case err != nil && !mutIsFailure(err):
		v.verdict = "(not run: s3io's error breaks the promise alone)"
	case ref == nil:
		v.verdict = "(none: no reference for the format the magic bytes name)"
	default:
		v.verdict = mutVerdict(ref.refusal)
		if ref.refusal == "" {
			v.verdict += fmt.Sprintf(": %d records", len(ref.recs))
		}
	}
	v.cause, v.detail = mutCause(recs, err, p, ref)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.artifacts < 500 {
		if m.artifactDir == "" {
			m.artifactDir = os.Getenv("S3IO_MUTANTS_DIR")
			if m.artifactDir == "" {
				m.artifactDir, _ = os.MkdirTemp("", "s3io-mutants-")
			}
			os.MkdirAll(m.artifactDir, 0o755)
		}
		name := strings.NewReplacer("/", "_", " ", "-").Replace(mu.id) + "--" + o.name
		path := filepath.Join(m.artifactDir, name)
		if _, statErr := os.Stat(path); statErr != nil {
			if os.WriteFile(path, mu.data, 0o644) == nil {
				m.artifacts++
			}
		}
		v.artifact = path
	}
	m.violations = append(m.violations, v)
	t.Errorf("VIOLATION %s#%s (%s) under key %q: s3io %d records, err %v; reference %s %s; cause: %s; mutant: %s",
		o.name, mu.id, mu.desc, key, len(recs), err, p, v.verdict, strings.TrimSuffix(v.cause+": "+v.detail, ": "), v.artifact)
}

// mutCause names what a violation shows, so that violations group by their cause: the
// symptom, and the reference's reason when it refuses (the originals and mutations of a
// group show where).
func mutCause(recs []entryRecord, err error, p mutPipeline, ref *mutRef) (cause, detail string) {
	kind := "an object read as text"
	switch {
	case p.archive != "":
		kind = "a " + p.archive
	case p.codec != "":
		kind = "a compressed text"
	}
	switch {
	case err != nil && strings.HasPrefix(err.Error(), "panic:"):
		return "s3io panics on " + kind, ""
	case err != nil && len(recs) > 0:
		return "s3io fails after records with an error that is no Failure (wraps neither ErrCorrupt nor ErrUnsupported), on " + kind, ""
	case err != nil:
		return "s3io fails with an error that is no Failure (wraps neither ErrCorrupt nor ErrUnsupported), on " + kind, ""
	case ref == nil:
		return "s3io reads records from a format the test has no reference for", ""
	case ref.codecRefused:
		// One cause, whatever the codec says: its refusal goes unnoticed.
		where := ""
		if _, _, end := mutWalkTar(ref.partial); p.archive == "tar" && end > 0 {
			where = ", after the tar's end-of-archive marker"
		}
		return "s3io reads records from " + kind + " its codec refuses (the codec's check goes unnoticed)", mutReason(ref.refusal) + where
	case ref.refusal != "":
		return "s3io reads records from " + kind + " the reference refuses: " + mutReason(ref.refusal), ""
	}
	// Both read it, to other records.
	s3ioEntries, refEntries := mutEntryNames(recs), mutEntryNames(ref.recs)
	if p.archive != "" && len(recs) > 0 && len(s3ioEntries) == 1 && s3ioEntries[0] == "" {
		if _, members, _ := mutWalkTar(ref.tarData); p.archive == "tar" && len(members) > 0 && !strings.HasPrefix(members[0].magic, "ustar") {
			return "s3io frames a tar as text: its first header has no ustar magic (a v7 header, or the magic damaged)", ""
		}
		return "s3io frames " + kind + " as text", ""
	}
	var missing, extra []string
	for _, e := range refEntries {
		if !slices.Contains(s3ioEntries, e) {
			missing = append(missing, e)
		}
	}
	for _, e := range s3ioEntries {
		if !slices.Contains(refEntries, e) {
			extra = append(extra, e)
		}
	}
	switch {
	case len(missing) > 0 && len(extra) > 0:
		return "s3io reads entries of " + kind + " under other names than the reference (and so, likely, other contents)", ""
	case len(missing) > 0 && p.archive == "tar":
		_, members, _ := mutWalkTar(ref.tarData)
		var types []string
		for _, mm := range members {
			if t := strconv.QuoteRune(rune(mm.typeflag)); slices.Contains(missing, mm.name) && !slices.Contains(types, t) {
				types = append(types, t)
			}
		}
		return fmt.Sprintf("s3io skips entries of a tar that GNU tar extracts (typeflag %s)", strings.Join(types, ", ")), ""
	case len(missing) > 0:
		return "s3io skips entries of " + kind + " that the reference extracts", ""
	case len(extra) > 0:
		return "s3io yields entries of " + kind + " that the reference does not", ""
	case len(recs) < len(ref.recs) && slices.Equal(recs, ref.recs[:len(recs)]):
		return "s3io stops early in " + kind + ": its records are a prefix of the reference's", ""
	}
	return "s3io reads other records than the reference from the same entries of " + kind, ""
}

// mutReason is a tool's refusal as "tool (exit N): its first complaint", without the paths,
// names and numbers that differ from mutant to mutant.
func mutReason(refusal string) string {
	tool, rest, _ := strings.Cut(refusal, ": ")
	status, msg, _ := strings.Cut(rest, ": ")
	status = strings.TrimPrefix(status, "exit status ")
	reason := "(no message)"
	for _, seg := range strings.Split(msg, "; ") {
		for _, r := range mutReasonEdits {
			seg = r.re.ReplaceAllString(seg, r.to)
		}
		seg = strings.TrimSpace(seg)
		if strings.Contains(seg, "filename not matched") {
			seg = "caution: filename not matched"
		}
		switch seg {
		case "", "ERRORS:", "Error is not recoverable: exiting now", "Exiting with failure status due to previous errors", "Error exit delayed from previous errors.":
			continue
		}
		reason = seg
		break
	}
	if len(reason) > 120 {
		reason = reason[:120] + "…"
	}
	return fmt.Sprintf("%s (exit %s): %s", tool, status, reason)
}

var mutReasonEdits = []struct {
	re *regexp.Regexp
	to string
}{
	{regexp.MustCompile(`^(tar|bsdtar|gzip|bzip2|xz|lz4|zstd|unzip|7z): `), ""},
	{regexp.MustCompile(`^\(?stdin\)?\s*:\s*`), ""},
	{regexp.MustCompile(`^(warning|caution:?)?\s*\[[^\]]*\]:?\s*`), ""}, // unzip's [archive path]:
	{regexp.MustCompile(`^[^:]*:  `), ""},                               // unzip's "entry name:  "
	{regexp.MustCompile(`^\S+\s+(bad CRC)`), "$1"},
	{regexp.MustCompile(`'[^']*'`), "'…'"},
	{regexp.MustCompile(`"[^"]*"`), `"…"`},
	{regexp.MustCompile(`\([^)]*\)`), "(…)"},
	{regexp.MustCompile(`/tmp/\S+`), "<path>"},
	{regexp.MustCompile(`[0-9]+`), "N"},
	{regexp.MustCompile(`\s+`), " "},
}

func mutEntryNames(recs []entryRecord) []string {
	var names []string
	for _, r := range recs {
		if len(names) == 0 || names[len(names)-1] != r.entry {
			names = append(names, r.entry)
		}
	}
	return names
}

// summarize logs the run and the violations grouped by cause, with a reproduction of each.
func (m *mutationRun) summarize(t *testing.T, took time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "%d mutants (S3IO_MUTANTS=%d per class and kind), %d reads in %v: %d refused with a Failure, %d equal to the reference, %d violations; %d reads under key \"x\" took the format the damaged magic bytes name",
		m.mutants, m.perClass, m.reads, took.Round(time.Second/10), m.failures, m.equal, len(m.violations), m.alt)
	causes, groups := mutGroups(m.violations)
	if len(causes) > 0 {
		fmt.Fprintf(&b, "\nviolations by cause (mutants written to %s):", m.artifactDir)
	}
	for i, c := range causes {
		vs := groups[c]
		origs, kinds, mutants := map[string]bool{}, map[string]bool{}, map[string]bool{}
		for _, v := range vs {
			origs[v.orig], mutants[v.orig+"#"+v.id] = true, true
			kind := v.id
			if k := strings.LastIndexByte(kind, '/'); k > 0 && strings.Count(kind, "/") >= 2 {
				kind = kind[:k]
			}
			kinds[kind] = true
		}
		fmt.Fprintf(&b, "\n%d. %s\n   %d reads of %d mutants; originals: %s\n   mutations: %s", i+1, c, len(vs), len(mutants),
			strings.Join(slices.Sorted(maps.Keys(origs)), " "), strings.Join(slices.Sorted(maps.Keys(kinds)), ", "))
		mutWriteDetails(&b, vs)
		shown := map[string]bool{}
		for _, v := range vs {
			if len(shown) == 3 || shown[v.orig+"#"+v.id] {
				continue
			}
			shown[v.orig+"#"+v.id] = true
			fmt.Fprintf(&b, "\n   e.g. %s#%s (%s), key %q: s3io %d records, err %v; %s %s\n        reproduce: S3IO_MUTANT='%s#%s' go test -run 'TestMutants/originals/%s$' -v ./s3io/internal/decode/ ; mutant: %s",
				v.orig, v.id, v.desc, v.key, v.n, v.s3ioErr, v.pipe, v.verdict, v.orig, v.id, regexp.QuoteMeta(v.orig), v.artifact)
		}
	}
	if len(m.bsd) > 0 {
		b.WriteString("\nwhere GNU tar and bsdtar disagree (GNU tar is the reference):")
		for _, note := range slices.Sorted(maps.Keys(m.bsd)) {
			ids := m.bsd[note]
			slices.Sort(ids)
			fmt.Fprintf(&b, "\n   %s: %d tars, e.g. %s", note, len(ids), strings.Join(ids[:min(4, len(ids))], ", "))
		}
	}
	t.Log(b.String())
}

// mutGroups groups violations by cause, the most frequent cause first.
func mutGroups(violations []mutViolation) (causes []string, groups map[string][]mutViolation) {
	groups = map[string][]mutViolation{}
	for _, v := range violations {
		if groups[v.cause] == nil {
			causes = append(causes, v.cause)
		}
		groups[v.cause] = append(groups[v.cause], v)
	}
	sort.SliceStable(causes, func(i, j int) bool { return len(groups[causes[i]]) > len(groups[causes[j]]) })
	return causes, groups
}

// mutWriteDetails writes how many of a cause's violations each detail accounts for.
func mutWriteDetails(b *strings.Builder, vs []mutViolation) {
	details := map[string]int{}
	for _, v := range vs {
		if v.detail != "" {
			details[v.detail]++
		}
	}
	for _, d := range slices.Sorted(maps.Keys(details)) {
		fmt.Fprintf(b, "\n   - %d reads: %s", details[d], d)
	}
}
