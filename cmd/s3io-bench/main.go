// Command s3io-bench measures how fast s3io reads an S3 prefix end to end, against a local
// versitygw S3 server it starts itself, beside the reads a user would compare it with: a
// plain aws-sdk-go-v2 loop (1, 2 or 32 GETs in flight; two readers on a 2-core machine is
// the limit a pipeline can approach on loopback) and Beam's own textio over Beam's S3
// filesystem; and beside Beam's per-element floor (the same records emitted from memory).
//
//	go run ./cmd/s3io-bench                                  # 2 GiB per format, 5 rounds
//	go run ./cmd/s3io-bench --size 256MiB --rounds 1         # a quick check
//	go run ./cmd/s3io-bench --big --variants s3io,loop1      # adds the 2 GiB-object memory check
//	go run ./cmd/s3io-bench --shape --small                  # through a proxy shaped like S3
//
// Loopback has no first-byte latency and no per-connection bandwidth cap; real S3 has both.
// --shape puts a proxy (internal/netshape) between the readers and the server that waits
// --latency before each request and paces each response to --bandwidth, and compares s3io
// through it with the loop at 1, 2 and 32 GETs in flight, with s3io through the unshaped
// proxy and with s3io on loopback. --small adds a prefix of many small objects, where
// latency dominates.
//
// It generates a deterministic NDJSON dataset once (plain, gzip and zstd copies of the same
// records, under prefixes plain/, gzip/ and zstd/) into a persistent data directory that
// also holds the server's files, so a re-run with the same flags skips generation and upload.
// Each measured run is a fresh child process (this program, re-executed with a hidden
// subcommand), so its wall time, CPU time and peak RSS are its own. Runs alternate over
// formats and variants for --rounds rounds, and the report gives medians.
//
// Each child's counted records and bytes are compared with what was generated: textio reads
// a .gz object only up to its compressed size and has no zstd, and the table says so loudly.
package main

import (
	"context"
	"debug/buildinfo"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spate-io/beam-s3/internal/netshape"
	"github.com/spate-io/beam-s3/internal/versitygw"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == childCommand {
		os.Exit(childMain(os.Args[2:]))
	}
	os.Exit(parentMain(os.Args[1:]))
}

// options are the parent's flags.
type options struct {
	size, objectSize, bigSize byteSize
	recordSize                int
	rounds                    int
	variants, formats         []string
	big                       bool
	dataDir                   string
	versitygw                 string
	port                      int
	timeout                   time.Duration
	out                       string
	addHostsEntry             bool
	virtualDomain             string
	cpuprofileDir             string
	textioChecksums           bool
	retryLoaded               int
	shape                     bool
	latency                   time.Duration
	bandwidth                 byteSize
	small                     bool
	smallCount                int
	smallSize                 byteSize
}

func parseOptions(args []string) (*options, error) {
	o := &options{size: 2 << 30, objectSize: 16 << 20, bigSize: 2 << 30, bandwidth: netshape.DefaultBytesPerSecond, smallSize: 64 << 10}
	fs := flag.NewFlagSet("s3io-bench", flag.ContinueOnError)
	fs.Var(&o.size, "size", "decompressed bytes per format (accepts 256MiB, 2GiB, 1.5GB, ...)")
	fs.Var(&o.objectSize, "object-size", "decompressed bytes per object")
	fs.IntVar(&o.recordSize, "record-size", 213, "average NDJSON record size in bytes, newline included (records vary by ±16)")
	fs.IntVar(&o.rounds, "rounds", 5, "rounds: every selected format × variant runs once per round; the report gives medians")
	variants := fs.String("variants", "", fmt.Sprintf("variants to run: loop1, loop2, loop32 (the plain SDK loop with 1, 2 or 32 GETs in flight), s3io, textio, "+
		"floor (Beam's per-element floor), idle; with --shape also s3io-unshaped, s3io-direct (default %s; with --shape %s)",
		strings.Join(defaultVariants, ","), strings.Join(shapeVariants, ",")))
	formats := fs.String("formats", strings.Join(allFormats, ","), "formats to read: plain, gzip, zstd (empty with --big: only the memory check)")
	fs.BoolVar(&o.big, "big", false, "also read big/, ONE --big-size plain object, with s3io and loop1, and an idle s3io pipeline, to compare peak RSS")
	fs.Var(&o.bigSize, "big-size", "size of the single object under big/ (with --big)")
	fs.StringVar(&o.dataDir, "data-dir", defaultDataDir(), "persistent directory for the dataset manifest, the S3 server's files, child logs and results")
	fs.StringVar(&o.versitygw, "versitygw", "", "versitygw binary (default: $VERSITYGW, then PATH, then .cache/bin/versitygw)")
	fs.IntVar(&o.port, "port", 0, "loopback port for the S3 server (0: a free one)")
	fs.DurationVar(&o.timeout, "timeout", 10*time.Minute, "limit for one child run; a run that exceeds it is killed and reported as failed")
	fs.StringVar(&o.out, "out", "", "also write the report as Markdown to this file")
	fs.BoolVar(&o.addHostsEntry, "add-hosts-entry", true, "append \"127.0.0.1 BUCKET.<virtual-domain>\" to /etc/hosts when missing (textio needs it)")
	fs.StringVar(&o.virtualDomain, "virtual-domain", "s3.local", "domain under which the server answers virtual-hosted requests (textio)")
	fs.StringVar(&o.cpuprofileDir, "cpuprofile", "", "write a CPU profile of every child run into this directory")
	fs.IntVar(&o.retryLoaded, "retry-loaded", 2, "run a job again, up to this many times, when other processes took more than a fifth of a core during it (its numbers are not the machine's)")
	fs.BoolVar(&o.textioChecksums, "textio-checksums", false, "let textio's S3 client validate response checksums (its SDK default); off matches the loop and s3io")
	fs.BoolVar(&o.shape, "shape", false, "read through a proxy that adds --latency before each request and paces each response to --bandwidth, as S3 over a network")
	fs.DurationVar(&o.latency, "latency", netshape.DefaultLatency, "with --shape: wait before forwarding each request (first-byte latency)")
	fs.Var(&o.bandwidth, "bandwidth", "with --shape: bytes per second of each response (per connection; accepts 90MB, 100MiB, ...)")
	fs.BoolVar(&o.small, "small", false, "also read small/: --small-count plain objects of --small-size each, with s3io and the loops")
	fs.IntVar(&o.smallCount, "small-count", 4096, "objects under small/ (with --small)")
	fs.Var(&o.smallSize, "small-size", "decompressed bytes per object under small/ (with --small)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *variants == "" {
		*variants = strings.Join(map[bool][]string{false: defaultVariants, true: shapeVariants}[o.shape], ",")
	}
	var err error
	if o.variants, err = parseList("variant", *variants, knownVariants); err != nil {
		return nil, err
	}
	if o.formats, err = parseList("format", *formats, allFormats); err != nil {
		return nil, err
	}
	switch {
	case o.size <= 0 || o.objectSize <= 0 || o.bigSize <= 0:
		return nil, errors.New("--size, --object-size and --big-size must be positive")
	case o.recordSize < 120:
		return nil, errors.New("--record-size must be at least 120: the fixed fields of a record take about 105 bytes")
	case int64(o.objectSize) < int64(o.recordSize)*2:
		return nil, errors.New("--object-size must hold at least two records")
	case len(o.formats) == 0 && !o.big && !o.small:
		return nil, errors.New("--formats is empty and --big and --small are off: nothing to read")
	case len(o.variants) == 0 && (len(o.formats) > 0 || o.small):
		return nil, errors.New("--variants names no variant: nothing to run on --formats")
	case o.small && (o.smallCount < 1 || int64(o.smallSize) < int64(o.recordSize)*2):
		return nil, errors.New("--small-count must be positive and --small-size must hold at least two records")
	case o.shape && (o.latency < 0 || o.bandwidth <= 0):
		return nil, errors.New("--latency must not be negative and --bandwidth must be positive")
	case o.shape && slices.Contains(o.variants, variantTextio):
		return nil, errors.New("textio cannot run with --shape: it reaches the server virtual-hosted, not through the proxy")
	case !o.shape && (slices.Contains(o.variants, variantS3ioUnshaped) || slices.Contains(o.variants, variantS3ioDirect)):
		return nil, errors.New("s3io-unshaped and s3io-direct compare with the shaped proxy: they need --shape")
	case o.rounds < 1:
		return nil, errors.New("--rounds must be at least 1")
	case o.timeout <= 0:
		return nil, errors.New("--timeout must be positive")
	case o.retryLoaded < 0:
		return nil, errors.New("--retry-loaded must not be negative")
	}
	return o, nil
}

// runsTextio reports whether any run reads with textio, which needs the hosts entry.
func (o *options) runsTextio() bool {
	return len(o.formats) > 0 && slices.Contains(o.variants, variantTextio)
}

// prefixes are what the main runs read, in table order: the formats, small/ with --small,
// and the floor's records in memory.
func (o *options) prefixes() []string {
	out := slices.Clone(o.formats)
	if o.small {
		out = append(out, prefixSmall)
	}
	if len(o.formats) > 0 && slices.Contains(o.variants, variantFloor) {
		out = append(out, prefixMemory)
	}
	return out
}

// reads reports whether variant runs on prefix among the main runs: the floor only on its
// records in memory, small/ only with s3io and the loops; idle runs apart (see jobs).
func reads(prefix, variant string) bool {
	switch {
	case prefix == prefixMemory || variant == variantFloor:
		return prefix == prefixMemory && variant == variantFloor
	case prefix == prefixSmall:
		return variant == variantS3io || loopReaders[variant] > 0
	}
	return variant != variantIdle
}

func parseList(what, s string, allowed []string) ([]string, error) {
	var out []string
	for _, v := range strings.Split(s, ",") {
		v = strings.TrimSpace(v)
		if v == "" {
			continue
		}
		if !slices.Contains(allowed, v) {
			return nil, fmt.Errorf("unknown %s %q; choose from %s", what, v, strings.Join(allowed, ", "))
		}
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out, nil
}

// defaultDataDir is under the user's cache directory, so the generated data survives reboots
// (unlike a temporary directory) yet is plainly disposable.
func defaultDataDir() string {
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "s3io-bench")
	}
	return filepath.Join(os.TempDir(), "s3io-bench")
}

func parentMain(args []string) int {
	o, err := parseOptions(args)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "s3io-bench: %v\n", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := bench(ctx, o); err != nil {
		fmt.Fprintf(os.Stderr, "s3io-bench: %v\n", err)
		return 1
	}
	return 0
}

// benchRun is everything the report needs about one invocation.
type benchRun struct {
	opts        *options
	started     time.Time
	manifest    *manifest
	generated   []string // prefixes generated (rather than reused) in this invocation
	genTime     time.Duration
	runsTime    time.Duration
	results     []runResult
	notes       []string // things done to the machine, such as the hosts entry
	gwVersion   string
	textioEnv   []string
	resultsLog  string
	repeated    int    // runs discarded and repeated because of foreign load
	sourceState string // which s3io source the binary was built from, as far as git knows
	loadAvg     string
}

func bench(ctx context.Context, o *options) error {
	b := &benchRun{opts: o, started: time.Now()}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find this program to re-execute it for each run: %w", err)
	}
	if err := os.MkdirAll(o.dataDir, 0o755); err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	bin := o.versitygw
	if bin == "" {
		if bin, err = versitygw.FindBinary(); err != nil {
			return err
		}
	}
	b.gwVersion = binaryVersion(bin)
	b.sourceState = sourceState()

	params := datasetParams{Generator: generatorVersion, Size: int64(o.size), ObjectSize: int64(o.objectSize), RecordSize: o.recordSize}
	if b.manifest, err = loadManifest(o.dataDir, params); err != nil {
		return err
	}
	bucket := b.manifest.Bucket

	if o.runsTextio() {
		host := bucket + "." + o.virtualDomain
		added, err := ensureHostsEntry(hostsFile, host, o.addHostsEntry)
		switch {
		case err != nil:
			// textio runs will fail and say why; the other variants still run.
			fmt.Fprintf(os.Stderr, "warning: %v\n", err)
			b.notes = append(b.notes, "textio: "+err.Error())
		case added:
			msg := fmt.Sprintf("added \"127.0.0.1 %s\" to %s (Beam's S3 filesystem addresses the bucket virtual-hosted style)", host, hostsFile)
			fmt.Fprintln(os.Stderr, msg)
			b.notes = append(b.notes, msg)
		}
	}

	// --quiet: the server would otherwise log every request, costing CPU on the same two
	// cores the runs use.
	gw, err := versitygw.Launch(bin, filepath.Join(o.dataDir, "gw"), o.port, "--virtual-domain", o.virtualDomain, "--quiet")
	if err != nil {
		return err
	}
	defer gw.Close()
	fmt.Fprintf(os.Stderr, "versitygw %s serving %s on %s (pid %d)\n", b.gwVersion, gw.Dir, gw.URL, gw.Pid())

	if err := b.prepareData(ctx, gw); err != nil {
		return err
	}
	var proxy *netshape.Proxy
	if o.shape {
		// In this process: its CPU time is counted with the server's (see runner.run).
		shape := netshape.Shape{Latency: o.latency, BytesPerSecond: float64(o.bandwidth)}
		if shape.Latency == 0 {
			shape.Latency = -1 // none, rather than netshape's default
		}
		if proxy, err = netshape.New(gw.URL, shape); err != nil {
			return fmt.Errorf("shaping proxy: %w", err)
		}
		defer proxy.Close()
		fmt.Fprintf(os.Stderr, "shaping proxy on %s: %v before each request, %.0f MB/s per response\n", proxy.URL, o.latency, float64(o.bandwidth)/1e6)
	}

	// A directory per invocation, unique even for two started in the same second.
	if err := os.MkdirAll(filepath.Join(o.dataDir, "logs"), 0o755); err != nil {
		return fmt.Errorf("log directory: %w", err)
	}
	logDir, err := os.MkdirTemp(filepath.Join(o.dataDir, "logs"), b.started.Format("20060102-150405-*"))
	if err != nil {
		return fmt.Errorf("log directory: %w", err)
	}
	if o.cpuprofileDir != "" {
		if err := os.MkdirAll(o.cpuprofileDir, 0o755); err != nil {
			return fmt.Errorf("--cpuprofile directory: %w", err)
		}
	}
	b.resultsLog = filepath.Join(logDir, "results.jsonl")
	resultsFile, err := os.Create(b.resultsLog)
	if err != nil {
		return fmt.Errorf("per-run results file: %w", err)
	}
	defer resultsFile.Close()

	r := &runner{exe: exe, gw: gw, proxy: proxy, bucket: bucket, opts: o, logDir: logDir}
	b.textioEnv = r.textioEnv()
	jobs := b.jobs()
	b.loadAvg = loadAverage()
	runsStart := time.Now()
	for i, j := range jobs {
		if ctx.Err() != nil {
			break
		}
		var res runResult
		for attempt := 1; ; attempt++ {
			res = r.run(ctx, j)
			res.Attempt = attempt
			if !res.loaded() || attempt > o.retryLoaded || ctx.Err() != nil {
				break
			}
			// Discarded, but kept in the per-run JSON: how often the machine was busy is
			// itself worth knowing.
			res.Discarded = true
			b.repeated++
			line, _ := json.Marshal(res)
			resultsFile.Write(append(line, '\n'))
			fmt.Fprintf(os.Stderr, "[%3d/%d] round %d %-6s %-6s other processes took %.2f CPU s in %.2f s: running it again\n",
				i+1, len(jobs), j.round, j.prefix, j.variant, res.OtherCPUSeconds, res.WallSeconds)
		}
		b.results = append(b.results, res)
		line, _ := json.Marshal(res)
		resultsFile.Write(append(line, '\n'))
		fmt.Fprintf(os.Stderr, "[%3d/%d] round %d %-6s %-6s %s\n", i+1, len(jobs), j.round, j.prefix, j.variant, b.progressLine(res))
		select {
		case <-gw.Exited():
			return fmt.Errorf("versitygw exited during the runs:\n%s", gw.Logs())
		default:
		}
	}
	b.runsTime = time.Since(runsStart)
	// An interrupted benchmark still reports the runs it finished: they took long enough.
	if err := ctx.Err(); err != nil {
		b.notes = append(b.notes, fmt.Sprintf("**interrupted after %d of %d runs**: the medians cover the finished runs only", len(b.results), len(jobs)))
	}
	report := b.report()
	fmt.Print(report)
	if o.out != "" {
		if err := os.WriteFile(o.out, []byte(report), 0o644); err != nil {
			return fmt.Errorf("write --out: %w", err)
		}
		fmt.Fprintf(os.Stderr, "report written to %s\n", o.out)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("interrupted after %d of %d runs: %w", len(b.results), len(jobs), err)
	}
	return nil
}

// prepareData makes sure the server holds every prefix the runs read, generating and
// uploading only what is missing or differs from the manifest.
func (b *benchRun) prepareData(ctx context.Context, gw *versitygw.Process) error {
	o, m := b.opts, b.manifest
	client := gw.Client()
	if err := ensureBucket(ctx, client, m.Bucket); err != nil {
		return err
	}
	var missing []string
	for _, f := range o.formats {
		ok, err := upToDate(ctx, client, m, f, int64(o.size), objectCount(int64(o.size), int64(o.objectSize)))
		if err != nil {
			return err
		}
		if !ok {
			missing = append(missing, f)
		}
	}
	start := time.Now()
	if len(missing) > 0 {
		fmt.Fprintf(os.Stderr, "generating %s of NDJSON per format (%s objects, ~%d-byte records) for %s into s3://%s\n",
			o.size, o.objectSize, o.recordSize, formatList(missing), m.Bucket)
		if err := generate(ctx, client, m, missing, int64(o.size), int64(o.objectSize), os.Stderr); err != nil {
			return fmt.Errorf("generate %s: %w", formatList(missing), err)
		}
		if err := m.save(o.dataDir); err != nil {
			return err
		}
		b.generated = append(b.generated, missing...)
	}
	if o.small {
		total := int64(o.smallCount) * int64(o.smallSize)
		ok, err := upToDate(ctx, client, m, prefixSmall, total, o.smallCount)
		if err != nil {
			return err
		}
		if !ok {
			fmt.Fprintf(os.Stderr, "generating %d plain NDJSON objects of %s under small/\n", o.smallCount, o.smallSize)
			if err := generate(ctx, client, m, []string{prefixSmall}, total, int64(o.smallSize), os.Stderr); err != nil {
				return fmt.Errorf("generate small/: %w", err)
			}
			if err := m.save(o.dataDir); err != nil {
				return err
			}
			b.generated = append(b.generated, prefixSmall)
		}
	}
	if o.big {
		ok, err := upToDate(ctx, client, m, prefixBig, int64(o.bigSize), 1)
		if err != nil {
			return err
		}
		if !ok {
			fmt.Fprintf(os.Stderr, "generating one %s plain NDJSON object under big/\n", o.bigSize)
			if err := generateBig(ctx, client, m, int64(o.bigSize), filepath.Join(o.dataDir, "tmp")); err != nil {
				return fmt.Errorf("generate big/: %w", err)
			}
			if err := m.save(o.dataDir); err != nil {
				return err
			}
			b.generated = append(b.generated, prefixBig)
		}
	}
	b.genTime = time.Since(start)
	if len(b.generated) > 0 {
		fmt.Fprintf(os.Stderr, "generated and uploaded %s in %.1fs\n", formatList(b.generated), b.genTime.Seconds())
	} else {
		fmt.Fprintf(os.Stderr, "reusing the dataset in %s (manifest %s)\n", o.dataDir, manifestPath(o.dataDir, m.Bucket))
	}
	return nil
}

// job is one child run.
type job struct {
	round   int
	prefix  string // a format, small, memory, big or empty
	variant string
}

// jobs lists the runs round by round. Each round visits every prefix and variant once, and
// the order rotates from round to round, so that no variant always runs first, or right
// after the same neighbour, while caches and CPU frequency drift.
func (b *benchRun) jobs() []job {
	o := b.opts
	prefixes := o.prefixes()
	var out []job
	for r := 0; r < o.rounds; r++ {
		for pi := range prefixes {
			p := prefixes[(pi+r)%len(prefixes)]
			for vi := range o.variants {
				if v := o.variants[(vi+r)%len(o.variants)]; reads(p, v) {
					out = append(out, job{round: r + 1, prefix: p, variant: v})
				}
			}
		}
		var extra []job
		if o.big {
			extra = []job{{r + 1, prefixBig, variantLoop1}, {r + 1, prefixBig, variantS3io}, {r + 1, prefixEmpty, variantIdle}}
		} else if slices.Contains(o.variants, variantIdle) {
			extra = []job{{r + 1, prefixEmpty, variantIdle}}
		}
		for i := range extra {
			out = append(out, extra[(i+r)%len(extra)])
		}
	}
	return out
}

// binaryVersion names the module version a Go binary was built from, such as versitygw's
// v1.8.0: a `go install pkg@version` build answers --version with "git" only.
func binaryVersion(bin string) string {
	bi, err := buildinfo.ReadFile(bin)
	if err != nil {
		return "(unknown version)"
	}
	return bi.Main.Version
}

func formatList(xs []string) string { return strings.Join(xs, ", ") }

// sourceState describes the s3io source in the repository this program was built from: the
// commit and any uncommitted change under s3io/. The library is being changed while it is
// measured, so a table must say which version it measured. It reads the working tree when
// the benchmark starts, which is what `go run` has just compiled.
func sourceState() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "unknown"
	}
	repo := filepath.Join(filepath.Dir(file), "..", "..")
	rev, err := exec.Command("git", "-C", repo, "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "unknown (not a git checkout)"
	}
	state := "commit " + strings.TrimSpace(string(rev))
	dirty, err := exec.Command("git", "-C", repo, "status", "--porcelain", "--", "s3io").Output()
	if err != nil {
		return state
	}
	// Porcelain lines are "XY path": two status columns, a space, the path.
	var files []string
	for _, l := range strings.Split(string(dirty), "\n") {
		if len(l) > 3 {
			files = append(files, l[3:])
		}
	}
	if len(files) == 0 {
		return state + ", s3io/ unmodified"
	}
	return state + " with uncommitted changes in " + strings.Join(files, ", ")
}
