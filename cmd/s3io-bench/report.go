package main

import (
	"bufio"
	"cmp"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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
	want            *prefixData // what reading the prefix must yield
}

func (c *cell) add(r runResult) {
	if r.ok() {
		c.ok = append(c.ok, r)
	} else {
		c.failed = append(c.failed, r)
	}
}

func (b *benchRun) cell(prefix, variant string) *cell {
	c := &cell{prefix: prefix, variant: variant, want: b.want(prefix)}
	for _, r := range b.results {
		if r.prefix == prefix && r.variant == variant {
			c.add(r)
		}
	}
	return c
}

// want is what reading prefix must yield: nothing for the empty prefix, and for the floor's
// records in memory what every format holds.
func (b *benchRun) want(prefix string) *prefixData {
	switch {
	case prefix == prefixEmpty:
		return &prefixData{}
	case prefix == prefixMemory && len(b.opts.formats) > 0:
		return b.data[b.opts.formats[0]]
	}
	return b.data[prefix]
}

func (c *cell) ran() bool { return len(c.ok)+len(c.failed) > 0 }

// stats are a cell's medians over its successful runs, the range of its MB/s (10^6 bytes of
// decompressed data delivered per second of wall time), and its highest peak RSS.
type stats struct {
	mbps, lo, hi, recsPerSec, wall, cpu, server, other, rssMiB, rssMaxMiB, inFlight float64
	// fetched is the bytes s3io received (median), busy CPU s ÷ wall s.
	fetched, busy float64
}

func (c *cell) stats() stats {
	if len(c.ok) == 0 {
		return stats{}
	}
	col := func(f func(r *runResult) float64) []float64 {
		xs := make([]float64, len(c.ok))
		for i := range c.ok {
			xs[i] = f(&c.ok[i])
		}
		slices.Sort(xs)
		return xs
	}
	med := func(f func(r *runResult) float64) float64 {
		xs := col(f)
		return (xs[(len(xs)-1)/2] + xs[len(xs)/2]) / 2
	}
	mb := col(func(r *runResult) float64 { return float64(r.child.Bytes) / 1e6 / r.wall() })
	rss := col(func(r *runResult) float64 { return float64(r.child.VmHWMKiB) / 1024 })
	return stats{
		mbps: (mb[(len(mb)-1)/2] + mb[len(mb)/2]) / 2, lo: mb[0], hi: mb[len(mb)-1],
		recsPerSec: med(func(r *runResult) float64 { return float64(r.child.Records) / r.wall() }),
		wall:       med((*runResult).wall),
		cpu:        med((*runResult).cpu),
		server:     med(func(r *runResult) float64 { return r.serverCPU }),
		other:      med(func(r *runResult) float64 { return r.otherCPU }),
		rssMiB:     med(func(r *runResult) float64 { return float64(r.child.VmHWMKiB) / 1024 }),
		rssMaxMiB:  rss[len(rss)-1],
		inFlight:   med(func(r *runResult) float64 { return float64(r.inFlight) }),
		fetched:    med(func(r *runResult) float64 { return float64(r.child.FetchedBytes) }),
		busy:       med(func(r *runResult) float64 { return r.cpu() / r.wall() }),
	}
}

// complete reports whether every successful run counted exactly the generated records and
// bytes.
func (c *cell) complete() bool {
	return !slices.ContainsFunc(c.ok, func(r runResult) bool {
		return c.want == nil || r.child.Records != c.want.Records || r.child.Bytes != c.want.DecompressedBytes
	})
}

// records is the range of the records the successful runs counted.
func (c *cell) records() (lo, hi int64) {
	lo, hi = c.ok[0].child.Records, c.ok[0].child.Records
	for _, r := range c.ok {
		lo, hi = min(lo, r.child.Records), max(hi, r.child.Records)
	}
	return lo, hi
}

// countText is the records counted (one value, or the range over the runs) against the
// records generated.
func (c *cell) countText() string {
	lo, hi := c.records()
	got, want := group(lo), "?"
	if lo != hi {
		got += "…" + group(hi)
	}
	if c.want != nil {
		want = group(c.want.Records)
	}
	return got + " / " + want
}

// checkText is "ok", or a loud MISMATCH saying how much a run lost or duplicated.
func (c *cell) checkText() string {
	lo, hi := c.records()
	switch {
	case c.complete():
		return "ok"
	case c.want == nil:
		return "**MISMATCH** (no manifest)"
	case lo < c.want.Records:
		return fmt.Sprintf("**MISMATCH: %s records lost (%.1f%%)**", group(c.want.Records-lo), 100*float64(c.want.Records-lo)/float64(c.want.Records))
	case hi > c.want.Records:
		return fmt.Sprintf("**MISMATCH: %s records too many**", group(hi-c.want.Records))
	}
	return fmt.Sprintf("**MISMATCH: bytes counted differ from %s**", group(c.want.DecompressedBytes))
}

// runsText is "5/5", with the first failure's reason and log when there are failures.
func (c *cell) runsText() string {
	s := fmt.Sprintf("%d/%d", len(c.ok), len(c.ok)+len(c.failed))
	if len(c.failed) > 0 {
		s += fmt.Sprintf(" **FAILED: %s** (log %s)", shorten(c.failed[0].err, 300), c.failed[0].log)
	}
	return s
}

// shorten makes an error fit a table cell: the end of a Beam error chain (Beam wraps a
// DoFn's error in the bundle's whole plan; the part after the last "caused by:" is what went
// wrong), on one line, without pipes, at most n bytes.
func shorten(s string, n int) string {
	if i := strings.LastIndex(s, "caused by:"); i >= 0 {
		s = s[i+len("caused by:"):]
	}
	s = strings.ReplaceAll(strings.Join(strings.Fields(s), " "), "|", "/")
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// group writes n with thousands separators: record counts are read digit by digit when they
// disagree.
func group(n int64) string {
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// row is one Markdown table row.
func row(cols ...string) string { return "| " + strings.Join(cols, " | ") + " |\n" }

// f2 formats seconds; a negative value is unknown.
func f2(v float64) string {
	if v < 0 {
		return "—"
	}
	return fmt.Sprintf("%.2f", v)
}

func (b *benchRun) report() string {
	var w strings.Builder
	o := b.opts
	p := func(format string, args ...any) { fmt.Fprintf(&w, format, args...) }
	p("# s3io end-to-end read benchmark\n\n- date: %s\n- command: `s3io-bench %s`\n", b.started.Format(time.RFC3339), strings.Join(os.Args[1:], " "))
	memKiB, _ := strconv.ParseFloat(strings.TrimSuffix(procValue("/proc/meminfo", "MemTotal"), " kB"), 64)
	p("- machine: %d CPUs (nproc), %s, %.1f GiB RAM; GOMAXPROCS %d\n", runtime.NumCPU(), cmp.Or(procValue("/proc/cpuinfo", "model name"), "unknown CPU"), memKiB/(1<<20), runtime.GOMAXPROCS(0))
	p("- software: %s; %s; S3 server versitygw %s (posix backend, loopback, `--quiet`)\n", runtime.Version(), moduleVersions(), cmp.Or(b.gwVersion, "(unknown version)"))
	if o.shape {
		p("- network shaping (`--shape`): internal/netshape, in this process, waits 30ms before forwarding each request and paces each response body to 90 MB/s; " +
			"s3io-unshaped reads through it with shaping off (its own cost), s3io-direct straight from the server\n")
	}
	p("- s3io source: %s\n- load average when the runs started: %s\n", sourceState(), cmp.Or(b.loadAvg, "unknown"))
	p("- dataset: s3://%s in %s — %s\n", b.bucket, o.dataDir, b.datasetState())
	p("- runs: %d child processes kept (%d more repeated for foreign load) in %.1f s (--rounds %d, timeout %v each); logs: %s\n",
		len(b.results), b.repeated, b.runsTime.Seconds(), o.rounds, childTimeout, b.logDir)
	p("- foreign load: %s\n", b.foreignLoad())
	if o.runsTextio() {
		p("- textio: Beam's `textio.Read(s, \"s3://%s/PREFIX/*\")` over Beam's S3 filesystem, configured only through the environment (`%s`, keys, region), "+
			"which addresses the bucket virtual-hosted (`%s.%s`); it reads a `.gz` object only up to its compressed size and has no zstd\n",
			b.bucket, strings.Join(textioEnv(b.gw.Port), "`, `"), b.bucket, virtualDomain)
	}
	for _, n := range b.notes {
		p("- %s\n", n)
	}
	b.dataset(&w)
	if len(o.prefixes()) > 0 {
		b.throughput(&w)
		b.codecTable(&w)
		b.ratios(&w)
	}
	b.memory(&w)
	return w.String()
}

func (b *benchRun) datasetState() string {
	if len(b.generated) == 0 {
		return "reused from the data directory (generation skipped)"
	}
	return fmt.Sprintf("generated and uploaded %s in %.1f s", strings.Join(b.generated, ", "), b.genTime.Seconds())
}

// dataset writes what each prefix read holds.
func (b *benchRun) dataset(w *strings.Builder) {
	w.WriteString("\n## Dataset\n\n| prefix | objects | stored MB | decompressed MB | ratio | records | bytes/record |\n|---|---:|---:|---:|---:|---:|---:|\n")
	for _, f := range append(append(slices.Clone(b.opts.formats), b.opts.codecPrefixes()...), prefixSmall, prefixBig) {
		if d := b.data[f]; d != nil && (f != prefixBig || b.opts.big) && (f != prefixSmall || b.opts.small) {
			fmt.Fprintf(w, "| %s/ | %d | %.1f | %.1f | %.2f | %s | %.1f |\n", f, d.objects, float64(d.StoredBytes)/1e6, float64(d.DecompressedBytes)/1e6,
				float64(d.DecompressedBytes)/float64(max(d.StoredBytes, 1)), group(d.Records), float64(d.DecompressedBytes)/float64(max(d.Records, 1)))
		}
	}
}

// throughput writes the main table.
func (b *benchRun) throughput(w *strings.Builder) {
	fmt.Fprintf(w, "\n## Throughput: medians over %d round(s)\n\n", b.opts.rounds)
	w.WriteString("MB/s is 10^6 bytes of decompressed data delivered per second of the child's wall time (its range over the rounds in brackets). " +
		"\"× limit\" divides by the 2-reader SDK loop (loop2) on the same format, and on a codec-NAME/ prefix by lib (loop2 with the codec library's own decoder); \"× textio\" divides s3io by textio. " +
		"\"GETs in flight\" is the most object GETs the shaping proxy served at once, for runs through it. " +
		"The floor emits the records every format holds from memory; its wall and CPU s are beam.Run's alone. " +
		"Each run is a fresh child process: wall s from its start to its exit, CPU s from rusage, peak RSS its VmHWM; " +
		"\"server CPU s\" is the S3 server's CPU time during the run (on the same cores) plus this process's (the shaping proxy), " +
		"\"other CPU s\" every other process's. " +
		"\"cores busy\" is CPU s ÷ wall s of the child (beam.Run's for the floor); \"fetched ÷ stored\" divides what s3io's reads and the planner's probes received (raw_bytes + probe_bytes) by the prefix's stored bytes.\n\n")
	w.WriteString(row("format", "variant", "MB/s", "records/s", "records counted / expected", "check", "wall s", "CPU s", "cores busy", "server CPU s",
		"other CPU s", "peak RSS MiB", "× limit", "× textio", "fetched ÷ stored", "GETs in flight", "runs ok"))
	w.WriteString("|---|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	for _, f := range b.opts.prefixes() {
		limit, textio := b.cell(f, variantLoop2), b.cell(f, variantTextio)
		if codecOf(f) != nil {
			limit = b.cell(f, variantLib)
		}
		for _, v := range b.opts.variants {
			if c := b.cell(f, v); c.ran() {
				w.WriteString(row(b.throughputRow(c, limit, textio)...))
			}
		}
	}
}

func (b *benchRun) throughputRow(c, limit, textio *cell) []string {
	if len(c.ok) == 0 {
		return append(append([]string{c.prefix, c.variant}, slices.Repeat([]string{"—"}, 14)...), c.runsText())
	}
	s := c.stats()
	xLimit, xTextio, inFlight := "—", "—", "—"
	if lm := limit.stats().mbps; lm > 0 {
		xLimit = fmt.Sprintf("%.2f", s.mbps/lm)
	}
	if tm := textio.stats().mbps; c.variant == variantS3io && tm > 0 {
		xTextio = fmt.Sprintf("%.2f", s.mbps/tm)
		if !textio.complete() {
			xTextio += " (textio incomplete)"
		}
	}
	if s.inFlight >= 0 {
		inFlight = fmt.Sprintf("%.0f", s.inFlight)
	}
	fetched := "—"
	if s.fetched > 0 && c.want != nil && c.want.StoredBytes > 0 {
		fetched = fmt.Sprintf("%.3f", s.fetched/float64(c.want.StoredBytes))
	}
	return []string{c.prefix, c.variant, fmt.Sprintf("%.0f [%.0f–%.0f]", s.mbps, s.lo, s.hi), fmt.Sprintf("%.2f M", s.recsPerSec/1e6),
		c.countText(), c.checkText(), f2(s.wall), f2(s.cpu), f2(s.busy), f2(s.server), f2(s.other), fmt.Sprintf("%.0f", s.rssMiB), xLimit, xTextio, fetched, inFlight, c.runsText()}
}

// memory writes the single-object memory table (--big): peak RSS against an idle pipeline.
func (b *benchRun) memory(w *strings.Builder) {
	if !b.opts.big {
		return
	}
	idle := b.cell(prefixEmpty, variantIdle)
	fmt.Fprintf(w, "\n## Memory: one %dGiB object\n\nThe idle row is an s3io pipeline over an empty prefix: the memory of the process, Beam and prism themselves. "+
		"\"above idle\" is the read's peak RSS minus the idle pipeline's (medians).\n\n", bigSize>>30)
	w.WriteString(row("prefix", "variant", "MB/s", "wall s", "CPU s", "peak RSS MiB", "above idle MiB", "records counted / expected", "check", "runs ok"))
	w.WriteString("|---|---|---:|---:|---:|---:|---:|---:|---|---|\n")
	for _, c := range []*cell{b.cell(prefixBig, variantLoop1), b.cell(prefixBig, variantS3io), idle} {
		if len(c.ok) == 0 {
			w.WriteString(row(c.prefix+"/", c.variant, "—", "—", "—", "—", "—", "—", "—", c.runsText()))
			continue
		}
		s, speed, above := c.stats(), "—", "—"
		if c.variant != variantIdle {
			speed = fmt.Sprintf("%.0f [%.0f–%.0f]", s.mbps, s.lo, s.hi)
			if len(idle.ok) > 0 {
				above = fmt.Sprintf("%+.0f", s.rssMiB-idle.stats().rssMiB)
			}
		}
		w.WriteString(row(c.prefix+"/", c.variant, speed, f2(s.wall), f2(s.cpu), fmt.Sprintf("%.0f", s.rssMiB), above, c.countText(), c.checkText(), c.runsText()))
	}
}

// foreignLoad says how much CPU other processes took during the runs: numbers measured
// beside a compiler or a test suite are not the machine's.
func (b *benchRun) foreignLoad() string {
	var other, wall float64
	loaded := 0
	for _, r := range b.results {
		other, wall = other+max(r.otherCPU, 0), wall+r.wallSeconds
		if r.loaded() {
			loaded++
		}
	}
	return fmt.Sprintf("%.1f CPU s used by other processes during the %.1f s of the runs kept (%.0f%% of one core); "+
		"%d runs repeated because other processes took more than a fifth of a core (--retry-loaded %d), %d kept that are still loaded",
		other, wall, 100*other/max(wall, 1e-9), b.repeated, b.opts.retryLoaded, loaded)
}

// procValue is the value of the first "key: value" line of a /proc file, or "".
func procValue(path, key string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	for sc := bufio.NewScanner(f); sc.Scan(); {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// moduleVersions names the versions of the libraries measured, from the build info.
func moduleVersions() string {
	names := map[string]string{"github.com/apache/beam/sdks/v2": "Beam Go SDK", "github.com/aws/aws-sdk-go-v2/service/s3": "aws-sdk-go-v2/service/s3",
		"github.com/klauspost/compress": "klauspost/compress"}
	var out []string
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if name, ok := names[d.Path]; ok {
				out = append(out, name+" "+d.Version)
			}
		}
	}
	slices.Sort(out)
	return cmp.Or(strings.Join(out, ", "), "module versions unknown")
}

// sourceState names the s3io source this program was built from, as the working tree that
// `go run` has just compiled: the library changes while it is measured.
func sourceState() string {
	_, file, _, _ := runtime.Caller(0)
	repo := filepath.Join(filepath.Dir(file), "..", "..")
	rev, err := exec.Command("git", "-C", repo, "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "unknown (not a git checkout)"
	}
	if dirty, _ := exec.Command("git", "-C", repo, "status", "--porcelain", "--", "s3io").Output(); len(dirty) > 0 {
		return fmt.Sprintf("commit %s with uncommitted changes (%s)", strings.TrimSpace(string(rev)), strings.Join(strings.Fields(string(dirty)), " "))
	}
	return "commit " + strings.TrimSpace(string(rev)) + ", s3io/ unmodified"
}

// codecTable writes the codec prefixes' comparison (--codecs): s3io against the codec
// library's own decode loop, and for the fast codecs against s3io's plain read of the same
// records, beside the targets the issue sets.
func (b *benchRun) codecTable(w *strings.Builder) {
	o := b.opts
	if len(o.codecs) == 0 {
		return
	}
	ref := o.plainReference()
	fmt.Fprintf(w, "\n## Codecs: medians over %d round(s)\n\n", o.rounds)
	fmt.Fprintf(w, "codec-NAME/ holds the first %.0f MiB of plain/'s records (--codec-size) in objects of up to %.0f MiB, each object written by the tool named. "+
		"s3io is the s3io row above: the prefix read on prism, every Config field at its default (auto mode detects the codec by the key's extension). "+
		"lib is the codec library's own decode loop, the decoder s3io uses, without Beam: loop2's SDK GET loop over the same objects from the same server "+
		"(so both pay the same loopback fetch, on the cores the server also uses), two objects fetched and decoded at once, one goroutine each, newlines counted. "+
		"MB/s are decompressed bytes per second of the child's wall time. ", float64(o.codecSize)/(1<<20), float64(o.objectSize)/(1<<20))
	if ref != "" {
		fmt.Fprintf(w, "\"÷ plain\" divides s3io by s3io reading %s/, the same records uncompressed.", ref)
	}
	w.WriteString("\n\n")
	w.WriteString(row("codec", "written by", "stored MB", "ratio", "s3io MB/s", "lib MB/s", "s3io ÷ lib", "target", "s3io ÷ plain", "target", "met", "check"))
	w.WriteString("|---|---|---:|---:|---:|---:|---:|---|---:|---|---|---|\n")
	plain := b.cell(ref, variantS3io).stats().mbps
	for _, name := range o.codecs {
		c, p := codecByName(name), codecPrefix(name)
		s3, lib := b.cell(p, variantS3io), b.cell(p, variantLib)
		sm, lm := s3.stats().mbps, lib.stats().mbps
		stored, ratio := "—", "—"
		if d := b.data[p]; d != nil {
			stored, ratio = fmt.Sprintf("%.1f", float64(d.StoredBytes)/1e6), fmt.Sprintf("%.2f", float64(d.DecompressedBytes)/float64(max(d.StoredBytes, 1)))
		}
		xLib, xPlain, tLib, tPlain, met := "—", "—", "—", "—", "—"
		if sm > 0 && lm > 0 {
			xLib = fmt.Sprintf("%.2f", sm/lm)
		}
		if sm > 0 && plain > 0 && c.target == "plain" {
			xPlain = fmt.Sprintf("%.2f", sm/plain)
		}
		switch c.target {
		case "lib":
			tLib = fmt.Sprintf("≥ %.2f", targetLib)
			if sm > 0 && lm > 0 {
				met = map[bool]string{true: "yes", false: "**no**"}[sm/lm >= targetLib]
			}
		case "plain":
			tPlain = fmt.Sprintf("≥ %.2f", targetPlain)
			if sm > 0 && plain > 0 {
				met = map[bool]string{true: "yes", false: "**no**"}[sm/plain >= targetPlain]
			}
		}
		check := "ok"
		for _, cl := range []*cell{s3, lib} {
			switch {
			case !cl.ran():
			case len(cl.ok) == 0:
				check = cl.variant + ": no run succeeded"
			case !cl.complete():
				check = cl.variant + ": " + cl.checkText()
			}
			if check != "ok" {
				break
			}
		}
		w.WriteString(row(name, c.writer, stored, ratio, mbpsText(s3), mbpsText(lib), xLib, tLib, xPlain, tPlain, met, check))
	}
	if ref != "" && !slices.Contains(o.codecs, codecPlain) {
		c := b.cell(ref, variantS3io)
		check := "ok"
		if c.ran() && (len(c.ok) == 0 || !c.complete()) {
			check = "s3io: no complete run"
		}
		stored := "—"
		if d := b.data[ref]; d != nil {
			stored = fmt.Sprintf("%.1f", float64(d.StoredBytes)/1e6)
		}
		w.WriteString(row(ref+" (plain reference)", "uncompressed", stored, "1.00", mbpsText(c), "—", "—", "—", "1.00", "—", "—", check))
	}
}

// mbpsText is a cell's median MB/s with its range, or "—" without a successful run.
func mbpsText(c *cell) string {
	if len(c.ok) == 0 {
		return "—"
	}
	s := c.stats()
	return fmt.Sprintf("%.0f [%.0f–%.0f]", s.mbps, s.lo, s.hi)
}
