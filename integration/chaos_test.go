package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/textio"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/spate-io/beam-s3/internal/faultproxy"
	"github.com/spate-io/beam-s3/internal/s3test"
	"github.com/spate-io/beam-s3/internal/versitygw"
	"github.com/spate-io/beam-s3/s3io"
)

func init() {
	register.Function1x1(failureString)
}

func failureString(f s3io.Failure) string { return strings.ReplaceAll(f.String(), "\n", " ") }

// The chaos soak's reader configuration: the timeout the injected stalls outlast, the
// attempts the injected faults must never exhaust, and a segment size that cuts the large
// plain objects into several segments.
const (
	chaosReadTimeout = 400 * time.Millisecond
	chaosStall       = 1500 * time.Millisecond
	chaosMaxDelay    = 150 * time.Millisecond // latency spikes stay well under the timeout
	chaosMaxAttempts = 10
	chaosSplitTarget = 2 << 20
	// At most chaosMaxPerKey faults (of any kind) hit the GETs of one key, and at most
	// chaosInARow in a row the GETs of one key and Range. One request therefore fails at most
	// chaosInARow < chaosMaxAttempts attempts, and one object, segment or part sees at most
	// chaosMaxPerKey broken or stalled bodies, fewer than the chaosMaxAttempts-1 resumes s3io
	// allows: every fault is transient, and a Failure is a bug.
	chaosMaxPerKey = 4
	chaosInARow    = 2
)

// chaosRates are the faults' probabilities per GET of the small and medium objects: some 180
// GETs get about 2 SlowDowns, 9 InternalErrors, 14 resets, 7 stalls and 11 latency spikes.
// SlowDown is the dearest: the SDK backs off up to a second on it, and an adaptive retryer
// slows the whole worker down for a while.
var chaosRates = faultproxy.Rates{
	SlowDown:      0.01,
	InternalError: 0.05,
	Reset:         0.08,
	Stall:         0.04,
	Delay:         0.06,

	StallFor:       chaosStall,
	MaxDelay:       chaosMaxDelay,
	MaxConsecutive: chaosInARow,
	MaxPerKey:      chaosMaxPerKey,
}

// chaosLargeRates fault about half the GETs of the large objects — their segments, parts,
// windows past a segment's end, and resumes — within the same bounds per key and Range.
var chaosLargeRates = faultproxy.Rates{
	SlowDown:      0.03,
	InternalError: 0.10,
	Reset:         0.15,
	Stall:         0.10,
	Delay:         0.10,

	StallFor:       chaosStall,
	MaxDelay:       chaosMaxDelay,
	MaxConsecutive: chaosInARow,
	MaxPerKey:      chaosMaxPerKey,
}

// chaosDecider decides the fault of each object GET: the scripted keys get their fault on
// their first GET and no other, so that every kind of fault is injected whatever the seed;
// the large objects get chaosLargeRates and the others chaosRates.
func chaosDecider(seed uint64, scripted map[string]faultproxy.Fault) func(key, rng string, n int) faultproxy.Fault {
	small, large := faultproxy.Chaos(seed, chaosRates), faultproxy.Chaos(seed, chaosLargeRates)
	return func(key, rng string, n int) faultproxy.Fault {
		if act, ok := scripted[key]; ok {
			if n == 1 {
				return act
			}
			return faultproxy.Fault{}
		}
		if strings.HasPrefix(key, "c/large/") {
			return large(key, rng, n)
		}
		return small(key, rng, n)
	}
}

// envUint reads a non-negative integer from the environment, or def when it is unset.
func envUint(t *testing.T, name string, def uint64) uint64 {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		t.Fatalf("%s=%q: want a non-negative integer", name, v)
	}
	return n
}

// TestChaosSoak reads a seeded mixed prefix — many small objects, multi-member gzip and
// multi-frame zstd, large plain objects the planner cuts into segments (with records that
// straddle the segment boundaries), large compressed objects, zero-byte objects, objects
// without a final newline — from a versitygw process through the fault proxy, which injects
// 503 SlowDown, 500 InternalError, connection resets mid-body, stalls longer than the
// ReadTimeout and latency spikes into object GETs at random, ranged ones included. Every
// fault is transient (see chaosMaxPerKey), so the output must be exactly the seeded multiset
// of records and there must be no Failure.
//
// S3IO_CHAOS_SEED picks another seed (the seed is logged: a failure is reproducible with it)
// and S3IO_CHAOS_SCALE multiplies the number of objects.
func TestChaosSoak(t *testing.T) {
	start := time.Now()
	seed := envUint(t, "S3IO_CHAOS_SEED", 1)
	scale := int(envUint(t, "S3IO_CHAOS_SCALE", 1))
	if scale < 1 {
		t.Fatalf("S3IO_CHAOS_SCALE=%d: want at least 1", scale)
	}
	t.Logf("chaos seed %d, scale %d (rerun with S3IO_CHAOS_SEED=%d S3IO_CHAOS_SCALE=%d)", seed, scale, seed, scale)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("reproduce with: S3IO_CHAOS_SEED=%d S3IO_CHAOS_SCALE=%d go test -run TestChaosSoak ./integration/", seed, scale)
		}
	})

	g := versitygw.Start(t)
	p := faultproxy.New(t, g.URL)
	const bucket = "chaos"
	g.CreateBucket(t, bucket)

	ds := buildChaosPrefix(seed, scale)
	etags := putAll(t, g, bucket, ds.objects)
	t.Logf("seeded %d objects (%s), %.1f MiB stored, %d records, in %v",
		len(ds.objects), ds.summary(), float64(ds.stored)/(1<<20), len(ds.want), time.Since(start).Round(time.Millisecond))

	p.DecideGet = chaosDecider(seed, ds.scripted)
	cfg := s3io.Config{
		Bucket: bucket, Prefix: "c/", Endpoint: p.URL, UsePathStyle: true,
		SplitTargetBytes: chaosSplitTarget,
		MaxAttempts:      chaosMaxAttempts,
		ReadTimeout:      chaosReadTimeout,
	}
	dir := t.TempDir()
	recordsOut, failuresOut := filepath.Join(dir, "records.txt"), filepath.Join(dir, "failures.txt")
	pl, s := beam.NewPipelineWithRoot()
	records, failures := s3io.ReadWithFailures(s, cfg)
	textio.Write(s, recordsOut, beam.ParDo(s, s3test.RecordString, records))
	textio.Write(s, failuresOut, beam.ParDo(s, failureString, failures))

	runner := *ptest.Runner
	if runner == "" {
		runner = ptest.DefaultRunner()
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(scale)*3*time.Minute)
	defer cancel()
	readStart := time.Now()
	pr, err := beam.Run(ctx, runner, pl)
	readTime := time.Since(readStart)
	injected := p.Injected()
	log := p.Log()
	t.Logf("read in %v: %d object GETs, at most %d in flight; injected %s",
		readTime.Round(time.Millisecond), len(log), p.MaxInFlight(), faultproxy.FormatCounts(injected))
	if path := os.Getenv("S3IO_CHAOS_LOG"); path != "" {
		writeGetLog(t, path, log, readStart)
	}
	if err != nil {
		t.Fatalf("pipeline failed: %v\nGETs still unanswered: %v", err, unanswered(log))
	}
	c := s3test.Counters(pr, s3io.MetricsNamespace)
	t.Logf("counters %v", c)

	got := s3test.ReadLines(t, recordsOut+"*")
	fails := s3test.ReadLines(t, failuresOut+"*")
	for _, f := range fails {
		t.Errorf("Failure although every fault was transient: %s", f)
		if key := failureKey(f); key != "" {
			t.Logf("GETs of %s:\n%s", key, describeGets(log, key))
		}
	}
	compareRecords(t, got, ds.want, log)

	if c["objects_failed"] != 0 {
		t.Errorf("objects_failed = %d, want 0", c["objects_failed"])
	}
	if c["segments_planned"] < 2 {
		t.Errorf("segments_planned = %d: the large plain objects were not segmented", c["segments_planned"])
	}
	for _, kind := range []string{"503 SlowDown", "500 InternalError", "reset", "stall", "delay"} {
		if injected[kind] == 0 {
			t.Errorf("no %q was injected: the soak did not test it (seed %d)", kind, seed)
		}
	}
	ranged := 0 // faulted ranged GETs of large objects: segments, parts, windows, resumes
	perKey := map[string]int{}
	for _, gt := range log {
		perKey[gt.Key] += len(gt.Faults())
		if strings.HasPrefix(gt.Key, "c/large/") && gt.Range != "" && gt.Range != "bytes=0-3" && len(gt.Faults()) > 0 {
			ranged++
		}
		// versitygw itself answers every pinned GET of an unchanged object with its bytes: a
		// 412, 416 or 404 here is a wrong pin or a Range past the object's end.
		if !gt.Injected && gt.Status != 0 && gt.Status != 200 && gt.Status != 206 {
			t.Errorf("GET %s %q was answered %d by versitygw", gt.Key, gt.Range, gt.Status)
		}
	}
	t.Logf("%d faults hit ranged GETs of the large objects; scripted faults on %v", ranged, slices.Sorted(maps.Keys(ds.scripted)))
	if ranged == 0 {
		t.Errorf("no fault hit a ranged GET of a large object (seed %d)", seed)
	}
	for key, n := range perKey { // the test's own promise that every fault is transient
		if n > chaosMaxPerKey {
			t.Errorf("%s got %d faults, more than the %d per key the soak promises", key, n, chaosMaxPerKey)
		}
	}
	var unpinned []string
	for _, gt := range log {
		if gt.IfMatch != etags[gt.Key] {
			unpinned = append(unpinned, fmt.Sprintf("%s %q If-Match %q (want %q)", gt.Key, gt.Range, gt.IfMatch, etags[gt.Key]))
		}
	}
	if len(unpinned) > 0 {
		t.Errorf("%d GETs not pinned to the listed ETag, e.g. %v", len(unpinned), unpinned[:min(len(unpinned), 5)])
	}
	t.Logf("total %v", time.Since(start).Round(time.Millisecond))
}

// chaosObject is one object of the chaos prefix.
type chaosObject struct {
	key  string
	data []byte
	kind string // for the summary
}

type chaosDataset struct {
	objects []chaosObject
	want    []string
	stored  int64
	// scripted are small objects whose first GET gets one fault of each kind.
	scripted map[string]faultproxy.Fault
}

func (d *chaosDataset) add(key, kind string, data []byte, recs []string) {
	d.objects = append(d.objects, chaosObject{key: key, data: data, kind: kind})
	d.want = append(d.want, recs...)
	d.stored += int64(len(data))
}

func (d *chaosDataset) summary() string {
	n := map[string]int{}
	for _, o := range d.objects {
		n[o.kind]++
	}
	return faultproxy.FormatCounts(n)
}

// recordWriter writes the unique, checkable records of one object: {"k":key,"i":index,
// "p":payload}, with a random payload of base64 letters that compresses poorly, as real
// data would.
type recordWriter struct {
	key  string
	rnd  *rand.Rand
	buf  bytes.Buffer
	recs []string
	crlf bool // terminate records with CRLF (the lines framer strips the CR)
}

const payloadAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

// overhead is the length of a record of index i with an empty payload.
func (w *recordWriter) overhead() int {
	return len(fmt.Sprintf(`{"k":%q,"i":%d,"p":""}`, w.key, len(w.recs)))
}

func (w *recordWriter) terminator() string {
	if w.crlf {
		return "\r\n"
	}
	return "\n"
}

// record appends a record with a payload of n bytes, terminated unless last is set.
func (w *recordWriter) record(n int, unterminated bool) {
	payload := make([]byte, n)
	var bits uint64
	for i := range payload {
		if i%10 == 0 {
			bits = w.rnd.Uint64()
		}
		payload[i] = payloadAlphabet[bits&63]
		bits >>= 6
	}
	r := fmt.Sprintf(`{"k":%q,"i":%d,"p":"%s"}`, w.key, len(w.recs), payload)
	w.recs = append(w.recs, r)
	w.buf.WriteString(r)
	if !unterminated {
		w.buf.WriteString(w.terminator())
	}
}

// records appends n records of 20 to 300 payload bytes.
func (w *recordWriter) records(n int) {
	for range n {
		w.record(20+w.rnd.IntN(281), false)
	}
}

// until appends ordinary records while they end before at-slack.
func (w *recordWriter) until(at int) {
	const slack = 2000
	for w.buf.Len() < at-slack {
		w.record(20+w.rnd.IntN(281), false)
	}
}

// endAt appends one record that ends exactly at byte end (terminator included, unless
// unterminated), which must be 1,000 to 2,000 bytes ahead.
func (w *recordWriter) endAt(end int, unterminated bool) {
	n := end - w.buf.Len() - w.overhead()
	if !unterminated {
		n -= len(w.terminator())
	}
	w.record(n, unterminated)
}

func (w *recordWriter) text() string { return w.buf.String() }

// cuts returns the text cut at k-1 random byte offsets: gzip members or zstd frames whose
// boundaries fall inside records.
func cuts(rnd *rand.Rand, text string, k int) []string {
	if k <= 1 || len(text) < k {
		return []string{text}
	}
	offs := []int{0, len(text)}
	for range k - 1 {
		offs = append(offs, 1+rnd.IntN(len(text)-1))
	}
	slices.Sort(offs)
	offs = slices.Compact(offs)
	var out []string
	for i := 1; i < len(offs); i++ {
		out = append(out, text[offs[i-1]:offs[i]])
	}
	return out
}

func zstdFrames(parts []string) []byte {
	var out []byte
	for _, p := range parts {
		out = append(out, s3test.Zstd(p)...)
	}
	return out
}

// bigPlain builds an uncompressed object of exactly size bytes whose segments (as the planner
// cuts it with target segment bytes: n = ceil(size/target) segments, boundaries at
// size*i/n) meet records in every way a segment reader must handle: a record that ends right
// before a boundary, a record that straddles one by more than the 64 KiB a segment reads past
// its end at first, and a terminator that sits on the boundary (for CRLF objects, its CR
// before and its LF at it).
func bigPlain(rnd *rand.Rand, key string, size, target int, crlf, finalNewline bool) (string, []string) {
	w := &recordWriter{key: key, rnd: rnd, crlf: crlf}
	n := (size + target - 1) / target
	for i := 1; i < n; i++ {
		b := size * i / n
		switch i % 3 {
		case 0: // the record before the boundary ends right at it
			w.until(b)
			w.endAt(b, false)
		case 1: // a long record starts just before the boundary and runs 80 to 200 KiB past it
			w.until(b - 10_000)
			w.record(b-w.buf.Len()+80<<10+rnd.IntN(120<<10), false)
		case 2: // the boundary falls on the terminator (CRLF: the CR before it, the LF at it)
			w.until(b)
			w.endAt(b+1, false)
		}
	}
	w.until(size)
	w.endAt(size, !finalNewline)
	return w.text(), w.recs
}

// buildChaosPrefix builds the chaos prefix for seed, scale times over.
func buildChaosPrefix(seed uint64, scale int) *chaosDataset {
	rnd := rand.New(rand.NewPCG(seed, 0x5eed))
	d := &chaosDataset{scripted: map[string]faultproxy.Fault{}}
	script := []faultproxy.Fault{
		{Status: 503, Code: "SlowDown"},
		{Status: 500, Code: "InternalError"},
		{ResetAt: 0.5},
		{StallAt: 0.5, Stall: chaosStall},
		{Delay: chaosMaxDelay},
	}
	scriptAt := rnd.IntN(100) // the small objects scriptAt... get the scripted faults
	writer := func(key string) *recordWriter { return &recordWriter{key: key, rnd: rnd} }

	for x := range scale {
		// Many small objects, a few KiB each: plain (some CRLF), gzip (some multi-member),
		// zstd (some multi-frame); a fifth without a final newline.
		for i := range 150 {
			key := fmt.Sprintf("c/small/%d-%03d", x, i)
			w := writer(key)
			w.crlf = rnd.IntN(4) == 0
			w.records(5 + rnd.IntN(30))
			if rnd.IntN(5) == 0 {
				w.record(10+rnd.IntN(100), true)
			}
			text := w.text()
			switch rnd.IntN(3) {
			case 0:
				d.add(key+".ndjson", "small plain", []byte(text), w.recs)
			case 1:
				d.add(key+".ndjson.gz", "small gzip", s3test.Gzip(cuts(rnd, text, 1+rnd.IntN(3))...), w.recs)
			case 2:
				d.add(key+".ndjson.zst", "small zstd", zstdFrames(cuts(rnd, text, 1+rnd.IntN(3))), w.recs)
			}
			if k := i - scriptAt; x == 0 && k >= 0 && k < len(script) {
				d.scripted[d.objects[len(d.objects)-1].key] = script[k]
			}
		}
		// Medium compressed objects, 100 to 400 KiB, with members and frames cut inside
		// records; one gzip and one zstd without an extension (found by magic bytes).
		for i := range 8 {
			key := fmt.Sprintf("c/medium/%d-%d", x, i)
			w := writer(key)
			w.records(600 + rnd.IntN(1800))
			if i%4 == 3 {
				w.record(50, true)
			}
			parts := cuts(rnd, w.text(), 2+rnd.IntN(5))
			switch i % 4 {
			case 0:
				d.add(key+".gz", "medium gzip", s3test.Gzip(parts...), w.recs)
			case 1:
				d.add(key+".zst", "medium zstd", zstdFrames(parts), w.recs)
			case 2:
				d.add(key, "medium gzip, no extension", s3test.Gzip(parts...), w.recs)
			case 3:
				d.add(key, "medium zstd, no extension", zstdFrames(parts), w.recs)
			}
		}
		// Zero-byte objects, whatever their extension, and a "folder" marker that is skipped.
		for _, ext := range []string{".ndjson", ".gz", ".zst", ""} {
			d.add(fmt.Sprintf("c/empty/%d%s", x, ext), "zero-byte", nil, nil)
		}
		d.add(fmt.Sprintf("c/folder-%d/", x), "folder marker", nil, nil)
		// Large plain objects, segmented by the planner: one of LF lines ending without a
		// newline, one of CRLF lines.
		text, recs := bigPlain(rnd, fmt.Sprintf("c/large/%d-lf.ndjson", x), 9<<20+rnd.IntN(1<<20), chaosSplitTarget, false, false)
		d.add(fmt.Sprintf("c/large/%d-lf.ndjson", x), "large plain", []byte(text), recs)
		text, recs = bigPlain(rnd, fmt.Sprintf("c/large/%d-crlf.txt", x), 6<<20+rnd.IntN(1<<20), chaosSplitTarget, true, true)
		d.add(fmt.Sprintf("c/large/%d-crlf.txt", x), "large plain", []byte(text), recs)
		// Large compressed objects, read whole however large: a multi-member gzip of about
		// 9 MiB, a multi-frame zstd of about 5 MiB, and a gzip without an extension larger
		// than the segment size, which the planner's magic-byte probe must keep whole.
		for i, o := range []struct {
			kind    string
			records int
		}{{"gz", 60000}, {"zst", 33000}, {"noext", 17000}} {
			key := fmt.Sprintf("c/large/%d-z%d", x, i)
			w := writer(key)
			w.records(o.records + rnd.IntN(o.records/10))
			parts := cuts(rnd, w.text(), 2+rnd.IntN(4))
			switch o.kind {
			case "gz":
				d.add(key+".gz", "large gzip", s3test.Gzip(parts...), w.recs)
			case "zst":
				d.add(key+".zst", "large zstd", zstdFrames(parts), w.recs)
			case "noext":
				d.add(key, "large gzip, no extension", s3test.Gzip(parts...), w.recs)
			}
		}
	}
	return d
}

// putAll uploads the objects, a few at a time, and returns their ETags by key.
func putAll(t *testing.T, g *versitygw.Gateway, bucket string, objects []chaosObject) map[string]string {
	t.Helper()
	var (
		mu    sync.Mutex
		wg    sync.WaitGroup
		errs  []error
		etags = map[string]string{}
		sem   = make(chan struct{}, 8)
	)
	for _, o := range objects {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			out, err := g.Client.PutObject(context.Background(), &s3.PutObjectInput{
				Bucket: aws.String(bucket), Key: aws.String(o.key), Body: bytes.NewReader(o.data),
			})
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Errorf("put %s: %w", o.key, err))
				return
			}
			etags[o.key] = aws.ToString(out.ETag)
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("%d uploads failed, e.g. %v", len(errs), errs[0])
	}
	return etags
}

// recordID is the identity a chaos record carries.
type recordID struct {
	K string `json:"k"`
	I int    `json:"i"`
}

// compareRecords checks got against want as multisets and, when they differ, reports the
// missing and the extra records by key, with the GETs of those keys and their faults.
func compareRecords(t *testing.T, got, want []string, log []faultproxy.Get) {
	t.Helper()
	count := map[string]int{}
	for _, r := range want {
		count[r]++
	}
	for _, r := range got {
		count[r]--
	}
	missing, extra := map[string][]int{}, map[string][]int{}
	var bad int
	for r, n := range count {
		if n == 0 {
			continue
		}
		bad++
		var id recordID
		if err := json.Unmarshal([]byte(r), &id); err != nil {
			id = recordID{K: "(not a seeded record: " + r[:min(len(r), 80)] + ")", I: -1}
		}
		for ; n > 0; n-- {
			missing[id.K] = append(missing[id.K], id.I)
		}
		for ; n < 0; n++ {
			extra[id.K] = append(extra[id.K], id.I)
		}
	}
	if bad == 0 && len(got) == len(want) {
		return
	}
	t.Errorf("the output is not the seeded multiset: %d records, want %d", len(got), len(want))
	report := func(what string, m map[string][]int) {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			idx := m[k]
			slices.Sort(idx)
			t.Errorf("%s: %d %s records, indexes %v", k, len(idx), what, idx[:min(len(idx), 20)])
			t.Logf("GETs of %s:\n%s", k, describeGets(log, k))
		}
	}
	report("missing", missing)
	report("extra", extra)
}

// describeGets lists the GETs of the object key, or of the object a record key names (a
// record's key has no extension), with what the proxy did to each.
func describeGets(log []faultproxy.Get, key string) string {
	var b strings.Builder
	for _, g := range log {
		if g.Key != key && !strings.HasPrefix(g.Key, key+".") {
			continue
		}
		fmt.Fprintf(&b, "  %s range %q: status %d, %d body bytes, faults %v\n", g.Key, g.Range, g.Status, g.Bytes, g.Faults())
	}
	return b.String()
}

// failureKey extracts the key a Failure's string names, for the GET log.
func failureKey(f string) string {
	for _, field := range strings.Fields(f) {
		if strings.HasPrefix(field, "s3://chaos/") {
			return strings.TrimRight(strings.TrimPrefix(field, "s3://chaos/"), ":,")
		}
	}
	return ""
}

// writeGetLog writes every object GET, with its timing relative to since and its faults, to
// path: S3IO_CHAOS_LOG names it, to see where a slow or failing soak spent its time.
func writeGetLog(t *testing.T, path string, log []faultproxy.Get, since time.Time) {
	var b strings.Builder
	for _, g := range log {
		end := "unanswered"
		if !g.End.IsZero() {
			end = fmt.Sprintf("%8.3fs", g.End.Sub(since).Seconds())
		}
		fmt.Fprintf(&b, "%8.3fs %s %s %q status %d, %d bytes, faults %v\n", g.Start.Sub(since).Seconds(), end, g.Key, g.Range, g.Status, g.Bytes, g.Faults())
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Errorf("S3IO_CHAOS_LOG: %v", err)
	}
}

func unanswered(log []faultproxy.Get) []string {
	var out []string
	for _, g := range log {
		if g.Status == 0 {
			out = append(out, g.Key+" "+g.Range)
		}
	}
	return out
}
