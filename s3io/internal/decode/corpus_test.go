package decode

import (
	"archive/zip"
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"time"

	"github.com/spate-io/beam-s3/internal/clitool"
)

// TestCorpus holds s3io to its promise on other projects' decoder test files: an object is
// read exactly as the reference tool reads it, or refused with a Failure (an error wrapping
// ErrCorrupt or ErrUnsupported), never read to a record the reference does not produce with
// no error.
//
// The files are testdata/corpus's (Go's archive/tar, archive/zip, compress/gzip and
// compress/bzip2 test files, klauspost/compress's zstd ones, pierrec/lz4's, therootcompany/
// xz's; testdata/corpus/README.md says where each came from, at which version) and those of
// the xz fork, ../xz/testdata. A .base64 file is read decoded, under its name without
// .base64; the entries of the zips klauspost/compress keeps its zstd test frames in are
// files of their own too, named ZIP:ENTRY. Many are broken on purpose (bad checksums,
// truncations, bad headers, fuzzer finds): those pass when s3io refuses them.
//
// Each file is read as s3io reads it (mode Auto, the lines framer, a record limit of
// corpusMaxRecord) under its own name as the key and under its name cut at the first dot
// (no extension: the format comes from the magic bytes). A Failure passes. A read without
// an error must equal the reference of the format Detect names for that key: the codec's
// CLI (gzip, bzip2, xz, lz4, zstd, brotli -dc; pigz -dcz for zlib; exit 0), then GNU tar
// when the decoded bytes open with a tar header (or the key names a tar), else the lines;
// GNU tar or unzip for a stored tar or zip, through mutation_test.go's helpers (unzip's
// exit 1, a warning, is a read: see mutUnzip). GNU tar runs with -P, so that it names the
// entries as stored, and extracts no regular file above corpusMaxEntry (corpusToCommand).
// Each archive entry is then decoded as s3io decodes it in auto mode, by its own name and
// magic bytes, through the same CLIs, and framed into lines as FrameLines frames it. The
// formats s3io refuses by design (7z, rar, .Z, lzip, legacy lz4, …), the codecs with no
// CLI here (Snappy framing, raw deflate), a tar holding a file above corpusMaxEntry, have no
// reference: s3io reading one to records is a violation of its own.
//
// Two outcomes besides a Failure pass without the reference's records, each listed in the
// summary: s3io stopping at the record limit (ErrRecordTooLarge, the error Config's
// MaxRecordBytes names) in a tar GNU tar extracts a file above that limit from (Go's
// sparse tars of 512 MiB and 60 GB), and s3io reading an xz stream with the RISC-V filter,
// which XZ Utils decodes from 5.6.0 on while Debian 12 has 5.4.1 (xz says "Unsupported
// options"; TestXzRISCV checks that filter).
//
// Violations are reported per file as they are found, then grouped by cause (as
// TestMutants groups them) in the summary the test logs last, with a reproduction each
// (S3IO_CORPUS='FILE' runs that file alone and logs both sides' records), followed by the
// files s3io refuses although the reference reads them (no violation: a refusal keeps the
// promise, but may be more than the format asks). The run takes ~4 s on two cores.
func TestCorpus(t *testing.T) {
	clitool.Need(t, "tar", "gzip", "bzip2", "xz", "lz4", "zstd", "brotli", "pigz", "unzip", "7z", "sh", "od")
	start := time.Now()
	files := corpusFiles(t)
	run := &corpusRun{only: os.Getenv("S3IO_CORPUS"), errs: map[string]int{}, overRefused: map[string][]string{}}
	t.Run("files", func(t *testing.T) {
		for _, f := range files {
			if run.only != "" && run.only != f.path {
				continue
			}
			t.Run(f.path, func(t *testing.T) {
				t.Parallel()
				run.file(t, f)
			})
		}
	})
	run.summarize(t, len(files), time.Since(start))
}

// corpusMaxRecord is the record limit of the reads: klauspost/compress's large.zip holds
// 10 MiB of zeros with no newline, one record; only the sparse tars' files are longer.
const corpusMaxRecord = 64 << 20

// corpusFile is one test file of the corpus.
type corpusFile struct {
	path string // as the summary names it: under testdata/corpus, or xz/testdata/…; ZIP:ENTRY
	name string // its base name, the key of the first read
	data []byte
}

// corpusZips are the zips whose entries are files of the corpus too: klauspost/compress's
// zstd test frames.
var corpusZips = []string{
	"klauspost-compress/zstd/testdata/good.zip",
	"klauspost-compress/zstd/testdata/bad.zip",
	"klauspost-compress/zstd/testdata/decode-regression.zip",
	"klauspost-compress/zstd/testdata/large.zip",
	"klauspost-compress/zstd/testdata/fuzz/decode-oss.zip",
}

func corpusFiles(t *testing.T) []corpusFile {
	var files []corpusFile
	walk := func(root, prefix string, skip func(name string) bool) {
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || skip(d.Name()) {
				return err
			}
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, p)
			rel = prefix + filepath.ToSlash(rel)
			name := d.Name()
			if strings.HasSuffix(name, ".base64") {
				dec, err := base64.StdEncoding.DecodeString(string(bytes.TrimSpace(data)))
				if err != nil {
					return fmt.Errorf("%s: %v", rel, err)
				}
				data, name, rel = dec, strings.TrimSuffix(name, ".base64"), strings.TrimSuffix(rel, ".base64")
			}
			files = append(files, corpusFile{rel, name, data})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	walk(filepath.Join("testdata", "corpus"), "", func(name string) bool {
		return name == "README.md" || name == "LICENSE" || name == "AUTHORS"
	})
	if len(files) < 100 {
		t.Fatalf("testdata/corpus holds %d files: it is missing", len(files))
	}
	walk(filepath.Join("..", "xz", "testdata"), "xz/testdata/", func(name string) bool {
		return !strings.HasSuffix(name, ".xz")
	})
	for _, z := range corpusZips {
		data, err := os.ReadFile(filepath.Join("testdata", "corpus", z))
		if err != nil {
			t.Fatal(err)
		}
		zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			t.Fatalf("%s: %v", z, err)
		}
		for _, e := range zr.File {
			if e.FileInfo().IsDir() {
				continue
			}
			rc, err := e.Open()
			if err != nil {
				t.Fatalf("%s:%s: %v", z, e.Name, err)
			}
			b, err := io.ReadAll(rc)
			rc.Close()
			if err != nil {
				t.Fatalf("%s:%s: %v", z, e.Name, err)
			}
			files = append(files, corpusFile{z + ":" + e.Name, path.Base(e.Name), b})
		}
	}
	sort.Slice(files, func(i, j int) bool { return files[i].path < files[j].path })
	return files
}

// corpusKeys are the keys a file is read under: its name, and its name with no extension.
func corpusKeys(name string) []string {
	keys := []string{name}
	if i := strings.IndexByte(name, '.'); i > 0 {
		keys = append(keys, name[:i])
	}
	return keys
}

// corpusS3io reads data as readObject does, with a record limit of corpusMaxRecord; a panic
// is an error of its own.
func corpusS3io(key string, data []byte) (recs []entryRecord, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	d := &Decompressors{}
	defer d.Close()
	info := ObjectInfo{Key: key, Size: int64(len(data)), ReadRange: func(from, to int64) ([]byte, error) {
		return bytes.Clone(data[from:to]), nil
	}}
	entries, stream, _, err := d.OpenEntries(Auto, info, iotest.HalfReader(bytes.NewReader(data)))
	if err != nil {
		return nil, err
	}
	var rr *RecordReader
	if entries != nil {
		rr = NewEntriesRecordReader(entries, func() Framer { return FramerFunc(FrameLines) }, corpusMaxRecord)
	} else {
		rr = NewRecordReader(stream, FramerFunc(FrameLines), corpusMaxRecord, 0)
	}
	for {
		rec, _, err := rr.Next()
		if err == io.EOF {
			return recs, nil
		}
		if err != nil {
			return recs, err
		}
		recs = append(recs, entryRecord{rr.Entry(), string(rec)})
	}
}

// corpusCodecs are the codec CLIs, decompressing stdin to stdout.
var corpusCodecs = map[Compression][]string{
	Gzip:   {"gzip", "-dc"},
	Bzip2:  {"bzip2", "-dc"},
	Xz:     {"xz", "-dc"},
	Lz4:    {"lz4", "-dc"},
	Zstd:   {"zstd", "-dc"},
	Brotli: {"brotli", "-dc"},
	Zlib:   {"pigz", "-dcz"},
}

// corpusRef is what the reference made of a file under one key.
type corpusRef struct {
	p   mutPipeline
	ref *mutRef // nil: no reference, why says why
	why string
	// tooLarge: a regular file above corpusMaxEntry was not extracted (why names it); s3io
	// stopping at the record limit (ErrRecordTooLarge) is then a limit met, not a misread.
	tooLarge bool
}

// corpusReference reads data as the reference reads the format Detect names under key.
func corpusReference(dir, key string, data []byte) corpusRef {
	var r corpusRef
	comp := Detect(Auto, key, data[:min(len(data), MagicLen)])
	switch {
	case IsUnsupported(comp):
		r.why = strings.TrimPrefix(string(comp), unsupportedPrefix) + ", a format s3io refuses"
		return r
	case comp == None:
		r.ref = &mutRef{recs: mutFrame("", data)}
		return r
	case comp == Tar, comp == Zip:
		r.p.archive = string(comp)
		corpusArchive(dir, &r, data)
		return r
	}
	tool := corpusCodecs[comp]
	if tool == nil {
		r.why = string(comp) + ", a codec with no CLI here"
		return r
	}
	r.p.codec = tool[0]
	out, refusal := mutRun(dir, data, tool[0], tool[1:]...)
	if refusal != "" {
		if why := corpusXzLacks(comp, refusal, data); why != "" {
			r.why = why
			return r
		}
		r.ref = &mutRef{refusal: refusal, codecRefused: true, partial: out}
		return r
	}
	if IsTar(out[:min(len(out), MagicLen)]) || NamesTar(key) {
		r.p.archive = "tar"
		corpusArchive(dir, &r, out)
		return r
	}
	r.ref = &mutRef{recs: mutFrame("", out)}
	return r
}

// corpusXzLacks tells whether xz refused a stream for a filter it does not know that s3io's
// xz decodes: the RISC-V BCJ filter (ID 0x0b, XZ Utils 5.6.0 on; Debian 12 has 5.4.1),
// named in the first block's header. xz says "Unsupported options" (LZMA_OPTIONS_ERROR).
func corpusXzLacks(comp Compression, refusal string, data []byte) string {
	if comp != Xz || !strings.Contains(refusal, "Unsupported options") || len(data) < 14 {
		return ""
	}
	hdr := data[12:]
	size := (int(hdr[0]) + 1) * 4
	if hdr[0] == 0 || len(hdr) < size {
		return ""
	}
	flags := hdr[1]
	p := 2
	if flags&0x40 != 0 { // compressed size
		p += corpusVLILen(hdr[p:size])
	}
	if flags&0x80 != 0 { // uncompressed size
		p += corpusVLILen(hdr[p:size])
	}
	for range int(flags&3) + 1 {
		if p >= size {
			return ""
		}
		id := hdr[p]
		p += corpusVLILen(hdr[p:size])
		if p >= size {
			return ""
		}
		n := int(hdr[p]) // the properties' size (< 128 for the known filters)
		p += 1 + n
		if id == 0x0b {
			return "an xz stream with the RISC-V BCJ filter, which this xz does not decode (" + mutReason(refusal) + ")"
		}
	}
	return ""
}

// corpusVLILen is the length of the xz variable-length integer b starts with.
func corpusVLILen(b []byte) int {
	for i, c := range b {
		if c&0x80 == 0 {
			return i + 1
		}
	}
	return len(b)
}

// corpusArchive extracts a tar's or a zip's regular entries with the reference tool and
// decodes each as s3io does in auto mode, by its own name and magic bytes.
func corpusArchive(dir string, r *corpusRef, data []byte) {
	ref := &mutRef{}
	var entries [][2]string
	if r.p.archive == "tar" {
		ref.tarData = data
		var why string
		if entries, ref.refusal, why = corpusGNUTar(dir, data); why != "" {
			r.why, r.tooLarge = why, true
			return
		}
	} else {
		entries, ref.refusal = mutUnzip(dir, data)
	}
	for _, e := range entries {
		name, body := e[0], []byte(e[1])
		if len(body) == 0 {
			continue // an empty entry: empty, whatever its name (Open reads nothing as nothing)
		}
		comp := Detect(Auto, name, body[:min(len(body), MagicLen)])
		switch {
		case IsUnsupported(comp):
			r.why = fmt.Sprintf("%s entry %q is %s, a format s3io refuses", r.p.archive, name, strings.TrimPrefix(string(comp), unsupportedPrefix))
			return
		case comp == Tar || comp == Zip:
			r.why = fmt.Sprintf("%s entry %q is itself a %s, which s3io refuses", r.p.archive, name, comp)
			return
		case comp != None:
			tool := corpusCodecs[comp]
			if tool == nil {
				r.why = fmt.Sprintf("%s entry %q is %s, a codec with no CLI here", r.p.archive, name, comp)
				return
			}
			out, refusal := mutRun(dir, body, tool[0], tool[1:]...)
			if refusal != "" {
				if why := corpusXzLacks(comp, refusal, body); why != "" {
					r.why = fmt.Sprintf("%s entry %q is %s", r.p.archive, name, why)
					return
				}
				ref.refusal = fmt.Sprintf("%s (of %s entry %q)", refusal, r.p.archive, name)
				r.ref = ref
				return
			}
			body = out
		}
		ref.recs = append(ref.recs, mutFrame(name, body)...)
	}
	r.ref = ref
}

// corpusMaxEntry bounds the regular files GNU tar extracts for the reference, through od
// and into memory: Go's sparse test tars hold files of 60 GB (gnu-sparse-big.tar,
// pax-sparse-big.tar) and 512 MiB (gnu-incremental.tar), mostly holes. It is the record
// limit: a larger file may hold a longer record.
const corpusMaxEntry = corpusMaxRecord

// corpusToCommand is mutToCommand, except that a file above corpusMaxEntry is named, not
// extracted: the command exits without reading it (GNU tar then fails on the broken pipe).
// GNU tar runs with -P (--absolute-names): the names are the archive's as stored, as s3io
// names its entries, not with the leading "/" GNU tar drops before writing a file
// (pierrec/lz4's pg_control.tar holds "/global/pg_control"); nothing is written here.
var corpusToCommand = fmt.Sprintf(`if [ "${TAR_SIZE:-0}" -gt %d ]; then printf '\001too large\001%%s\001%%s\001' "$TAR_FILENAME" "$TAR_SIZE"; exit 0; fi; `, corpusMaxEntry) + mutToCommand

// corpusGNUTar is mutGNUTar bounded by corpusMaxEntry: a tar holding a larger regular file
// has no reference, why says so.
func corpusGNUTar(dir string, data []byte) (entries [][2]string, refusal, why string) {
	out, refusal := mutRun(dir, data, "tar", "-xPf", "-", "--to-command="+corpusToCommand)
	if i := bytes.Index(out, []byte("\x01too large\x01")); i >= 0 {
		f := strings.Split(string(out[i:]), "\x01")
		return nil, "", fmt.Sprintf("GNU tar extracts %q as %s bytes, more than the %d the test extracts", f[2], f[3], corpusMaxEntry)
	}
	if refusal != "" {
		return nil, refusal, ""
	}
	entries, refusal = mutParseToCommand(out)
	return entries, refusal, ""
}

type corpusRun struct {
	only string // S3IO_CORPUS

	mu                     sync.Mutex
	violations             []mutViolation
	reads, failures, equal int
	errs                   map[string]int      // s3io's Failures by their kind
	overRefused            map[string][]string // s3io's refusals of files the reference reads, by reason
	limited                []string            // reads stopped at the record limit, in a file above it
	unchecked              []string            // reads of xz streams this xz does not decode
	known                  []string            // reads of corpusKnown
}

// corpusKnown are the files s3io reads, with no record made up, where the reference
// refuses them, and why s3io cannot refuse them. Each holds exactly corpusKnownRecords'
// records (the zip, its other entries'): any other count is a violation.
var corpusKnown = map[string]string{
	"klauspost-compress/zstd/testdata/good.zip:2274d31e0d569fe9e31bedc4f9fddd9c9f114c2f.zst": "" +
		"a zstd frame of content size 0 whose one compressed block of 2 bytes holds no literals " +
		"and no sequences: klauspost/compress (which files it among its good inputs) decodes it " +
		"to nothing, zstd 1.5.4 refuses it (\"Src size is incorrect\"); the walker sees block " +
		"headers, not why libzstd refuses this one",
	"klauspost-compress/zstd/testdata/good.zip": "its entry above, read as nothing; the other entries exactly",
}

var corpusKnownRecords = map[string]int{
	"klauspost-compress/zstd/testdata/good.zip:2274d31e0d569fe9e31bedc4f9fddd9c9f114c2f.zst": 0,
	"klauspost-compress/zstd/testdata/good.zip":                                              44,
}

func (c *corpusRun) file(t *testing.T, f corpusFile) {
	dir := t.TempDir()
	for _, key := range corpusKeys(f.name) {
		recs, err := corpusS3io(key, f.data)
		r := corpusReference(dir, key, f.data)
		if c.only != "" {
			t.Logf("%s under key %q: s3io: %d records, err %v: %q", f.path, key, len(recs), err, recs)
			if r.ref != nil {
				t.Logf("reference %s: %s: %d records: %q", r.p, mutVerdict(r.ref.refusal), len(r.ref.recs), r.ref.recs)
			} else {
				t.Logf("no reference: %s", r.why)
			}
		}
		c.mu.Lock()
		c.reads++
		switch {
		case err != nil && mutIsFailure(err):
			c.failures++
			kind := "ErrCorrupt"
			if errors.Is(err, ErrUnsupported) {
				kind = "ErrUnsupported"
			}
			c.errs[kind]++
			if r.ref != nil && r.ref.refusal == "" {
				reason := corpusErrReason(err)
				c.overRefused[reason] = append(c.overRefused[reason], fmt.Sprintf("%s (key %q)", f.path, key))
			}
		case err != nil && errors.Is(err, ErrRecordTooLarge) && r.tooLarge:
			c.limited = append(c.limited, fmt.Sprintf("%s (key %q): %s", f.path, key, r.why))
		case err == nil && r.ref == nil && strings.Contains(r.why, "which this xz does not decode"):
			c.unchecked = append(c.unchecked, fmt.Sprintf("%s (key %q, %d records): %s", f.path, key, len(recs), r.why))
		case err == nil && r.ref != nil && r.ref.refusal == "" && slices.Equal(recs, r.ref.recs):
			c.equal++
		case err == nil && r.ref != nil && r.ref.refusal != "" && corpusKnown[f.path] != "" &&
			len(recs) == corpusKnownRecords[f.path]:
			c.known = append(c.known, fmt.Sprintf("%s (key %q, %d records): %s", f.path, key, len(recs), corpusKnown[f.path]))
		default:
			c.mu.Unlock()
			c.violate(t, f, key, recs, err, r)
			continue
		}
		c.mu.Unlock()
	}
}

// corpusErrReason is s3io's error without the names and numbers that differ from file to
// file, for grouping.
func corpusErrReason(err error) string {
	msg := strings.ReplaceAll(err.Error(), "s3io", "\x01") // kept whole: no digit rewritten
	for _, r := range mutReasonEdits {
		if r.to != "" { // not the ones that drop a tool's prefix
			msg = r.re.ReplaceAllString(msg, r.to)
		}
	}
	msg = strings.ReplaceAll(msg, "\x01", "s3io")
	if len(msg) > 140 {
		msg = msg[:140] + "…"
	}
	return msg
}

func (c *corpusRun) violate(t *testing.T, f corpusFile, key string, recs []entryRecord, err error, r corpusRef) {
	v := mutViolation{orig: f.path, id: f.path, desc: fmt.Sprintf("%d bytes", len(f.data)), key: key, n: len(recs), s3ioErr: err, pipe: r.p}
	switch {
	case err != nil && !mutIsFailure(err):
		v.verdict = "(not needed: s3io's error breaks the promise alone)"
	case r.ref == nil:
		v.verdict = "(none: " + r.why + ")"
	default:
		v.verdict = mutVerdict(r.ref.refusal)
		if r.ref.refusal == "" {
			v.verdict += fmt.Sprintf(": %d records", len(r.ref.recs))
		}
	}
	v.cause, v.detail = mutCause(recs, err, r.p, r.ref)
	c.mu.Lock()
	c.violations = append(c.violations, v)
	c.mu.Unlock()
	t.Errorf("VIOLATION %s under key %q: s3io %d records, err %v; reference %s %s; cause: %s",
		f.path, key, len(recs), err, r.p, v.verdict, strings.TrimSuffix(v.cause+": "+v.detail, ": "))
}

// summarize logs the run, the violations grouped by cause with a reproduction each, and
// the refusals of files the reference reads.
func (c *corpusRun) summarize(t *testing.T, files int, took time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "%d files, %d reads in %v: %d refused with a Failure (%d ErrCorrupt, %d ErrUnsupported), %d equal to the reference, %d violations",
		files, c.reads, took.Round(time.Second/10), c.failures, c.errs["ErrCorrupt"], c.errs["ErrUnsupported"], c.equal, len(c.violations))
	causes, groups := mutGroups(c.violations)
	if len(causes) > 0 {
		b.WriteString("\nviolations by cause:")
	}
	for i, cause := range causes {
		vs := groups[cause]
		fmt.Fprintf(&b, "\n%d. %s\n   %d reads", i+1, cause, len(vs))
		mutWriteDetails(&b, vs)
		for _, v := range vs {
			fmt.Fprintf(&b, "\n   %s, key %q: s3io %d records, err %v; %s %s\n      reproduce: S3IO_CORPUS='%s' go test -run 'TestCorpus' -v ./s3io/internal/decode/",
				v.orig, v.key, v.n, v.s3ioErr, v.pipe, v.verdict, v.orig)
		}
	}
	if len(c.limited) > 0 {
		slices.Sort(c.limited)
		fmt.Fprintf(&b, "\nstopped at the record limit (ErrRecordTooLarge) in a file above it (no violation):\n   %s", strings.Join(c.limited, "\n   "))
	}
	if len(c.known) > 0 {
		slices.Sort(c.known)
		fmt.Fprintf(&b, "\nread by s3io where the reference refuses, known and bounded (no violation):\n   %s", strings.Join(c.known, "\n   "))
	}
	if len(c.unchecked) > 0 {
		slices.Sort(c.unchecked)
		fmt.Fprintf(&b, "\nread by s3io, unchecked: the reference here does not decode them (no violation):\n   %s", strings.Join(c.unchecked, "\n   "))
	}
	if len(c.overRefused) > 0 {
		b.WriteString("\nrefused by s3io, read by the reference (no violation), by s3io's error:")
		for _, reason := range slices.Sorted(maps.Keys(c.overRefused)) {
			fs := c.overRefused[reason]
			slices.Sort(fs)
			fmt.Fprintf(&b, "\n   %s: %d reads: %s", reason, len(fs), strings.Join(fs, ", "))
		}
	}
	t.Log(b.String())
}
