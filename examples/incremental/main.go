// Command incremental is the second pass of a backfill: it reads an S3 prefix once, then,
// after the prefix has changed a little, reads only what is new or changed, or failed the
// first time, using s3io's deterministic split IDs.
//
// Run with no flags, it starts an in-process S3-compatible server (gofakes3), seeds a
// prefix with 400 small NDJSON objects (plain, gzip and zstd), and runs two pipelines on
// the in-process prism runner:
//
//	go run ./examples/incremental
//
// Pass 1 plans the prefix with s3io.Plan, writes the plan (each descriptor's ID and its
// members' keys and ETags) with textio as JSON lines, reads the descriptors with
// s3io.ReadSplitsWithFailures and writes the Failures as JSON lines to a second file. Two
// reads fail on purpose: one object is not valid gzip ("corrupt"), and the server answers
// every GET of another with 500 until pass 1 is over ("unreadable").
//
// Between the passes the program adds 5 objects, overwrites 3, deletes 1 and replaces the
// corrupt object with valid gzip; the object whose GETs failed is left as it was.
//
// Pass 2 reads both files back with textio, computes the splits pass 1 finished (the IDs it
// planned, less the split IDs of its failures), plans the prefix again with the same Config,
// and reads s3io.Except(plan, done): the descriptors that hold an edited object (the fixed
// one included), the neighbours whose boundaries moved with them, and the descriptor of the
// object whose GETs failed. That object did not change, so neither did its descriptor's ID:
// it is read again only because the failures file names it. Pass 2 writes its own plan and
// failures, which a third pass would read the same way.
//
// A split that failed is read again whole, so records of its other members that pass 1
// emitted are emitted again: the recipe is at-least-once, like every s3io read.
//
// It then prints what each pass read and checks it against what it seeded: every new,
// overwritten and fixed object is read in pass 2, pass 2 reads exactly the records of the
// descriptors it read, at most two descriptors per edit or failed descriptor, and none that
// holds the deleted object. It exits with status 1, saying what differs, if a check fails.
// Once built, it runs in a few seconds.
//
// The embedded server listens on 127.0.0.1 and hands its credentials to the workers through
// this process's environment, so it only serves workers that run in this process, as
// prism's default loopback workers do. The plan and failure files are written to a fresh
// temporary directory, printed at the end.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/metrics"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/textio"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/x/beamx"

	"github.com/spate-io/beam-s3/s3io"
)

func init() {
	// Workers look functions up by name, so registration must happen in init, where the
	// launcher and every worker run it, and not in main.
	register.Function1x2(encodePlanLine)
	register.Function1x2(encodeFailure)
	register.Function1x3(plannedID)
	register.Function1x3(failedID)
	register.Function4x0(keepUnfailed)
	register.Iter1[int]()
	register.Emitter1[string]()
}

// The seeded prefix: objects part-00000 to part-03990, ten apart, so that objects added
// between passes (part-01105 and so on) fall between them in key order, in descriptors all
// over the plan. Which object is corrupt, fails, or is edited is fixed here, far enough
// apart that their descriptors do not touch.
const (
	seedObjects  = 400
	corruptIndex = 400  // seeded as bytes that are not gzip; replaced with valid gzip for pass 2
	failingIndex = 2000 // every GET fails during pass 1; left unchanged for pass 2
)

// splitTargetBytes is small, so that 400 small objects make dozens of descriptors; a real
// job keeps the default, 64 MiB. Pass 2 must plan with the same value, or every ID changes.
const splitTargetBytes = 16 << 10

var (
	addedIndexes       = []int{1105, 1505, 2405, 3305, 3905}
	overwrittenIndexes = []int{700, 3000, 3600}
	deletedIndexes     = []int{2700}
)

func objectKey(index int, kind string) string {
	return fmt.Sprintf("%spart-%05d%s", embeddedPrefix, index, extension(kind))
}

// kindOf spreads the compression kinds over the keys: a third each.
func kindOf(index int) string { return []string{"plain", "gzip", "zstd"}[index%3] }

// planLine is one line of a plan file: what a later run needs to know a split by, its ID,
// and the objects it held, for people and for this program's checks.
type planLine struct {
	ID      string       `json:"id"`
	Members []planMember `json:"members"`
}

type planMember struct {
	Key  string `json:"key"`
	ETag string `json:"etag"`
}

// encodePlanLine renders a descriptor as a plan file line.
func encodePlanLine(d s3io.SplitDescriptor) (string, error) {
	l := planLine{ID: d.ID}
	for _, m := range d.Members {
		l.Members = append(l.Members, planMember{Key: m.Key, ETag: m.ETag})
	}
	b, err := json.Marshal(l)
	return string(b), err
}

// encodeFailure renders a Failure as a failures file line: the whole Failure, so that the
// file is also the dead letter a person reads.
func encodeFailure(f s3io.Failure) (string, error) {
	b, err := json.Marshal(f)
	return string(b), err
}

// plannedID keys a plan file line by its split ID.
func plannedID(line string) (string, int, error) {
	var l planLine
	if err := json.Unmarshal([]byte(line), &l); err != nil {
		return "", 0, fmt.Errorf("plan line %q: %w", line, err)
	}
	return l.ID, 1, nil
}

// failedID keys a failures file line by the ID of the split it failed.
func failedID(line string) (string, int, error) {
	var f s3io.Failure
	if err := json.Unmarshal([]byte(line), &f); err != nil {
		return "", 0, fmt.Errorf("failure line %q: %w", line, err)
	}
	return f.SplitID, 1, nil
}

// keepUnfailed emits a split ID that pass 1 planned and that no failure names. A split with
// a failed member is not done, even though its other members were read: s3io re-reads a
// split whole, so those records will be emitted again.
func keepUnfailed(id string, planned, failed func(*int) bool, emit func(string)) {
	var one int
	if planned(&one) && !failed(&one) {
		emit(id)
	}
}

// doneIDs returns the IDs of the splits an earlier run finished, as a PCollection<string>
// for s3io.Except: the IDs in its plan file less the split IDs in its failures file.
// Failures must be subtracted because a transient failure leaves the object, and so the ID
// of its split, unchanged: without them the split would be skipped for ever.
func doneIDs(s beam.Scope, planLines, failureLines beam.PCollection) beam.PCollection {
	s = s.Scope("doneIDs")
	planned := beam.ParDo(s, plannedID, planLines)
	failed := beam.ParDo(s, failedID, failureLines)
	return beam.ParDo(s, keepUnfailed, beam.CoGroupByKey(s, planned, failed))
}

// files are the paths the passes write; textio writes exactly these names (one file each,
// or none for an empty PCollection).
type files struct {
	Plan1, Failures1, Plan2, Read2, Failures2 string
}

// runPass1 plans the prefix and reads it, keeping the two things a later run needs to read
// only what is left: the plan's split IDs and the failures.
func runPass1(ctx context.Context, cfg s3io.Config, f files) (beam.PipelineResult, error) {
	p, s := beam.NewPipelineWithRoot()
	descriptors := s3io.Plan(s, cfg)
	textio.Write(s, f.Plan1, beam.ParDo(s, encodePlanLine, descriptors))
	// The records would go on to the job's real work; s3io's "records" counter counts them.
	_, failures := s3io.ReadSplitsWithFailures(s, cfg, beam.Reshuffle(s, descriptors))
	textio.Write(s, f.Failures1, beam.ParDo(s, encodeFailure, failures))
	return beamx.RunWithMetrics(ctx, p)
}

// runPass2 replans the prefix with the same Config and reads only the descriptors pass 1
// did not finish. It writes its whole plan, the descriptors it read and its own failures,
// for the checks (and, in a real job, for the next pass).
func runPass2(ctx context.Context, cfg s3io.Config, f files) (beam.PipelineResult, error) {
	p, s := beam.NewPipelineWithRoot()
	done := doneIDs(s, textio.Read(s, f.Plan1), textio.Read(s, f.Failures1))
	descriptors := s3io.Plan(s, cfg)
	textio.Write(s, f.Plan2, beam.ParDo(s, encodePlanLine, descriptors))
	left := s3io.Except(s, descriptors, done)
	textio.Write(s, f.Read2, beam.ParDo(s, encodePlanLine, left))
	_, failures := s3io.ReadSplitsWithFailures(s, cfg, beam.Reshuffle(s, left))
	textio.Write(s, f.Failures2, beam.ParDo(s, encodeFailure, failures))
	return beamx.RunWithMetrics(ctx, p)
}

// errMismatch reports a failed check; the MISMATCH lines on stdout have said which.
var errMismatch = errors.New("the passes read something other than what was seeded")

func main() {
	// beam.Init must come before any other work: in a worker process it takes over here and
	// never returns. It parses the flags.
	beam.Init()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx)
	stop()
	if err != nil {
		if !errors.Is(err, errMismatch) {
			fmt.Fprintf(os.Stderr, "incremental: %v\n", err)
		}
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	srv, err := startEmbeddedS3(ctx)
	if err != nil {
		return err
	}
	defer srv.Close()
	if err := seed(ctx, srv); err != nil {
		return fmt.Errorf("seeding the embedded S3 server: %w", err)
	}
	if err := setEmbeddedEnv(); err != nil {
		return err
	}
	cfg := s3io.Config{
		Bucket:           embeddedBucket,
		Prefix:           embeddedPrefix,
		Endpoint:         srv.URL,
		UsePathStyle:     true,
		Framer:           "ndjson",
		SplitTargetBytes: splitTargetBytes,
		// One retry, so that the GETs the server fails in pass 1 give up in about a second
		// instead of backing off through 8 attempts.
		MaxAttempts: 2,
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	seeded := maps.Clone(srv.objects)
	printSeeded(seeded)

	dir, err := os.MkdirTemp("", "incremental-")
	if err != nil {
		return err
	}
	f := files{
		Plan1:     filepath.Join(dir, "pass1-plan.jsonl"),
		Failures1: filepath.Join(dir, "pass1-failures.jsonl"),
		Plan2:     filepath.Join(dir, "pass2-plan.jsonl"),
		Read2:     filepath.Join(dir, "pass2-read.jsonl"),
		Failures2: filepath.Join(dir, "pass2-failures.jsonl"),
	}

	failing := objectKey(failingIndex, kindOf(failingIndex))
	srv.failGets(failing)
	start := time.Now()
	pr1, err := runPass1(ctx, cfg, f)
	if err != nil {
		return fmt.Errorf("pass 1 failed after %v: %w", time.Since(start).Round(time.Millisecond), err)
	}
	elapsed1 := time.Since(start)
	srv.failGets("")

	ed, err := edit(ctx, srv)
	if err != nil {
		return fmt.Errorf("editing the bucket between passes: %w", err)
	}

	start = time.Now()
	pr2, err := runPass2(ctx, cfg, f)
	if err != nil {
		return fmt.Errorf("pass 2 failed after %v: %w", time.Since(start).Round(time.Millisecond), err)
	}
	elapsed2 := time.Since(start)

	r := &results{seeded: seeded, now: srv.objects, edits: ed, failing: failing,
		c1: countersIn(pr1, s3io.MetricsNamespace), c2: countersIn(pr2, s3io.MetricsNamespace),
		elapsed1: elapsed1, elapsed2: elapsed2, failedGets: srv.failedGets.Load()}
	// Read back with the plain file API: the checks run here, after both pipelines.
	for _, err := range []error{
		readJSONLines(f.Plan1, &r.plan1), readJSONLines(f.Failures1, &r.failures1),
		readJSONLines(f.Plan2, &r.plan2), readJSONLines(f.Read2, &r.read2), readJSONLines(f.Failures2, &r.failures2),
	} {
		if err != nil {
			return err
		}
	}
	err = r.report()
	fmt.Printf("plans and failures: %s\n", dir)
	return err
}

// seed writes the prefix pass 1 reads: seedObjects objects of 30 to 70 events each, one of
// them corrupt.
func seed(ctx context.Context, srv *embeddedS3) error {
	for i := range seedObjects {
		index := i * 10
		kind := kindOf(index)
		key := objectKey(index, kind)
		if index == corruptIndex {
			if err := srv.putCorrupt(ctx, objectKey(index, "gzip")); err != nil {
				return err
			}
			continue
		}
		if err := srv.put(ctx, key, kind, 30+srv.rng.IntN(41)); err != nil {
			return err
		}
	}
	return nil
}

// edits says what changed between the passes, by key.
type edits struct {
	Added, Overwritten, Deleted []string
	Fixed                       string
}

// count is how many objects changed: the fixed one is an overwrite too.
func (e edits) count() int { return len(e.Added) + len(e.Overwritten) + len(e.Deleted) + 1 }

// edit changes the bucket between the passes, as new data landing, a few objects being
// rewritten and one expiring would: every change gives its key a new ETag or none.
func edit(ctx context.Context, srv *embeddedS3) (edits, error) {
	var ed edits
	for _, index := range addedIndexes {
		key := objectKey(index, kindOf(index))
		if err := srv.put(ctx, key, kindOf(index), 30+srv.rng.IntN(41)); err != nil {
			return ed, err
		}
		ed.Added = append(ed.Added, key)
	}
	for _, index := range overwrittenIndexes {
		key := objectKey(index, kindOf(index))
		if err := srv.put(ctx, key, kindOf(index), 30+srv.rng.IntN(41)); err != nil {
			return ed, err
		}
		ed.Overwritten = append(ed.Overwritten, key)
	}
	for _, index := range deletedIndexes {
		key := objectKey(index, kindOf(index))
		if err := srv.delete(ctx, key); err != nil {
			return ed, err
		}
		ed.Deleted = append(ed.Deleted, key)
	}
	ed.Fixed = objectKey(corruptIndex, "gzip")
	if err := srv.put(ctx, ed.Fixed, "gzip", 50); err != nil {
		return ed, err
	}
	return ed, nil
}

// setEmbeddedEnv gives the workers' default AWS credential chain the embedded server's
// keys. s3io resolves credentials on each worker, never shipping them in the pipeline, and
// loopback workers run in this process, so this process's environment is where they look.
// IMDS is disabled so that nothing ever waits on 169.254.169.254 off EC2.
func setEmbeddedEnv() error {
	for k, v := range map[string]string{
		"AWS_ACCESS_KEY_ID":         embeddedKeyID,
		"AWS_SECRET_ACCESS_KEY":     embeddedSecret,
		"AWS_REGION":                embeddedRegion,
		"AWS_EC2_METADATA_DISABLED": "true",
	} {
		if err := os.Setenv(k, v); err != nil {
			return err
		}
	}
	return nil
}

func printSeeded(objs map[string]object) {
	kinds := map[string]int{}
	var recs, stored int64
	var corrupt []string
	for k, o := range objs {
		if o.Corrupt {
			corrupt = append(corrupt, short(k))
		}
		kinds[o.Kind]++
		recs += o.Records
		stored += o.Stored
	}
	fmt.Printf("seeded s3://%s/%s: %d objects (%d plain, %d gzip, %d zstd; corrupt: %s), %d records, %.1f KB stored\n",
		embeddedBucket, embeddedPrefix, len(objs), kinds["plain"], kinds["gzip"], kinds["zstd"], strings.Join(corrupt, ", "), recs, float64(stored)/1e3)
}

// countersIn sums the committed counters of namespace ns by name. A counter is reported
// once per step that updates it, so the same name may appear more than once.
func countersIn(pr beam.PipelineResult, ns string) map[string]int64 {
	out := map[string]int64{}
	if pr == nil {
		return out
	}
	for _, c := range pr.Metrics().Query(func(r metrics.SingleResult) bool {
		return r.Namespace() == ns
	}).Counters() {
		out[c.Name()] += c.Result()
	}
	return out
}

// readJSONLines decodes every line of path into the slice dst points to. textio writes no
// file for an empty PCollection, so a missing file is an empty list.
func readJSONLines[T any](path string, dst *[]T) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	for line := 1; sc.Scan(); line++ {
		var v T
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			return fmt.Errorf("%s:%d: %w", path, line, err)
		}
		*dst = append(*dst, v)
	}
	return sc.Err()
}
