package main

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"
)

// cell is the runs of one variant over one prefix.
type cell struct {
	prefix, variant string
	ok, failed      []runResult
	want            *prefixManifest // nil for the empty prefix: nothing expected
}

func (b *benchRun) cell(prefix, variant string) *cell {
	c := &cell{prefix: prefix, variant: variant, want: b.want(prefix)}
	for _, r := range b.results {
		if r.Prefix != prefix || r.Variant != variant {
			continue
		}
		if r.ok() {
			c.ok = append(c.ok, r)
		} else {
			c.failed = append(c.failed, r)
		}
	}
	return c
}

// want is what reading prefix must yield: nothing for the empty prefix, and for the floor's
// records in memory what every format holds.
func (b *benchRun) want(prefix string) *prefixManifest {
	switch {
	case prefix == prefixEmpty:
		return &prefixManifest{Prefix: prefixEmpty}
	case prefix == prefixMemory && len(b.opts.formats) > 0:
		return b.manifest.Prefixes[b.opts.formats[0]]
	}
	return b.manifest.Prefixes[prefix]
}

func (c *cell) ran() bool { return len(c.ok)+len(c.failed) > 0 }

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// stat collects one measure over the successful runs.
func (c *cell) stat(f func(r runResult) float64) (med, lo, hi float64) {
	var xs []float64
	for _, r := range c.ok {
		xs = append(xs, f(r))
	}
	if len(xs) == 0 {
		return 0, 0, 0
	}
	return median(xs), slices.Min(xs), slices.Max(xs)
}

// mbps is decompressed MB (10^6 bytes) per second of wall time, counting only the bytes the
// variant actually delivered.
func (c *cell) mbps() (med, lo, hi float64) {
	return c.stat(func(r runResult) float64 { return float64(r.Child.Bytes) / 1e6 / r.wall() })
}

// complete reports whether every successful run counted exactly the generated records and
// bytes.
func (c *cell) complete() bool {
	for _, r := range c.ok {
		if c.want == nil || r.Child.Records != c.want.Records || r.Child.Bytes != c.want.DecompressedBytes {
			return false
		}
	}
	return true
}

// countText is the records counted (one value, or the range over the runs) against the
// records generated.
func (c *cell) countText() string {
	if len(c.ok) == 0 {
		return "—"
	}
	lo, hi := c.ok[0].Child.Records, c.ok[0].Child.Records
	for _, r := range c.ok {
		lo, hi = min(lo, r.Child.Records), max(hi, r.Child.Records)
	}
	got := group(lo)
	if lo != hi {
		got = group(lo) + "…" + group(hi)
	}
	want := "?"
	if c.want != nil {
		want = group(c.want.Records)
	}
	return got + " / " + want
}

// checkText is "ok", or a loud MISMATCH saying how much was lost or duplicated.
func (c *cell) checkText() string {
	if len(c.ok) == 0 {
		return "—"
	}
	if c.complete() {
		return "ok"
	}
	if c.want == nil {
		return "**MISMATCH** (no manifest)"
	}
	worst := c.ok[0]
	for _, r := range c.ok {
		if abs(r.Child.Records-c.want.Records) > abs(worst.Child.Records-c.want.Records) {
			worst = r
		}
	}
	d := worst.Child.Records - c.want.Records
	switch {
	case d < 0:
		return fmt.Sprintf("**MISMATCH: %s records lost (%.1f%%)**", group(-d), 100*float64(-d)/float64(max(c.want.Records, 1)))
	case d > 0:
		return fmt.Sprintf("**MISMATCH: %s records too many**", group(d))
	}
	return fmt.Sprintf("**MISMATCH: %s bytes instead of %s**", group(worst.Child.Bytes), group(c.want.DecompressedBytes))
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// runsText is "5/5", with the failures' first reason when there are any.
func (c *cell) runsText() string {
	s := fmt.Sprintf("%d/%d", len(c.ok), len(c.ok)+len(c.failed))
	if len(c.failed) > 0 {
		s += " **FAILED: " + shorten(c.failed[0].Err, 120) + "**"
	}
	return s
}

// rootCause is the end of a Beam error chain: Beam wraps a DoFn's error in the bundle's
// whole execution plan, and the part after the last "caused by:" is what went wrong.
func rootCause(s string) string {
	if i := strings.LastIndex(s, "caused by:"); i >= 0 {
		return strings.TrimSpace(s[i+len("caused by:"):])
	}
	return s
}

// shorten makes an error fit a table cell: its root cause, on one line, at most n bytes.
func shorten(s string, n int) string {
	s = strings.Join(strings.Fields(rootCause(s)), " ")
	s = strings.ReplaceAll(s, "|", "/") // a pipe would end the Markdown cell
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// group writes n with thousands separators: record counts are read digit by digit when they
// disagree.
func group(n int64) string {
	s := strconv.FormatInt(abs(n), 10)
	var b strings.Builder
	if n < 0 {
		b.WriteByte('-')
	}
	for i, ch := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(ch)
	}
	return b.String()
}

func (b *benchRun) report() string {
	var w strings.Builder
	o := b.opts
	p := func(format string, args ...any) { fmt.Fprintf(&w, format, args...) }

	p("# s3io end-to-end read benchmark\n\n")
	p("- date: %s\n", b.started.Format(time.RFC3339))
	p("- command: `%s`\n", commandLine())
	p("- machine: %d CPUs (nproc), %s, %s RAM; GOMAXPROCS %d\n", runtime.NumCPU(), cpuModel(), memTotal(), runtime.GOMAXPROCS(0))
	p("- software: %s; %s; S3 server versitygw %s (posix backend, loopback, `--quiet`)\n", runtime.Version(), moduleVersions(), b.gwVersion)
	if o.shape {
		p("- network shaping (`--shape`): a proxy in front of the server waits %v before forwarding each request and paces each response body to %.0f MB/s\n",
			o.latency, float64(o.bandwidth)/1e6)
	}
	p("- s3io source: %s\n", b.sourceState)
	p("- load average when the runs started: %s\n", b.loadAvg)
	gen := "reused from the data directory (generation skipped)"
	if len(b.generated) > 0 {
		gen = fmt.Sprintf("generated and uploaded %s in %.1f s", formatList(b.generated), b.genTime.Seconds())
	}
	p("- dataset: s3://%s in %s — %s\n", b.manifest.Bucket, o.dataDir, gen)
	p("- runs: %d child processes kept (%d more repeated for foreign load) in %.1f s (%s, timeout %v each); per-run JSON: %s\n\n",
		len(b.results), b.repeated, b.runsTime.Seconds(), plural(o.rounds, "round", "rounds"), o.timeout, b.resultsLog)

	p("## Dataset\n\n")
	p("| prefix | objects | stored MB | decompressed MB | ratio | records | bytes/record |\n|---|---:|---:|---:|---:|---:|---:|\n")
	for _, f := range append(slices.Clone(o.formats), prefixSmall, prefixBig) {
		pm := b.manifest.Prefixes[f]
		if pm == nil || (f == prefixBig && !o.big) || (f == prefixSmall && !o.small) {
			continue
		}
		p("| %s/ | %d | %.1f | %.1f | %.2f | %s | %.1f |\n", f, len(pm.Objects), float64(pm.StoredBytes)/1e6,
			float64(pm.DecompressedBytes)/1e6, float64(pm.DecompressedBytes)/float64(max(pm.StoredBytes, 1)),
			group(pm.Records), float64(pm.DecompressedBytes)/float64(max(pm.Records, 1)))
	}

	var alarms []string
	if len(o.prefixes()) > 0 {
		alarms = b.throughput(&w)
		b.ratios(&w)
	}
	if busy := b.foreignLoad(); busy != "" {
		p("\n**Warning: the machine was not idle.** %s\n", busy)
	}
	if len(alarms) > 0 {
		p("\n**!!! Incomplete or failed runs:**\n\n")
		for _, a := range alarms {
			p("- **%s**\n", a)
		}
	}
	b.memory(&w)
	b.method(&w)
	return w.String()
}

// throughput writes the main table and returns the alarms it raised: mismatched counts and
// failed runs.
func (b *benchRun) throughput(w *strings.Builder) (alarms []string) {
	o := b.opts
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	p("\n## Throughput: median of %s\n\n", plural(o.rounds, "round", "rounds"))
	p("MB/s is 10^6 bytes of decompressed data delivered per second of the child's wall time (its range over the rounds in brackets). " +
		"\"× limit\" divides by the 2-reader SDK loop (loop2) on the same format; \"× textio\" divides s3io by textio. " +
		"\"GETs in flight\" is the most object GETs the shaping proxy served at once, for runs through it. " +
		"The floor emits the records every format holds from memory; its wall and CPU s are beam.Run's alone.\n\n")
	p("| format | variant | MB/s | records/s | records counted / expected | check | wall s | CPU s | server CPU s | other CPU s | peak RSS MiB | × limit | × textio | GETs in flight | runs ok |\n")
	p("|---|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	for _, f := range o.prefixes() {
		limit := b.cell(f, variantLoop2)
		textio := b.cell(f, variantTextio)
		for _, v := range o.variants {
			if v == variantIdle {
				continue
			}
			c := b.cell(f, v)
			if !c.ran() {
				continue
			}
			p("%s\n", b.row(c, limit, textio))
			if len(c.ok) > 0 && !c.complete() {
				alarms = append(alarms, fmt.Sprintf("%s on %s/: %s (counted %s)%s", v, f, strings.Trim(c.checkText(), "*"), c.countText(), knownCause(v, f)))
			}
			for _, r := range c.failed {
				alarms = append(alarms, fmt.Sprintf("%s on %s/, round %d FAILED: %s (log %s)", v, f, r.Round, shorten(r.Err, 700), r.Log))
			}
		}
	}
	return alarms
}

// memory writes the single-object memory table, when --big or the idle variant ran.
func (b *benchRun) memory(w *strings.Builder) {
	o := b.opts
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	idle := b.cell(prefixEmpty, variantIdle)
	if !o.big && !idle.ran() {
		return
	}
	if o.big {
		p("\n## Memory: one %s object\n\n", o.bigSize)
	} else {
		p("\n## Memory: the idle pipeline\n\n")
	}
	idleRSS, _, _ := idle.stat(func(r runResult) float64 { return float64(r.PeakRSSKiB) / 1024 })
	p("The idle row is an s3io pipeline over an empty prefix: the memory of the process, Beam and prism themselves. ")
	p("\"above idle\" is the read's peak RSS minus the idle pipeline's (medians).\n\n")
	p("| prefix | variant | MB/s | wall s | CPU s | peak RSS MiB | above idle MiB | records counted / expected | check | runs ok |\n")
	p("|---|---|---:|---:|---:|---:|---:|---:|---|---|\n")
	var failures []string
	for _, c := range []*cell{b.cell(prefixBig, variantLoop1), b.cell(prefixBig, variantS3io), idle} {
		if !c.ran() {
			continue
		}
		for _, r := range c.failed {
			failures = append(failures, fmt.Sprintf("%s on %s/, round %d FAILED: %s (log %s)", c.variant, c.prefix, r.Round, shorten(r.Err, 700), r.Log))
		}
		if len(c.ok) == 0 {
			p("| %s/ | %s | — | — | — | — | — | — | — | %s |\n", c.prefix, c.variant, c.runsText())
			continue
		}
		mb, lo, hi := c.mbps()
		wall, _, _ := c.stat(func(r runResult) float64 { return r.wall() })
		cpu, _, _ := c.stat(func(r runResult) float64 { return r.cpu() })
		rss, _, _ := c.stat(func(r runResult) float64 { return float64(r.PeakRSSKiB) / 1024 })
		above := "—"
		if c.variant != variantIdle && len(idle.ok) > 0 {
			above = fmt.Sprintf("%+.0f", rss-idleRSS)
		}
		speed := fmt.Sprintf("%.0f [%.0f–%.0f]", mb, lo, hi)
		if c.variant == variantIdle {
			speed = "—"
		}
		p("| %s/ | %s | %s | %.2f | %.2f | %.0f | %s | %s | %s | %s |\n", c.prefix, c.variant, speed, wall, cpu, rss, above,
			c.countText(), c.checkText(), c.runsText())
	}
	for _, f := range failures {
		p("\n**%s**\n", f)
	}
}

// method writes how the numbers were measured, and what was done to the machine.
func (b *benchRun) method(w *strings.Builder) {
	o := b.opts
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	p("\n## How it was measured\n\n")
	p("- Every run is a fresh child process (this program re-executed as `%s run --variant V --prefix P ...`); the parent measures its wall time "+
		"(start to exit, so process start-up, pipeline construction and prism's start are included), its CPU time (user + system) from the rusage wait4 returns, "+
		"and reads its one-line JSON result (records and decompressed bytes counted, and its peak RSS). "+
		"Runs alternate round-robin over formats and variants, rotating the order each round.\n", progName)
	p("- loop1/loop2/loop32: aws-sdk-go-v2 only: a ListObjectsV2 paginator, then 1, 2 or 32 goroutines GET whole objects, decompress them " +
		"(klauspost gzip; klauspost zstd with `WithDecoderConcurrency(1)`) and count lines with `bytes.IndexByte` over a 4 MiB buffer. " +
		"**Response checksum validation is off** (`aws.ResponseChecksumValidationWhenRequired`), as in s3io. Two readers is the limit on this machine on loopback; " +
		"32 GETs in flight is the yardstick when request latency bounds the read.\n")
	p("- s3io: `s3io.Read(s, Config{Bucket, Prefix, Endpoint, UsePathStyle: true, Region: \"us-east-1\"})`, every other field at its default, " +
		"on the in-process prism runner into a ParDo0 DoFn that counts records " +
		"and bytes in fields and adds them to Beam counters once per bundle (FinishBundle); the totals are read from the PipelineResult's metrics.\n")
	if slices.Contains(o.variants, variantFloor) {
		p("- floor: Beam's per-element floor. The child generates the dataset's records (the generator's, as every format holds them) into memory outside the Go heap, " +
			"then runs a prism pipeline in which one DoFn after an Impulse emits each record, newline removed, into the same counting DoFn as s3io. " +
			"Its wall and CPU time are measured around `beam.Run` only (getrusage), not the generation; its peak RSS includes the records.\n")
	}
	if o.shape {
		p("- `--shape`: s3io, the loops and s3io-unshaped read through a reverse proxy in the benchmark's own process (internal/netshape, net/http) that keeps the Host header "+
			"and forwards everything. Shaped, it waits %v before forwarding each request (first-byte latency) and paces each response body to %.0f MB/s on an absolute "+
			"schedule, in writes of 2 ms worth; s3io-unshaped runs through it with shaping off (the proxy's own cost), s3io-direct straight to the server on loopback. "+
			"\"server CPU s\" includes the proxy's CPU time. The two-core floor for gzip is (floor CPU s + loop2 gzip CPU s) / 2: the wall time of a read that spreads "+
			"Beam's per-element work and gzip decoding perfectly over two cores.\n", o.latency, float64(o.bandwidth)/1e6)
	}
	if o.runsTextio() {
		b.describeTextio(p)
	}
	p("- **CPU time is reported beside wall time** because a ParDo0 sink made prism v2.75 spin a core in its stage loop " +
		"(`runners/prism/internal.(*stage).Execute` polling in `select`): a pipeline's CPU seconds can exceed what its reading needs, " +
		"and a spinning core is not available to the readers. `--cpuprofile DIR` shows how much of a run's CPU that loop took.\n")
	p("- **Peak RSS is the child's VmHWM** (/proc/self/status, read as it finishes), not ru_maxrss: Linux folds the high-water mark of the memory map "+
		"a process had before execve into ru_maxrss, and Go spawns children with CLONE_VM, so a child's ru_maxrss is never below the RSS this benchmark "+
		"had reached when it spawned the child (after generating a dataset in memory, ~107 MiB for every child, however small). "+
		"%s. Both figures are in the per-run JSON.\n", b.rusageNote())
	p("- The S3 server runs on the same %d cores; \"server CPU s\" is its CPU time during the run (from /proc/PID/stat), plus this process's (getrusage). "+
		"\"other CPU s\" is what every other process on the machine used meanwhile (/proc/stat minus the child and the server): "+
		"well above zero, the run shared the cores with foreign load. After the first read the objects are served from the page cache.\n", runtime.NumCPU())
	for _, n := range b.notes {
		p("- %s\n", n)
	}
}

// row renders one cell of the throughput table.
func (b *benchRun) row(c, limit, textio *cell) string {
	if len(c.ok) == 0 {
		return fmt.Sprintf("| %s | %s | — | — | — | — | — | — | — | — | — | — | — | — | %s |", c.prefix, c.variant, c.runsText())
	}
	mb, lo, hi := c.mbps()
	recs, _, _ := c.stat(func(r runResult) float64 { return float64(r.Child.Records) / r.wall() })
	wall, _, _ := c.stat(func(r runResult) float64 { return r.wall() })
	cpu, _, _ := c.stat(func(r runResult) float64 { return r.cpu() })
	srv, _, _ := c.stat(func(r runResult) float64 { return r.ServerCPUSeconds })
	rss, _, _ := c.stat(func(r runResult) float64 { return float64(r.PeakRSSKiB) / 1024 })
	xLimit, xTextio := "—", "—"
	if lm, _, _ := limit.mbps(); len(limit.ok) > 0 && lm > 0 {
		xLimit = fmt.Sprintf("%.2f", mb/lm)
	}
	if c.variant == variantS3io && len(textio.ok) > 0 {
		if tm, _, _ := textio.mbps(); tm > 0 {
			xTextio = fmt.Sprintf("%.2f", mb/tm)
			if !textio.complete() {
				xTextio += " (textio incomplete)"
			}
		}
	}
	other, _, _ := c.stat(func(r runResult) float64 { return r.OtherCPUSeconds })
	inFlight := "—"
	if c.ok[0].Proxy != nil {
		n, _, _ := c.stat(func(r runResult) float64 { return float64(r.Proxy.MaxGetsInFlight) })
		inFlight = fmt.Sprintf("%.0f", n)
	}
	return fmt.Sprintf("| %s | %s | %.0f [%.0f–%.0f] | %.2f M | %s | %s | %.2f | %.2f | %s | %s | %.0f | %s | %s | %s | %s |",
		c.prefix, c.variant, mb, lo, hi, recs/1e6, c.countText(), c.checkText(), wall, cpu, seconds(srv), seconds(other), rss, xLimit, xTextio, inFlight, c.runsText())
}

// ratios writes the comparisons the shaped benchmark is judged by, as far as their runs
// were made: s3io shaped against unshaped, against loop32 on small objects, and s3io on
// loopback against the two-core floor for gzip.
func (b *benchRun) ratios(w *strings.Builder) {
	var lines []string
	mbps := func(prefix, variant string) (float64, bool) {
		c := b.cell(prefix, variant)
		m, _, _ := c.mbps()
		return m, len(c.ok) > 0 && m > 0
	}
	for _, f := range b.opts.formats {
		s, ok1 := mbps(f, variantS3io)
		u, ok2 := mbps(f, variantS3ioUnshaped)
		if ok1 && ok2 {
			lines = append(lines, fmt.Sprintf("%s: s3io shaped / s3io-unshaped throughput = %.0f / %.0f MB/s = **%.2f**", f, s, u, s/u))
		}
	}
	s, ok1 := mbps(prefixSmall, variantS3io)
	l, ok2 := mbps(prefixSmall, variantLoop32)
	if ok1 && ok2 && b.opts.shape {
		lines = append(lines, fmt.Sprintf("small/: s3io shaped / loop32 shaped = %.0f / %.0f MB/s = **%.2f**", s, l, s/l))
	}
	floor, loop2 := b.cell(prefixMemory, variantFloor), b.cell(formatGzip, variantLoop2)
	if len(floor.ok) > 0 && len(loop2.ok) > 0 {
		fc, _, _ := floor.stat(func(r runResult) float64 { return r.cpu() })
		lc, _, _ := loop2.stat(func(r runResult) float64 { return r.cpu() })
		twoCore := (fc + lc) / 2
		line := fmt.Sprintf("gzip two-core floor = (floor CPU %.2f s + loop2 gzip CPU %.2f s) / 2 = %.2f s", fc, lc, twoCore)
		loopback := map[bool]string{false: variantS3io, true: variantS3ioDirect}[b.opts.shape]
		if c := b.cell(formatGzip, loopback); len(c.ok) > 0 {
			wall, _, _ := c.stat(func(r runResult) float64 { return r.wall() })
			line += fmt.Sprintf("; %s gzip wall %.2f s = **%.2f×** the floor", loopback, wall, wall/twoCore)
		}
		lines = append(lines, line)
	}
	if len(lines) == 0 {
		return
	}
	fmt.Fprintf(w, "\n## Ratios (medians)\n\n")
	for _, l := range lines {
		fmt.Fprintf(w, "- %s\n", l)
	}
}

// progressLine is the one-line summary printed after each run.
func (b *benchRun) progressLine(r runResult) string {
	if !r.ok() {
		return fmt.Sprintf("FAILED after %.1fs: %s", r.WallSeconds, shorten(r.Err, 300))
	}
	c := &cell{prefix: r.Prefix, variant: r.Variant, ok: []runResult{r}, want: b.want(r.Prefix)}
	proxy := ""
	if r.Proxy != nil {
		proxy = fmt.Sprintf("  GETs in flight %d", r.Proxy.MaxGetsInFlight)
	}
	return fmt.Sprintf("%7.0f MB/s  wall %6.2fs  cpu %6.2fs  server cpu %5.2fs  other cpu %5.2fs  rss %5.0f MiB  records %s %s%s",
		float64(r.Child.Bytes)/1e6/r.wall(), r.wall(), r.cpu(), r.ServerCPUSeconds, r.OtherCPUSeconds, float64(r.PeakRSSKiB)/1024,
		c.countText(), strings.Trim(c.checkText(), "*"), proxy)
}

// progName is how the report names this program, whatever path `go run` built it at.
const progName = "s3io-bench"

// commandLine is the invocation with the program's own name instead of the temporary path
// `go run` gives it, each argument shell-quoted when needed.
func commandLine() string {
	parts := []string{progName}
	for _, a := range os.Args[1:] {
		if a == "" || strings.ContainsAny(a, " \t\n'\"\\$`*?[]{}()<>|&;#~") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		parts = append(parts, a)
	}
	return strings.Join(parts, " ")
}

// cpuModel is the first "model name" in /proc/cpuinfo.
func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "unknown CPU"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown CPU"
}

// memTotal is MemTotal from /proc/meminfo, in GiB.
func memTotal() string {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err == nil {
				return fmt.Sprintf("%.1f GiB", float64(kb)/(1<<20))
			}
		}
	}
	return "unknown"
}

// moduleVersions names the versions of the libraries measured, from the build info.
func moduleVersions() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "module versions unknown"
	}
	want := map[string]string{
		"github.com/apache/beam/sdks/v2":          "Beam Go SDK",
		"github.com/aws/aws-sdk-go-v2/service/s3": "aws-sdk-go-v2/service/s3",
		"github.com/klauspost/compress":           "klauspost/compress",
	}
	var out []string
	for _, d := range bi.Deps {
		if name, ok := want[d.Path]; ok {
			out = append(out, name+" "+d.Version)
		}
	}
	slices.Sort(out)
	return strings.Join(out, ", ")
}

// plural is "1 round" or "5 rounds".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// knownCause explains the mismatches the benchmark exists to show; any other mismatch is a
// bug to investigate.
func knownCause(variant, format string) string {
	switch {
	case variant == variantTextio && format == formatGzip:
		return ": expected, textio reads a .gz object only up to its compressed size"
	case variant == variantTextio && format == formatZstd:
		return ": expected, textio has no zstd and counted lines of raw compressed bytes"
	}
	return ": NOT EXPECTED, investigate"
}

func seconds(v float64) string {
	if v < 0 {
		return "—"
	}
	return fmt.Sprintf("%.2f", v)
}

// foreignLoad says how much CPU other processes took during the runs, when that is more
// than a twentieth of the runs' wall time: numbers measured beside a compiler or a test
// suite are not the machine's.
func (b *benchRun) foreignLoad() string {
	var other, wall float64
	for _, r := range b.results {
		if r.OtherCPUSeconds > 0 {
			other += r.OtherCPUSeconds
		}
		wall += r.WallSeconds
	}
	loaded := 0
	for _, r := range b.results {
		if r.loaded() {
			loaded++
		}
	}
	// Tick noise on short runs is not load: warn on what was repeated or is still loaded, or
	// on a second or more of foreign CPU that is also a tenth of the runs' time.
	if b.repeated == 0 && loaded == 0 && (other < 1 || other < wall/10) {
		return ""
	}
	return fmt.Sprintf("Other processes used %.1f CPU seconds during the %.1f seconds of the runs kept (%.0f%% of one core on average). "+
		"%s discarded and repeated because other processes took more than %.0f%% of a core during them (--retry-loaded %d); "+
		"%s kept %s still loaded that way. See \"other CPU s\" per row, and other_cpu_seconds per run in the JSON.",
		other, wall, 100*other/wall, plural(b.repeated, "run was", "runs were"), 100*loadedFraction, b.opts.retryLoaded,
		plural(loaded, "run", "runs"), map[bool]string{true: "is", false: "are"}[loaded == 1])
}

// loadAverage is /proc/loadavg's first three fields.
func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// describeTextio explains how textio was configured and what it cannot read.
func (b *benchRun) describeTextio(p func(format string, args ...any)) {
	o := b.opts
	p("- textio: Beam's `textio.Read(s, \"s3://%s/PREFIX/*\")` over Beam's own S3 filesystem (`io/filesystem/s3`, unpatched), into the same kind of counting DoFn. "+
		"That filesystem takes no options, so it is configured only through the AWS environment of the child: `%s`, keys, `AWS_REGION=us-east-1`; "+
		"the SDK then addresses the bucket virtual-hosted style (`%s.%s`), which the server answers with `--virtual-domain %s`. ",
		b.manifest.Bucket, strings.Join(b.textioEnv, "`, `"), b.manifest.Bucket, o.virtualDomain, o.virtualDomain)
	if o.textioChecksums {
		p("Response checksum validation is left at its SDK default (on).\n")
	} else {
		p("`AWS_RESPONSE_CHECKSUM_VALIDATION=when_required` turns response checksum validation off, as for the loop and s3io (`--textio-checksums` leaves it on).\n")
	}
	p("  textio reads a `.gz` object only up to its *compressed* size (the rest of its lines are silently lost), and has no zstd: a `.zst` object is read as raw bytes. " +
		"Its MB/s counts only the bytes it delivered.\n")
}

// rusageNote compares ru_maxrss with VmHWM over this invocation's runs, so the reader sees
// why the report does not use ru_maxrss.
func (b *benchRun) rusageNote() string {
	var ru, hwm []float64
	for _, r := range b.results {
		if r.ok() && r.RusageMaxRSSKiB > 0 {
			ru = append(ru, float64(r.RusageMaxRSSKiB)/1024)
			hwm = append(hwm, float64(r.PeakRSSKiB)/1024)
		}
	}
	if len(ru) == 0 {
		return "No ru_maxrss was reported in this invocation"
	}
	return fmt.Sprintf("In this invocation ru_maxrss was %.0f–%.0f MiB over the runs and VmHWM %.0f–%.0f MiB",
		slices.Min(ru), slices.Max(ru), slices.Min(hwm), slices.Max(hwm))
}
