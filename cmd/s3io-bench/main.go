// Command s3io-bench measures how fast s3io reads an S3 prefix end to end, against a
// versitygw S3 server it starts on loopback, beside what a user would compare it with: a
// plain aws-sdk-go-v2 loop with 1, 2 or 32 GETs in flight (two readers on a 2-core machine
// is the limit a pipeline can approach on loopback), Beam's own textio over Beam's S3
// filesystem, and Beam's per-element floor (the same records emitted from memory). It
// produces the tables of the README's Performance section:
//
//	go run ./cmd/s3io-bench                              # loopback: 2 GiB per format, 5 rounds
//	go run ./cmd/s3io-bench --big --formats=             # one 2 GiB object: peak RSS above an idle pipeline
//	go run ./cmd/s3io-bench --shape --small --rounds 3   # through a proxy shaped like S3, plus small objects
//	go run ./cmd/s3io-bench --formats plain,gzip,zstd --variants s3io --rounds 1
//	go run ./cmd/s3io-bench --size 32MiB --object-size 4MiB --rounds 1   # a quick check, as CI runs it
//	go run ./cmd/s3io-bench --formats plain --codecs all,pbzip2 --variants s3io,lib --rounds 3   # per-codec rows
//	go run ./cmd/s3io-bench --size 16MiB --formats plain --codecs all --codec-size 16MiB --object-size 4MiB \
//		--rounds 1 --variants s3io,lib --retry-loaded 0   # the codec check CI runs (about a minute)
//
// --shape puts a proxy (internal/netshape) between the readers and the server that waits
// 30 ms before each request and paces each response to 90 MB/s, and compares s3io through
// it with the loop at 1, 2 and 32 GETs in flight, with s3io through the unshaped proxy
// (s3io-unshaped) and with s3io straight to the server (s3io-direct); loop2-direct is loop2
// straight to the server, for the two-core floor. s3io-verify is s3io with VerifyChecksums
// (through the proxy, shaped with --shape): its rows give its speed against s3io's and the
// CPU seconds per GiB the verification adds (versitygw stores a full-object CRC64NVME
// for each object, as S3 does for one uploaded without a checksum). --small adds 4,096 plain objects of
// 64 KiB, where request latency dominates.
//
// The report ends with issue 20's rows, ratios of medians measured in the one run: the
// two-core floor per format, (beam.Run's CPU time in the floor run + the loopback loop2's
// CPU time + the server's during it) / 2, and s3io's loopback read against it, beside the
// floor without the server's CPU time and the cores s3io kept busy; with --shape,
// s3io shaped ÷ s3io-unshaped per format and on small/, and s3io ÷ loop32 on small/; with an
// s3io-batches variant, its records/s against s3io's and loop2's; every s3io variant's
// highest peak RSS. Each row has its target; a row missing a variant says which.
//
// The dataset is deterministic NDJSON (~213-byte records; plain, gzip and zstd copies of the
// same records under plain/, gzip/ and zstd/), generated once into --data-dir, which also
// holds the server's files, so a re-run with the same sizes skips generation. Each measured
// run is a fresh child process (this program re-executed as `s3io-bench run JOB`), so its
// wall time, CPU time and peak RSS are its own; runs alternate over formats and variants for
// --rounds rounds, and the report gives medians. Every run's record and byte counts are
// checked against what was generated: the check column says "ok" or MISMATCH.
//
// --codecs NAME,... adds a prefix codec-NAME/ per codec, holding the first --codec-size
// bytes (default 256 MiB) of plain/'s records in --object-size objects, each object written
// by the codec's command-line tool at its default level, with the extension s3io's auto mode
// detects it by: bzip2 (`bzip2 -c`, .bz2), pbzip2 (`pbzip2 -c`: one bzip2 stream per 900 kB
// block, concatenated), lbzip2 (`lbzip2 -c`: one stream), xz (`xz -c -T1`, .xz), lz4 (`lz4
// -c`, .lz4), snappy (no tool writes Snappy framing: klauspost/compress/s2's
// s2.NewWriter(w, s2.WriterSnappyCompat()), .sz), zlib (`pigz -z -c`, .zz), deflate (raw
// deflate from python3's zlib.compressobj(6, DEFLATED, -15), .deflate), brotli (`brotli -c
// -q 9`, .br: the default quality 11 writes under 1 MB/s), gzip (`gzip -c`), zstd
// (`zstd -c`) and plain (uncompressed). "all" is bzip2,xz,lz4,snappy,zlib,deflate,brotli.
// The tools run GOMAXPROCS objects at a time, once: the prefixes are kept in --data-dir like
// the rest. Codec prefixes are read by s3io and by the lib variant, the codec library's own
// decode loop (the decoder s3io uses) without Beam: loop2's SDK GET loop over the same
// objects from the same server, two objects fetched and decoded at once, newlines counted.
// The Codecs table gives per codec s3io MB/s, lib MB/s and s3io ÷ lib beside the target
// s3io ≥ 0.8 × lib (bzip2 family, xz), and for lz4 and snappy s3io ÷ s3io's read of the same
// records uncompressed beside the target ≥ 0.8 (plain/ when --size equals --codec-size and
// plain is in --formats, else a codec-plain/ copy added for it). Without --variants, lib
// joins the default variants when --codecs is set; lib needs --codecs.
//
// Flags (-h lists them with their defaults): --size and --object-size (the dataset),
// --formats, --codecs, --codec-size and --variants (what runs), --rounds, --shape, --small
// and --small-count, --big, --data-dir, --cpuprofile DIR (a CPU profile of every run),
// --retry-loaded N (repeat a run that other processes disturbed), --warmup=false (no
// unmeasured run of the first job before the measured ones), --read-buffer SIZE and
// --worker-buffer SIZE (s3io's Config.ReadBufferBytes and WorkerBufferBytes, to measure what
// more memory buys), --add-hosts-entry (textio
// needs BUCKET.s3.local to resolve to 127.0.0.1 and may add that line to /etc/hosts).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Fixed parameters of the dataset and the runs: the README's tables use these values.
const (
	recordSize    = 213      // average NDJSON record, newline included (records vary by ±16)
	bigSize       = 2 << 30  // the single object under big/
	smallSize     = 64 << 10 // each object under small/
	childTimeout  = 10 * time.Minute
	virtualDomain = "s3.local" // textio reaches the bucket as BUCKET.s3.local (virtual-hosted)
)

// The variants. loopN is the plain SDK loop with N GETs in flight. s3io-unshaped and
// s3io-direct are s3io through the proxy with shaping off, and straight to the server: the
// parent picks the endpoint, the child runs them as s3io.
const (
	variantLoop1        = "loop1"
	variantLoop2        = "loop2"
	variantLoop32       = "loop32"
	variantS3io         = "s3io"
	variantS3ioUnshaped = "s3io-unshaped"
	variantS3ioDirect   = "s3io-direct"
	variantS3ioVerify   = "s3io-verify"  // s3io with Config.VerifyChecksums, through the proxy (shaped with --shape)
	variantLoop2Direct  = "loop2-direct" // loop2 straight to the server with --shape: the two-core floor's loop on loopback
	variantTextio       = "textio"
	variantFloor        = "floor" // the same records emitted from memory: Beam's per-element floor
	variantIdle         = "idle"  // an s3io pipeline over an empty prefix (--big): the baseline process
)

var (
	defaultVariants = []string{variantLoop1, variantLoop2, variantS3io, variantTextio, variantFloor}
	shapeVariants   = []string{variantS3io, variantLoop1, variantLoop2, variantLoop32, variantS3ioUnshaped, variantS3ioDirect, variantFloor, variantLoop2Direct}
	knownVariants   = []string{variantLoop1, variantLoop2, variantLoop32, variantS3io, variantS3ioUnshaped, variantS3ioDirect, variantTextio, variantFloor, variantLib, variantLoop2Direct, variantS3ioBatches, variantS3ioVerify}
	loopReaders     = map[string]int{variantLoop1: 1, variantLoop2: 2, variantLoop32: 32, variantLoop2Direct: 2}
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == childCommand {
		os.Exit(childMain(os.Args[2:]))
	}
	o, err := parseOptions(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "s3io-bench: %v\n", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := bench(ctx, o); err != nil {
		fmt.Fprintf(os.Stderr, "s3io-bench: %v\n", err)
		os.Exit(1)
	}
}

// options are the parent's flags.
type options struct {
	size, objectSize  int64
	rounds            int
	variants, formats []string
	codecs            []string // --codecs, "all" expanded
	codecSize         int64
	big, shape, small bool
	smallCount        int
	dataDir           string
	addHostsEntry     bool
	cpuprofileDir     string
	retryLoaded       int
	warmup            bool
	readBuffer        int64 // --read-buffer: s3io's Config.ReadBufferBytes; 0 = its default
	workerBuffer      int64 // --worker-buffer: s3io's Config.WorkerBufferBytes; 0 = its default
	splitTarget       int64 // --split-target: s3io's Config.SplitTargetBytes; 0 = its default
}

func parseOptions(args []string) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("s3io-bench", flag.ContinueOnError)
	size := fs.String("size", "2GiB", "decompressed bytes per format (256MiB, 2GiB, 1.5GB, ...)")
	objectSize := fs.String("object-size", "16MiB", "decompressed bytes per object")
	fs.IntVar(&o.rounds, "rounds", 5, "every selected format × variant runs once per round; the report gives medians")
	variants := fs.String("variants", "", fmt.Sprintf("variants: %s (default %s; with --shape %s)",
		strings.Join(knownVariants, ", "), strings.Join(defaultVariants, ","), strings.Join(shapeVariants, ",")))
	formats := fs.String("formats", "plain,gzip,zstd", "formats to read: plain, gzip, zstd (empty with --big: only the memory check)")
	codecList := fs.String("codecs", "", fmt.Sprintf("also read a prefix codec-NAME/ per codec named, its objects written by the codec's command-line tool: %s, or all (= %s)",
		strings.Join(codecNames(), ", "), strings.Join(codecAll, ",")))
	codecSize := fs.String("codec-size", "256MiB", "decompressed bytes per codec prefix (--codecs), in --object-size objects")
	readBuffer := fs.String("read-buffer", "", "s3io's Config.ReadBufferBytes for the s3io variants (empty: its default)")
	workerBuffer := fs.String("worker-buffer", "", "s3io's Config.WorkerBufferBytes for the s3io variants (empty: its default)")
	splitTarget := fs.String("split-target", "", "s3io's Config.SplitTargetBytes for the s3io variants (empty: its default); objects larger are read as segments")
	fs.BoolVar(&o.big, "big", false, "also read one 2 GiB plain object under big/ with s3io and loop1, and run an idle s3io pipeline, to compare peak RSS")
	fs.BoolVar(&o.shape, "shape", false, "read through a proxy that waits 30 ms before each request and paces each response to 90 MB/s, as S3 over a network")
	fs.BoolVar(&o.small, "small", false, "also read small/: --small-count plain objects of 64 KiB, with s3io and the loops")
	fs.IntVar(&o.smallCount, "small-count", 4096, "objects under small/ (with --small)")
	fs.StringVar(&o.dataDir, "data-dir", defaultDataDir(), "persistent directory for the dataset, the S3 server's files and child logs")
	fs.BoolVar(&o.addHostsEntry, "add-hosts-entry", true, "append \"127.0.0.1 BUCKET."+virtualDomain+"\" to /etc/hosts when missing (textio needs it)")
	fs.StringVar(&o.cpuprofileDir, "cpuprofile", "", "write a CPU profile of every child run into this directory")
	fs.IntVar(&o.retryLoaded, "retry-loaded", 2, "run a job again, up to this many times, when other processes took more than a fifth of a core during it")
	fs.BoolVar(&o.warmup, "warmup", true, "run the first job once, unmeasured, before the measured runs: a freshly started server answers its first requests slower")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	var err1, err2, err3, err4, err5, err6 error
	o.codecs, err5 = parseCodecs(*codecList)
	o.codecSize, err6 = parseSize(*codecSize)
	if *variants == "" {
		*variants = strings.Join(map[bool][]string{false: defaultVariants, true: shapeVariants}[o.shape], ",")
		if len(o.codecs) > 0 {
			*variants += "," + variantLib
		}
	}
	o.size, err1 = parseSize(*size)
	o.objectSize, err2 = parseSize(*objectSize)
	for _, f := range []struct {
		name string
		val  string
		dst  *int64
	}{{"read-buffer", *readBuffer, &o.readBuffer}, {"worker-buffer", *workerBuffer, &o.workerBuffer}, {"split-target", *splitTarget, &o.splitTarget}} {
		if f.val == "" {
			continue // the Config's default
		}
		var err error
		if *f.dst, err = parseSize(f.val); err != nil {
			return nil, fmt.Errorf("--%s: %w", f.name, err)
		}
	}
	o.variants, err3 = parseList("variant", *variants, knownVariants)
	o.formats, err4 = parseList("format", *formats, []string{formatPlain, formatGzip, formatZstd})
	if err := errors.Join(err1, err2, err3, err4, err5, err6); err != nil {
		return nil, err
	}
	return o, o.check()
}

func (o *options) check() error {
	switch {
	case o.size <= 0 || o.objectSize < 2*recordSize:
		return errors.New("--size must be positive and --object-size must hold at least two records")
	case len(o.formats) == 0 && len(o.codecs) == 0 && !o.big && !o.small:
		return errors.New("--formats and --codecs are empty and --big and --small are off: nothing to read")
	case len(o.variants) == 0 && (len(o.formats) > 0 || len(o.codecs) > 0 || o.small):
		return errors.New("--variants names no variant: nothing to run on --formats")
	case len(o.codecs) > 0 && o.codecSize <= 0:
		return errors.New("--codec-size must be positive")
	case slices.Contains(o.variants, variantLib) && len(o.codecs) == 0:
		return errors.New("the lib variant reads only the codec prefixes: it needs --codecs")
	case o.small && o.smallCount < 1:
		return errors.New("--small-count must be positive")
	case o.shape && slices.Contains(o.variants, variantTextio):
		return errors.New("textio cannot run with --shape: it reaches the server virtual-hosted, not through the proxy")
	case !o.shape && (slices.Contains(o.variants, variantS3ioUnshaped) || slices.Contains(o.variants, variantS3ioDirect) || slices.Contains(o.variants, variantLoop2Direct)):
		return errors.New("s3io-unshaped, s3io-direct and loop2-direct compare with the shaped proxy: they need --shape")
	case o.rounds < 1 || o.retryLoaded < 0:
		return errors.New("--rounds must be at least 1 and --retry-loaded not negative")
	}
	return checkCodecTools(o.codecs)
}

// parseSize reads a size written for people: "2GiB", "256MiB", "1.5GB", "213". Binary
// suffixes are powers of 1024, decimal ones powers of 1000, a bare number is bytes.
func parseSize(s string) (int64, error) {
	t, mult := strings.TrimSpace(s), 1.0
	for _, u := range []struct {
		suffix string
		mult   float64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"B", 1}} {
		if len(t) > len(u.suffix) && strings.EqualFold(t[len(t)-len(u.suffix):], u.suffix) {
			t, mult = strings.TrimSpace(t[:len(t)-len(u.suffix)]), u.mult
			break
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("size %q is not a number of bytes such as 213, 16MiB, 2GiB or 1.5GB", s)
	}
	return int64(v * mult), nil
}

func parseList(what, s string, allowed []string) ([]string, error) {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v == "" || slices.Contains(out, v) {
			continue
		}
		if !slices.Contains(allowed, v) {
			return nil, fmt.Errorf("unknown %s %q; choose from %s", what, v, strings.Join(allowed, ", "))
		}
		out = append(out, v)
	}
	return out, nil
}

// defaultDataDir is under the user's cache directory: it survives reboots, yet is plainly
// disposable.
func defaultDataDir() string {
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "s3io-bench")
	}
	return filepath.Join(os.TempDir(), "s3io-bench")
}

// runsTextio reports whether any run reads with textio, which needs the hosts entry.
func (o *options) runsTextio() bool {
	return len(o.formats) > 0 && slices.Contains(o.variants, variantTextio)
}

// prefixes are what the main runs read, in table order: the formats, small/ with --small,
// and the floor's records in memory.
func (o *options) prefixes() []string {
	out := slices.Clone(o.formats)
	out = append(out, o.codecPrefixes()...)
	if o.small {
		out = append(out, prefixSmall)
	}
	if len(o.formats) > 0 && slices.Contains(o.variants, variantFloor) {
		out = append(out, prefixMemory)
	}
	return out
}

// reads reports whether variant runs on prefix among the main runs: the floor only on its
// records in memory, small/ only with s3io (shaped and unshaped) and the loops but
// loop2-direct, a codec prefix only with s3io and lib, and lib only on a codec prefix.
func reads(prefix, variant string) bool {
	isS3io := variant == variantS3io || variant == variantS3ioUnshaped || variant == variantS3ioDirect || variant == variantS3ioVerify
	switch {
	case codecOf(prefix) != nil:
		return isS3io || variant == variantLib || variant == variantS3ioBatches
	case variant == variantLib:
		return false
	case prefix == prefixMemory || variant == variantFloor:
		return prefix == prefixMemory && variant == variantFloor
	case prefix == prefixSmall:
		return variant == variantS3io || variant == variantS3ioUnshaped || (loopReaders[variant] > 0 && variant != variantLoop2Direct)
	}
	return true
}

// job is one child run.
type job struct {
	round   int
	prefix  string // a format, a codec prefix, small, memory, big or empty
	variant string
}

// jobs lists the runs round by round. Each round visits every prefix and variant once, in
// an order that rotates from round to round, so that no variant always runs first, or right
// after the same neighbour, while caches and CPU frequency drift.
func (o *options) jobs() []job {
	prefixes := o.prefixes()
	var out []job
	for r := 1; r <= o.rounds; r++ {
		for pi := range prefixes {
			p := prefixes[(pi+r-1)%len(prefixes)]
			for vi := range o.variants {
				if v := o.variants[(vi+r-1)%len(o.variants)]; reads(p, v) {
					out = append(out, job{r, p, v})
				}
			}
		}
		if o.big {
			extra := []job{{r, prefixBig, variantLoop1}, {r, prefixBig, variantS3io}, {r, prefixEmpty, variantIdle}}
			for i := range extra {
				out = append(out, extra[(i+r-1)%len(extra)])
			}
		}
	}
	return out
}
