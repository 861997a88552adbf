// Command s3io-plan previews what an s3io backfill would read, before anyone pays for the
// read: it lists and packs the prefix with the very planner the pipeline uses
// (s3io.PlanDescriptors), so what it prints is the plan a Read would get, and summarises it
// on one screen, or as JSON with --json.
//
//	go run ./cmd/s3io-plan --bucket B --prefix P [--match GLOB] [--top N] [--json] [...]
//
// Credentials come from the standard AWS chain. A flag that cannot work exits with status 2
// and names the flag; a failure to list exits with status 1.
package main

import (
	"container/heap"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spate-io/beam-s3/s3io"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "s3io-plan:", err)
		var ue usageError
		if errors.As(err, &ue) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

// usageError marks errors in the command line, which exit with status 2 as flag's do.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// options is the parsed command line.
type options struct {
	cfg    s3io.Config
	top    int
	asJSON bool
}

func parseFlags(args []string, stdout io.Writer) (*options, error) {
	o := &options{}
	c := &o.cfg
	fs := flag.NewFlagSet("s3io-plan", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are returned to main, -h prints to stdout
	fs.StringVar(&c.Bucket, "bucket", "", "bucket to plan (required)")
	fs.StringVar(&c.Prefix, "prefix", "", "key prefix to plan; empty plans the whole bucket")
	fs.StringVar(&c.Match, "match", "", "glob the whole key must match (*, ?, **, [...])")
	fs.StringVar(&c.StartAfter, "start-after", "", "plan only keys sorting strictly after this one")
	fs.Func("modified-after", "keep objects last modified at or after this RFC 3339 time", timeFlag(&c.ModifiedAfter))
	fs.Func("modified-before", "keep objects last modified before this RFC 3339 time", timeFlag(&c.ModifiedBefore))
	fs.BoolVar(&c.SkipArchived, "skip-archived", false, "leave out GLACIER/DEEP_ARCHIVE objects that are not restored")
	fs.IntVar(&c.ListParallelism, "list-parallelism", 0, "LIST requests in flight (0: s3io's default)")
	fs.Func("split-target", "stored bytes per descriptor, e.g. 64MiB (0: default)", sizeFlag(&c.SplitTargetBytes))
	fs.IntVar(&c.MaxSplitMembers, "max-split-members", 0, "objects per descriptor at most (0: default)")
	fs.StringVar(&c.Framer, "framer", "", "record framer: lines (default), ndjson, csv, json-array, u32be")
	fs.Func("compression", "auto (default), none, or a codec: gzip, zstd, bzip2, xz, lz4, snappy, zlib, deflate, brotli", func(s string) error {
		c.Compression = s3io.Compression(s)
		return nil
	})
	fs.StringVar(&c.Endpoint, "endpoint", "", "URL of an S3-compatible service")
	fs.StringVar(&c.Region, "region", "", "bucket region (default: from the AWS configuration)")
	fs.BoolVar(&c.UsePathStyle, "path-style", false, "address the bucket as endpoint/bucket")
	fs.BoolVar(&c.RequesterPays, "requester-pays", false, "acknowledge paying for a requester-pays bucket")
	fs.StringVar(&c.ExpectedBucketOwner, "expected-bucket-owner", "", "12-digit account that must own the bucket")
	fs.Func("part-bytes", "size of one ranged GET of a Read, e.g. 2MiB (0: default)", sizeFlag(&c.PartBytes))
	fs.IntVar(&o.top, "top", 10, "how many of the largest objects to show")
	fs.BoolVar(&o.asJSON, "json", false, "print the report as JSON")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stdout, "usage: s3io-plan --bucket B [--prefix P] [--match GLOB] [flags]")
			fs.SetOutput(stdout)
			fs.PrintDefaults()
			return nil, err
		}
		return nil, usageError{fmt.Errorf("%w (-h lists the flags)", err)}
	}
	if fs.NArg() > 0 {
		return nil, usageError{fmt.Errorf("unexpected argument %q: everything is given by flags (-h lists them)", fs.Arg(0))}
	}
	if o.top < 0 {
		return nil, usageError{fmt.Errorf("--top is %d; it must be 0 or more", o.top)}
	}
	if err := c.Validate(); err != nil {
		return nil, usageError{fmt.Errorf("%s: %w", flagOf(err), err)}
	}
	return o, nil
}

// flagOf names the flag behind the Config field a Validate error names first, so that the
// message speaks the command line's language as well as the library's.
func flagOf(err error) string {
	fields := map[string]string{
		"Bucket": "bucket", "Prefix": "prefix", "Match": "match", "StartAfter": "start-after",
		"ModifiedAfter": "modified-after", "ModifiedBefore": "modified-before",
		"ListParallelism": "list-parallelism", "SplitTargetBytes": "split-target",
		"MaxSplitMembers": "max-split-members", "Framer": "framer", "Compression": "compression",
		"Endpoint": "endpoint", "Region": "region", "ExpectedBucketOwner": "expected-bucket-owner",
		"PartBytes": "part-bytes",
	}
	msg, best, at := err.Error(), "invalid configuration", len(err.Error())
	for field, name := range fields {
		if i := strings.Index(msg, "Config."+field+" "); i >= 0 && i < at {
			best, at = "invalid --"+name, i
		}
	}
	return best
}

func timeFlag(t *time.Time) func(string) error {
	return func(s string) (err error) {
		*t, err = time.Parse(time.RFC3339, s)
		if err != nil {
			return fmt.Errorf("%q is not an RFC 3339 time such as 2024-05-01T00:00:00Z", s)
		}
		return nil
	}
}

// sizeFlag parses sizes written for people: a number of bytes with an optional binary
// (KiB, MiB, GiB, TiB) or decimal (KB, MB, GB, TB) suffix. Negative sizes are left to
// Validate, which explains them.
func sizeFlag(n *int64) func(string) error {
	units := []struct {
		suffix string
		mult   float64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
		{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"B", 1}}
	return func(s string) error {
		t, mult := strings.TrimSpace(s), 1.0
		for _, u := range units { // longest suffixes first: "MiB" must not be read as "B"
			if k := len(t) - len(u.suffix); k > 0 && strings.EqualFold(t[k:], u.suffix) {
				t, mult = strings.TrimSpace(t[:k]), u.mult
				break
			}
		}
		v, err := strconv.ParseFloat(t, 64)
		if err != nil || v*mult > 1<<62 {
			return fmt.Errorf("%q is not a size such as 65536, 64MiB or 1.5GB", s)
		}
		*n = int64(v * mult)
		return nil
	}
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	o, err := parseFlags(args, stdout)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	sum := newSummary(o.cfg, o.top)
	began := time.Now()
	st, err := s3io.PlanDescriptors(ctx, o.cfg, func(d s3io.SplitDescriptor) error {
		sum.add(d)
		return nil
	})
	if err != nil {
		return err
	}
	r := sum.report(o.cfg, st, time.Since(began))
	if o.asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	return r.print(stdout)
}

// rampParts and startPartBytes mirror s3io/internal/fetch/fetcher.go: the first parts a
// reader issues after it was idle are this small (capped at PartBytes), so that reading
// starts after little more than one request's latency, and later ones a sixteenth of its
// fetch budget (which starts at 32 MiB), or more when connections are fast or requests wait
// long, up to PartBytes. The estimate counts parts at the starting size: more GETs than a
// read makes, unless a slow next step shrinks the budget (to 1 MiB parts at its floor).
var rampParts = [...]int64{256 << 10, 1 << 20}

const startPartBytes = 2 << 20

// partBytes is the part size the estimate counts.
func partBytes(cfg s3io.Config) int64 { return min(cfg.PartBytes, startPartBytes) }

// reservoirSize bounds the descriptor sizes kept for the medians: they are exact up to this
// many descriptors and estimated from a uniform sample (Algorithm R) beyond.
const reservoirSize = 10000

type descSample struct {
	bytes   int64
	members int
}

// summary accumulates the streamed descriptors in bounded memory: counters, the reservoir
// and a top-N heap; no descriptor is kept.
type summary struct {
	cfg            s3io.Config
	descs          int64
	minB, maxB     int64
	minM, maxM     int
	sample         []descSample
	rng            *rand.Rand
	mix            map[string]*Mix
	top            objHeap
	topN           int
	gets, transfer int64
}

func newSummary(cfg s3io.Config, topN int) *summary {
	cfg = cfg.WithDefaults()
	// A fixed seed: the same plan gives the same report.
	return &summary{cfg: cfg, rng: rand.New(rand.NewPCG(1, 2)), mix: map[string]*Mix{}, topN: topN}
}

func (s *summary) add(d s3io.SplitDescriptor) {
	b, m := d.Size(), len(d.Members)
	if s.descs == 0 || b < s.minB {
		s.minB = b
	}
	if s.descs == 0 || m < s.minM {
		s.minM = m
	}
	s.maxB, s.maxM = max(s.maxB, b), max(s.maxM, m)
	s.descs++
	if len(s.sample) < reservoirSize {
		s.sample = append(s.sample, descSample{b, m})
	} else if i := s.rng.Int64N(s.descs); i < reservoirSize {
		s.sample[i] = descSample{b, m}
	}
	// The fetcher of one restriction, which is one descriptor unless a runner splits it,
	// issues parts in member order and ramps up only at its start.
	issued := 0
	for _, mb := range d.Members {
		if mb.Start == 0 { // a whole object or its first segment: each object counted once
			s.object(mb)
		}
		if mb.Archived != "" {
			continue // never requested
		}
		from, end := int64(0), mb.Size
		if mb.End != 0 {
			// A segment is read from the byte before it (does a record start on its first
			// byte?) to 64 KiB past it (the record straddling its end), as s3io/sdf.go does.
			from, end = max(mb.Start-1, 0), min(mb.End+64<<10, mb.Size)
		}
		s.gets += parts(end-from, partBytes(s.cfg), &issued)
		s.transfer += end - from
	}
}

// parts counts the GETs that read n bytes, as s3io/internal/fetch/fetcher.go cuts them; issued counts the
// parts its restriction issued before. An empty object still costs one GET (its pin is
// checked).
func parts(n, partBytes int64, issued *int) int64 {
	var gets int64
	for (gets == 0 || n > 0) && *issued < len(rampParts) {
		n -= min(rampParts[*issued], partBytes, n)
		*issued++
		gets++
	}
	if gets == 0 && n == 0 {
		return 1
	}
	return gets + (n+partBytes-1)/partBytes
}

// object counts one planned object in the compression mix and the top N.
func (s *summary) object(m s3io.Member) {
	name := compressionByName(s.cfg.Compression, m.Key)
	if s.mix[name] == nil {
		s.mix[name] = &Mix{Compression: name}
	}
	s.mix[name].Objects++
	s.mix[name].Bytes += m.Size
	if s.topN == 0 {
		return
	}
	o := Object{Key: m.Key, Size: m.Size, Archived: m.Archived}
	if len(s.top) < s.topN {
		heap.Push(&s.top, o)
	} else if objLess(s.top[0], o) {
		s.top[0] = o
		heap.Fix(&s.top, 0)
	}
}

// compressionByName is the decision auto mode makes from the key alone; "other" objects are
// probed for magic bytes when read, and otherwise read as they are.
func compressionByName(mode s3io.Compression, key string) string {
	if f := s3io.FormatByName(mode, key); f != "" {
		return f
	}
	return "other"
}

// Object is one of the largest planned objects.
type Object struct {
	Key      string `json:"key"`
	Size     int64  `json:"size"`
	Archived string `json:"archived,omitempty"`
}

// objLess orders objects by size, and a larger key first among equals, so that the heap
// keeps the largest objects and, among ties, the first keys.
func objLess(a, b Object) bool { return a.Size < b.Size || a.Size == b.Size && a.Key > b.Key }

type objHeap []Object

func (h objHeap) Len() int           { return len(h) }
func (h objHeap) Less(i, j int) bool { return objLess(h[i], h[j]) }
func (h objHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *objHeap) Push(x any)        { *h = append(*h, x.(Object)) }
func (h *objHeap) Pop() any          { o := (*h)[len(*h)-1]; *h = (*h)[:len(*h)-1]; return o }

// Mix is the objects one compression applies to.
type Mix struct {
	Compression string `json:"compression"` // a codec, tar, zip, unsupported, or other: none or by magic bytes
	Objects     int64  `json:"objects"`
	Bytes       int64  `json:"bytes"`
}

// Report is the whole preview; --json prints it as is.
type Report struct {
	Bucket           string           `json:"bucket"`
	Prefix           string           `json:"prefix"`
	ListPrefix       string           `json:"list_prefix"`
	KeysListed       int64            `json:"keys_listed"`
	ListRequests     int64            `json:"list_requests"`
	WallSeconds      float64          `json:"wall_seconds"`
	KeysPerSecond    float64          `json:"keys_per_second"`
	Objects          int64            `json:"objects"`
	Bytes            int64            `json:"bytes"`
	Descriptors      Descriptors      `json:"descriptors"`
	Segments         int64            `json:"segments"`
	CompressionMode  string           `json:"compression_mode"`
	Compression      []Mix            `json:"compression"`
	Framer           string           `json:"framer"`
	StorageClasses   map[string]int64 `json:"storage_classes"`
	Archived         int64            `json:"archived"`
	SkippedArchived  int64            `json:"skipped_archived"`
	SkipArchivedFlag bool             `json:"skip_archived_flag"` // archived objects are left out, not failed
	Skipped          int64            `json:"skipped"`
	Largest          []Object         `json:"largest"`
	Estimate         Estimate         `json:"estimate"`
}

// Descriptors summarises the descriptors' stored bytes and member counts.
type Descriptors struct {
	Count         int64 `json:"count"`
	MinBytes      int64 `json:"min_bytes"`
	MedianBytes   int64 `json:"median_bytes"`
	MaxBytes      int64 `json:"max_bytes"`
	MinMembers    int   `json:"min_members"`
	MedianMembers int   `json:"median_members"`
	MaxMembers    int   `json:"max_members"`
	MedianExact   bool  `json:"median_exact"` // false: from a uniform sample of 10000
}

// Estimate is the modelled cost of reading the plan once, without failures or retries.
type Estimate struct {
	GetRequests      int64 `json:"get_requests"`
	PartBytes        int64 `json:"part_bytes"`
	PlanProbeGets    int64 `json:"plan_probe_gets"`  // GETs of planning (PlanStats.ProbeRequests), not in GetRequests
	PlanProbeBytes   int64 `json:"plan_probe_bytes"` // what they asked for (PlanStats.ProbeBytes)
	ListRequests     int64 `json:"list_requests"`
	BytesTransferred int64 `json:"bytes_transferred"`
}

func (s *summary) report(cfg s3io.Config, st s3io.PlanStats, wall time.Duration) *Report {
	r := &Report{
		Bucket: cfg.Bucket, Prefix: cfg.Prefix, ListPrefix: st.ListPrefix,
		KeysListed: st.KeysListed, ListRequests: st.ListRequests, WallSeconds: wall.Seconds(),
		Objects: st.Objects, Bytes: st.Bytes, Segments: st.Segments,
		CompressionMode: string(s.cfg.Compression), Framer: s.cfg.Framer,
		StorageClasses: st.StorageClasses, Archived: st.Archived, SkippedArchived: st.SkippedArchived,
		SkipArchivedFlag: cfg.SkipArchived,
		Skipped:          st.Skipped, Largest: []Object{}, Compression: []Mix{},
		Estimate: Estimate{GetRequests: s.gets, PartBytes: partBytes(s.cfg), PlanProbeGets: st.ProbeRequests, PlanProbeBytes: st.ProbeBytes,
			ListRequests: st.ListRequests, BytesTransferred: s.transfer},
	}
	if wall > 0 {
		r.KeysPerSecond = float64(st.KeysListed) / wall.Seconds()
	}
	if r.StorageClasses == nil {
		r.StorageClasses = map[string]int64{}
	}
	r.Descriptors = Descriptors{Count: s.descs, MinBytes: s.minB, MaxBytes: s.maxB,
		MinMembers: s.minM, MaxMembers: s.maxM, MedianExact: s.descs <= reservoirSize}
	if len(s.sample) > 0 {
		b := make([]int64, len(s.sample))
		m := make([]int, len(s.sample))
		for i, d := range s.sample {
			b[i], m[i] = d.bytes, d.members
		}
		slices.Sort(b)
		slices.Sort(m)
		r.Descriptors.MedianBytes, r.Descriptors.MedianMembers = b[(len(b)-1)/2], m[(len(m)-1)/2]
	}
	for _, name := range []string{"gzip", "zstd", "none", "other"} {
		if x := s.mix[name]; x != nil {
			r.Compression = append(r.Compression, *x)
		}
	}
	for s.top.Len() > 0 {
		r.Largest = append(r.Largest, heap.Pop(&s.top).(Object))
	}
	slices.Reverse(r.Largest)
	return r
}

func (r *Report) print(out io.Writer) error {
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	p := func(format string, a ...any) { fmt.Fprintf(w, format+"\n", a...) }
	p("plan\ts3://%s/%s (LIST prefix %q)", r.Bucket, r.Prefix, r.ListPrefix)
	p("listed\t%d keys with %d LIST requests in %v (%.0f keys/s)", r.KeysListed, r.ListRequests,
		time.Duration(r.WallSeconds*float64(time.Second)).Round(time.Millisecond), r.KeysPerSecond)
	p("objects\t%d, %s", r.Objects, human(r.Bytes))
	d := r.Descriptors
	how := "exact median"
	if !d.MedianExact {
		how = "median of a 10000-descriptor sample"
	}
	p("descriptors\t%d: bytes %s / %s / %s, members %d / %d / %d (min / median / max; %s)", d.Count,
		human(d.MinBytes), human(d.MedianBytes), human(d.MaxBytes), d.MinMembers, d.MedianMembers, d.MaxMembers, how)
	p("segments\t%d", r.Segments)
	p("compression\t%s", r.CompressionMode)
	for _, m := range r.Compression {
		note := "by its name"
		switch m.Compression {
		case "unsupported":
			note = "named as a format s3io refuses (.7z, .rar, .Z, …): each will be a Failure \"unsupported\""
		case "other":
			note = "none, or a format found by its magic bytes: auto mode probes these when read"
		}
		if r.CompressionMode != string(s3io.CompressionAuto) {
			note = "as --compression says"
		}
		p("  %s\t%d objects, %s  %s", m.Compression, m.Objects, human(m.Bytes), note)
	}
	p("framer\t%s", r.Framer)
	classes := make([]string, 0, len(r.StorageClasses))
	for c, n := range r.StorageClasses {
		classes = append(classes, fmt.Sprintf("%s %d", c, n))
	}
	slices.Sort(classes)
	p("storage classes\t%s", strings.Join(classes, ", "))
	if r.SkipArchivedFlag {
		p("archived\t%d left out by --skip-archived", r.SkippedArchived)
	} else {
		p("archived\t%d planned: each will be a Failure \"archived\", without a request (--skip-archived leaves them out)", r.Archived)
	}
	p("skipped\t%d left out by --match or the time window", r.Skipped)
	if len(r.Largest) > 0 {
		p("largest\t%d by size", len(r.Largest))
		for _, o := range r.Largest {
			if o.Archived != "" {
				o.Key += " (archived: " + o.Archived + ")"
			}
			p("  %s\t%s", human(o.Size), o.Key)
		}
	}
	e := r.Estimate
	p("Read estimate\ts3io's fetcher modelled per descriptor, without retries or runner splits")
	p("  GET requests\t%d (parts of %s, the starting size: larger as a reader's fetch budget grows or the network allows; each descriptor's first two of 256 KiB and 1 MiB)", e.GetRequests, human(e.PartBytes))
	p("  bytes transferred\t%s", human(e.BytesTransferred))
	// Read plans again on a worker, so the planning requests are made twice; ReadSplits of a
	// stored plan makes them once.
	p("  LIST requests\t%d, made by this preview and again when Read plans", e.ListRequests)
	if e.PlanProbeGets > 0 {
		p("  probe GETs\t%d, %s (where can a large object be cut into segments: magic bytes, unit starts, seek tables), made here and again when Read plans", e.PlanProbeGets, human(e.PlanProbeBytes))
	}
	return w.Flush()
}

// human prints bytes in binary units, adding the exact count when they are rounded.
func human(n int64) string {
	if n < 1<<10 {
		return fmt.Sprintf("%d B", n)
	}
	unit, mult := "", 1.0
	for _, u := range []string{"KiB", "MiB", "GiB", "TiB", "PiB"} {
		if unit, mult = u, mult*1024; float64(n)/mult < 1024 {
			break
		}
	}
	s := fmt.Sprintf("%.1f %s", float64(n)/mult, unit)
	if r, _ := strconv.ParseFloat(strings.Fields(s)[0], 64); int64(r*mult) != n {
		s += fmt.Sprintf(" (%d B)", n)
	}
	return s
}
