package s3io_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/local"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/s3" // textio reads and writes s3:// paths
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/textio"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/log"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/runners/prism"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/stats"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/x/beamx"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/spate-io/beam-s3/s3io"
)

// Workers run the same binary as the launcher and look every function a pipeline uses up
// by name, so the examples register theirs, and their framer, in init.
func init() {
	beam.RegisterType(reflect.TypeOf((*exampleEvent)(nil)).Elem())
	register.Function1x2(exampleDecodeEvent)
	register.Function1x1(exampleEventUser)
	register.Function1x1(exampleEventPath)
	register.Function2x1(exampleFormatCount)
	register.Function4x0(exampleLogCount)
	register.Function1x2(exampleFailureJSON)
	register.Function1x1(examplePlanLine)
	register.Function1x2(examplePlannedID)
	register.Function1x3(exampleFailedID)
	register.Function4x0(exampleKeepUnfailed)
	register.Function1x1(exampleString)
	register.Function1x2(exampleBatchCount)
	register.Iter1[int]()
	register.Emitter1[string]()

	s3io.RegisterFramer("nul", func() s3io.RecordFramer { return s3io.FramerFunc(exampleFrameNUL) })
}

// exampleEvent is one line of the access logs the examples read:
//
//	{"time":"2026-11-03T10:15:00Z","user":"ana","path":"/cart","status":200}
type exampleEvent struct {
	Time   string `json:"time"`
	User   string `json:"user"`
	Path   string `json:"path"`
	Status int    `json:"status"`
}

// exampleDecodeEvent decodes one NDJSON record. s3io hands over the bytes exactly as
// stored: decoding is the pipeline's business.
func exampleDecodeEvent(rec []byte) (exampleEvent, error) {
	var e exampleEvent
	err := json.Unmarshal(rec, &e)
	return e, err
}

func exampleEventUser(e exampleEvent) string { return e.User }

func exampleEventPath(e exampleEvent) string { return e.Path }

func exampleFormatCount(key string, n int) string { return fmt.Sprintf("%s\t%d", key, n) }

// exampleLogCount stands for a streaming sink: it logs one window's count.
func exampleLogCount(ctx context.Context, w beam.Window, path string, n int) {
	log.Infof(ctx, "%v %s: %d requests", w, path, n)
}

// exampleFailureJSON renders a quarantined object as a dead-letter line: which object and
// version, why, and how many of its records were emitted before it failed.
func exampleFailureJSON(f s3io.Failure) (string, error) {
	b, err := json.Marshal(f)
	return string(b), err
}

// examplePlanLine renders a descriptor as a plan file line: its ID, objects and bytes.
func examplePlanLine(d s3io.SplitDescriptor) string {
	return fmt.Sprintf("%s\t%d\t%d", d.ID, len(d.Members), d.Size())
}

// examplePlannedID keys a plan file line by its split ID.
func examplePlannedID(line string) (string, int) {
	id, _, _ := strings.Cut(line, "\t")
	return id, 1
}

// exampleFailedID keys a dead-letter line by the ID of the split it failed.
func exampleFailedID(line string) (string, int, error) {
	var f s3io.Failure
	if err := json.Unmarshal([]byte(line), &f); err != nil {
		return "", 0, fmt.Errorf("dead-letter line %q: %w", line, err)
	}
	return f.SplitID, 1, nil
}

// exampleKeepUnfailed emits a split ID that the earlier run planned and no failure names:
// a split with a failed member is not done, and is read again whole.
func exampleKeepUnfailed(id string, planned, failed func(*int) bool, emit func(string)) {
	var one int
	if planned(&one) && !failed(&one) {
		emit(id)
	}
}

// exampleFrameNUL cuts records ended by a NUL byte, as find -print0 and xargs -0 use them.
// Like a bufio.SplitFunc, it returns the bytes to consume and the record they hold, or 0 to
// ask for more bytes; a last record without its NUL is still a record.
func exampleFrameNUL(data []byte, atEOF bool) (int, []byte, error) {
	if i := bytes.IndexByte(data, 0); i >= 0 {
		return i + 1, data[:i:i], nil
	}
	if atEOF && len(data) > 0 {
		return len(data), data, nil
	}
	return 0, nil, nil
}

func exampleString(rec []byte) string { return string(rec) }

// A whole batch job: count a month of web requests per user and write the counts to S3.
func Example() {
	// The body of main. Flags choose the runner (--runner=dataflow, flink, prism...).
	flag.Parse()
	beam.Init()
	ctx := context.Background()

	p, s := beam.NewPipelineWithRoot()
	// Every record of every object under the prefix, gzip and zstd objects decompressed,
	// cut into lines by the "ndjson" framer. Credentials are not part of the Config: each
	// worker finds its own with the AWS SDK's default chain.
	records := s3io.Read(s, s3io.Config{
		Bucket: "acme-logs",
		Prefix: "web/2026/11/",
		Framer: "ndjson",
	})
	events := beam.ParDo(s, exampleDecodeEvent, records)
	perUser := stats.Count(s, beam.ParDo(s, exampleEventUser, events))
	textio.Write(s, "s3://acme-reports/web/2026-11/requests-per-user.tsv",
		beam.ParDo(s, exampleFormatCount, perUser))

	// Read fails the job, naming the objects, if any object could not be read; everything
	// else was read by then.
	if err := beamx.Run(ctx, p); err != nil {
		log.Fatalf(ctx, "pipeline failed: %v", err)
	}
}

func ExampleRead() {
	p, s := beam.NewPipelineWithRoot()
	// Match keeps the access logs of each day's folder and skips whatever else the
	// folders hold; the listing asks only for the glob's literal prefix. The LastModified
	// window leaves out objects rewritten after the month was closed.
	records := s3io.Read(s, s3io.Config{
		Bucket:         "acme-logs",
		Prefix:         "web/2026/11/",
		Match:          "web/2026/11/*/access-*.json.gz",
		ModifiedAfter:  time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC),
		ModifiedBefore: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC),
		Framer:         "ndjson",
	})
	// A PCollection<[]byte> of JSON documents, one per record: decode it downstream.
	events := beam.ParDo(s, exampleDecodeEvent, records)
	perPath := stats.Count(s, beam.ParDo(s, exampleEventPath, events))
	textio.Write(s, "s3://acme-reports/web/2026-11/requests-per-path.tsv",
		beam.ParDo(s, exampleFormatCount, perPath))

	if err := beamx.Run(context.Background(), p); err != nil {
		log.Fatalf(context.Background(), "pipeline failed: %v", err)
	}
}

// exampleBatchCount counts a batch's records under its object's key: Beam handles one
// element per batch, not one per record.
func exampleBatchCount(b s3io.RecordBatch) (string, int) { return b.Key, b.Len() }

// Records in bulk: count the records of every object. A step that takes a whole batch (a
// count, a bulk writer, a columnar conversion) skips Beam's per-element cost per record.
func ExampleReadBatches() {
	p, s := beam.NewPipelineWithRoot()
	batches := s3io.ReadBatches(s, s3io.Config{
		Bucket: "acme-logs",
		Prefix: "web/2026/11/",
		Framer: "ndjson",
	})
	// Each RecordBatch holds consecutive records of one object; record i of a batch is the
	// object's record b.Index+i, and its bytes may be kept.
	perObject := stats.SumPerKey(s, beam.ParDo(s, exampleBatchCount, batches))
	textio.Write(s, "s3://acme-reports/web/2026-11/records-per-object.tsv",
		beam.ParDo(s, exampleFormatCount, perObject))

	if err := beamx.Run(context.Background(), p); err != nil {
		log.Fatalf(context.Background(), "pipeline failed: %v", err)
	}
}

func ExampleReadWithFailures() {
	p, s := beam.NewPipelineWithRoot()
	records, failures := s3io.ReadWithFailures(s, s3io.Config{
		Bucket: "acme-logs",
		Prefix: "web/2026/11/",
		Framer: "ndjson",
	})
	// An object that cannot be read (deleted or overwritten since planning, corrupt,
	// archived, unreadable after retries) no longer fails the job: it becomes a Failure,
	// kept here as a JSON line for a person or a later run (see Except) to act on.
	textio.Write(s, "s3://acme-reports/web/2026-11/run-1/failures.jsonl",
		beam.ParDo(s, exampleFailureJSON, failures))

	// The records of every other object, and those a failed object emitted before it
	// failed, flow on as with Read.
	perUser := stats.Count(s, beam.ParDo(s, exampleEventUser, beam.ParDo(s, exampleDecodeEvent, records)))
	textio.Write(s, "s3://acme-reports/web/2026-11/run-1/requests-per-user.tsv",
		beam.ParDo(s, exampleFormatCount, perUser))

	if err := beamx.Run(context.Background(), p); err != nil {
		log.Fatalf(context.Background(), "pipeline failed: %v", err)
	}
}

func ExamplePlan() {
	p, s := beam.NewPipelineWithRoot()
	cfg := s3io.Config{Bucket: "acme-logs", Prefix: "web/2026/11/", Framer: "ndjson"}

	// Read is these three steps. Taking them apart lets the pipeline keep the plan: one
	// line per split, with the ID that the same split will have when the prefix is
	// planned again, which is what a later run gives Except.
	descriptors := s3io.Plan(s, cfg)
	textio.Write(s, "s3://acme-reports/web/2026-11/run-1/plan.tsv",
		beam.ParDo(s, examplePlanLine, descriptors))

	// One worker plans; the Reshuffle spreads the descriptors over all of them.
	records, failures := s3io.ReadSplitsWithFailures(s, cfg, beam.Reshuffle(s, descriptors))
	textio.Write(s, "s3://acme-reports/web/2026-11/run-1/failures.jsonl",
		beam.ParDo(s, exampleFailureJSON, failures))
	perUser := stats.Count(s, beam.ParDo(s, exampleEventUser, beam.ParDo(s, exampleDecodeEvent, records)))
	textio.Write(s, "s3://acme-reports/web/2026-11/run-1/requests-per-user.tsv",
		beam.ParDo(s, exampleFormatCount, perUser))

	if err := beamx.Run(context.Background(), p); err != nil {
		log.Fatalf(context.Background(), "pipeline failed: %v", err)
	}
}

func ExampleReadAll() {
	p, s := beam.NewPipelineWithRoot()
	// The prefixes can come from data, in any buckets: here a fixed list, as easily the
	// output of a transform (one prefix per customer read from a table, say).
	urls := beam.Create(s,
		"s3://acme-logs/web/2026/11/",
		"s3://acme-logs-eu/web/2026/11/",
		"s3://partner-exports/acme/2026-11/",
	)
	// Bucket and Prefix come from each URL; the rest of the Config applies to all.
	records := s3io.ReadAll(s, s3io.Config{Framer: "ndjson"}, urls)
	perUser := stats.Count(s, beam.ParDo(s, exampleEventUser, beam.ParDo(s, exampleDecodeEvent, records)))
	textio.Write(s, "s3://acme-reports/web/2026-11/all-sites/requests-per-user.tsv",
		beam.ParDo(s, exampleFormatCount, perUser))

	if err := beamx.Run(context.Background(), p); err != nil {
		log.Fatalf(context.Background(), "pipeline failed: %v", err)
	}
}

// A re-run that reads only what run 1 did not: objects added or overwritten since, and
// the splits that had a failure. Run 1 wrote its plan and its dead letter as ExamplePlan
// does.
func ExampleExcept() {
	p, s := beam.NewPipelineWithRoot()
	// The same Config as run 1: the packing settings and the selection decide the IDs.
	cfg := s3io.Config{Bucket: "acme-logs", Prefix: "web/2026/11/", Framer: "ndjson"}
	run1 := "s3://acme-reports/web/2026-11/run-1"
	run2 := "s3://acme-reports/web/2026-11/run-2"

	// Use only the files of a run that succeeded: one that died while reading can leave
	// a plan and no dead letter, which would mark every split done.
	//
	// Done: the IDs run 1 planned, less those of the splits a failure names. A transient
	// failure leaves its split's ID unchanged, so without the subtraction that split
	// would never be read again.
	planned := beam.ParDo(s, examplePlannedID, textio.Read(s, run1+"/plan.tsv"))
	failed := beam.ParDo(s, exampleFailedID, textio.Read(s, run1+"/failures.jsonl"))
	done := beam.ParDo(s, exampleKeepUnfailed, beam.CoGroupByKey(s, planned, failed))

	// Replan: unchanged splits keep their IDs, and Except drops them.
	descriptors := s3io.Plan(s, cfg)
	left := s3io.Except(s, descriptors, done)
	records, failures := s3io.ReadSplitsWithFailures(s, cfg, beam.Reshuffle(s, left))

	// Run 2 keeps its whole plan and its own failures, for run 3 to do the same.
	textio.Write(s, run2+"/plan.tsv", beam.ParDo(s, examplePlanLine, descriptors))
	textio.Write(s, run2+"/failures.jsonl", beam.ParDo(s, exampleFailureJSON, failures))
	perUser := stats.Count(s, beam.ParDo(s, exampleEventUser, beam.ParDo(s, exampleDecodeEvent, records)))
	textio.Write(s, run2+"/requests-per-user.tsv", beam.ParDo(s, exampleFormatCount, perUser))

	if err := beamx.Run(context.Background(), p); err != nil {
		log.Fatalf(context.Background(), "pipeline failed: %v", err)
	}
}

func ExampleReadContinuously() {
	p, s := beam.NewPipelineWithRoot()
	// List the prefix every minute until the job is cancelled or drained (a zero end),
	// and read each new or overwritten object once.
	records := s3io.ReadContinuously(s, s3io.Config{
		Bucket: "acme-logs",
		Prefix: "web/live/",
		Framer: "ndjson",
	}, time.Minute, time.Time{})

	// Records carry their object's LastModified as event time, and an object is found up
	// to one interval after its upload began: allow that much lateness and more.
	windowed := beam.WindowInto(s, window.NewFixedWindows(5*time.Minute), records,
		beam.AllowedLateness(10*time.Minute))
	perPath := stats.Count(s, beam.ParDo(s, exampleEventPath, beam.ParDo(s, exampleDecodeEvent, windowed)))
	beam.ParDo0(s, exampleLogCount, perPath)

	// A streaming job, for a streaming runner. Any object that fails for another reason
	// than a change since its refresh fails the job; on Dataflow, which retries a failing
	// bundle forever instead, prefer ReadContinuouslyWithFailures.
	if err := beamx.Run(context.Background(), p); err != nil {
		log.Fatalf(context.Background(), "pipeline failed: %v", err)
	}
}

func ExampleRegisterFramer() {
	// Register a framer from an init function, never from main: Beam workers run the same
	// binary and look the framer up by the name in Config.Framer, since a DoFn cannot carry
	// code. This file's init registers exampleFrameNUL, which cuts records at NUL bytes:
	//
	//	func init() {
	//		s3io.RegisterFramer("nul", func() s3io.RecordFramer { return s3io.FramerFunc(exampleFrameNUL) })
	//	}
	//
	// after which a Config can name it.
	// Validate, which Read calls, fails on a name that no init registered.
	cfg := s3io.Config{Bucket: "acme-exports", Prefix: "file-lists/", Framer: "nul"}
	fmt.Println("valid:", cfg.Validate() == nil)

	// s3io hands the framer each object's decompressed bytes, and again what it did not
	// consume with more bytes appended. Driven by hand over one whole object:
	f := s3io.FramerFunc(exampleFrameNUL)
	data := []byte("etc/hosts\x00home/ana/notes.txt\x00\x00tmp/last")
	for {
		n, rec, err := f.Frame(data, true)
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		if n == 0 {
			break // at EOF, the object holds no more records
		}
		data = data[n:]
		if rec != nil {
			fmt.Printf("%q\n", rec)
		}
	}
	// Output:
	// valid: true
	// "etc/hosts"
	// "home/ana/notes.txt"
	// ""
	// "tmp/last"
}

// Reading from an S3-compatible server (MinIO, Ceph, versitygw...): Endpoint and
// UsePathStyle point the workers' clients at it. Here the server is gofakes3, in this
// process, holding two NUL-separated file lists read with the "nul" framer registered in
// init (see RegisterFramer); the pipeline runs on prism, whose loopback workers share the
// process and so the environment that holds the server's credentials.
func ExampleConfig_endpoint() {
	endpoint, stop := exampleS3("acme-exports", map[string]string{
		"file-lists/host-a": "etc/hosts\x00var/log/syslog\x00",
		"file-lists/host-b": "home/ana/notes.txt\x00tmp/last",
	})
	defer stop()
	out, err := os.MkdirTemp("", "s3io-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(out)

	p, s := beam.NewPipelineWithRoot()
	records := s3io.Read(s, s3io.Config{
		Bucket:       "acme-exports",
		Prefix:       "file-lists/",
		Endpoint:     endpoint,
		UsePathStyle: true,
		Framer:       "nul",
	})
	textio.Write(s, filepath.Join(out, "paths.txt"), beam.ParDo(s, exampleString, records))
	if _, err := beam.Run(context.Background(), "prism", p); err != nil {
		fmt.Println("pipeline failed:", err)
		return
	}

	// Records arrive in no particular order.
	b, err := os.ReadFile(filepath.Join(out, "paths.txt"))
	if err != nil {
		fmt.Println(err)
		return
	}
	paths := strings.Fields(string(b))
	sort.Strings(paths)
	fmt.Println(strings.Join(paths, "\n"))
	// Output:
	// etc/hosts
	// home/ana/notes.txt
	// tmp/last
	// var/log/syslog
}

// exampleS3 starts gofakes3 in memory with one bucket holding objects, and points this
// process's AWS credential chain at throwaway keys (gofakes3 checks no signature). stop
// shuts the server down and restores the environment.
func exampleS3(bucket string, objects map[string]string) (endpoint string, stop func()) {
	backend := s3mem.New()
	if err := backend.CreateBucket(bucket); err != nil {
		panic(err)
	}
	for key, body := range objects {
		if _, err := backend.PutObject(bucket, key, map[string]string{}, strings.NewReader(body), int64(len(body)), nil); err != nil {
			panic(err)
		}
	}
	srv := httptest.NewServer(gofakes3.New(backend).Server())
	env := map[string]string{
		"AWS_ACCESS_KEY_ID":           "example-access-key",
		"AWS_SECRET_ACCESS_KEY":       "example-secret-key",
		"AWS_REGION":                  "us-east-1",
		"AWS_CONFIG_FILE":             os.DevNull,
		"AWS_SHARED_CREDENTIALS_FILE": os.DevNull,
		"AWS_EC2_METADATA_DISABLED":   "true",
	}
	restore := map[string]*string{}
	for k, v := range env {
		if old, ok := os.LookupEnv(k); ok {
			restore[k] = &old
		} else {
			restore[k] = nil
		}
		os.Setenv(k, v)
	}
	return srv.URL, func() {
		srv.Close()
		for k, old := range restore {
			if old == nil {
				os.Unsetenv(k)
			} else {
				os.Setenv(k, *old)
			}
		}
	}
}
