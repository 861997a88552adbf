// Command backfill counts the NDJSON events under an S3 prefix by their "type" field, reading
// every object with s3io.Read on Apache Beam, and prints how much it read and how fast.
//
// Run with no flags, it starts an in-process S3-compatible server (gofakes3), seeds it with
// 300,000 sample events spread over a day of hourly plain, gzip and zstd objects, runs the
// pipeline on the in-process prism runner, and checks the counts against what it seeded:
//
//	go run ./examples/backfill
//	go run ./examples/backfill --records 20000
//
// Given --bucket, it reads that bucket instead, with credentials from the standard AWS
// chain (environment, shared config and profile, web identity, instance and container
// roles):
//
//	go run ./examples/backfill --bucket my-logs --prefix events/2026/11/ --s3-region eu-west-1
//	go run ./examples/backfill --bucket my-logs --s3-endpoint http://127.0.0.1:9000 --path-style
//
// The S3 endpoint and region flags are --s3-endpoint and --s3-region because Beam already
// owns --endpoint (the job service) and --region (the Dataflow region). Beam's runner flags
// work as usual: --runner (default prism), --endpoint, --environment_type and the rest. The
// embedded server listens on 127.0.0.1 and hands its credentials to the workers through
// this process's environment, so it only serves workers that run in this process, as
// prism's default loopback workers do. With a remote runner, give --bucket and an --output
// the workers can write to and this program can read, such as a gs:// path.
//
// The counts are written with textio as "type<TAB>count" lines to --output, by default a
// file in a fresh temporary directory.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/metrics"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/textio"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/stats"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/x/beamx"

	"github.com/spate-io/beam-s3/s3io"
)

var (
	bucket     = flag.String("bucket", "", "S3 bucket to read; without it an embedded S3 server is started and seeded with sample events")
	prefix     = flag.String("prefix", "", "key prefix to read under --bucket; empty reads the whole bucket")
	s3Endpoint = flag.String("s3-endpoint", "", "URL of an S3-compatible service, such as http://127.0.0.1:9000; empty uses AWS S3")
	s3Region   = flag.String("s3-region", "", "the bucket's AWS region; empty takes it from the AWS configuration (AWS_REGION, profile)")
	pathStyle  = flag.Bool("path-style", false, "address the bucket as endpoint/bucket, as most S3-compatible services need")
	framer     = flag.String("framer", "ndjson", "s3io framer that cuts objects into records: ndjson, lines or u32be")
	records    = flag.Int64("records", 300000, "how many sample events to seed the embedded S3 server with (only without --bucket); fewer run faster")
	output     = flag.String("output", "", "where to write the per-type counts, as \"type<TAB>count\" lines (textio: a local path, or a gs:// path the workers of a remote runner can write); empty: counts.tsv in a new directory under $TMPDIR, printed at the end")
)

// backfillNamespace holds this program's own counters, apart from s3io's.
const backfillNamespace = "backfill"

// badRecords counts records that are not JSON objects with a string "type". A backfill over
// months of logs should not die on one truncated line, but it must not hide it either.
var badRecords = beam.NewCounter(backfillNamespace, "bad_records")

func init() {
	// Workers look functions up by name, so registration must happen in init, where the
	// launcher and every worker run it, and not in main.
	register.Function3x0[context.Context, []byte, func(string)](decodeType)
	register.Emitter1[string]()
	register.Function2x1[string, int, string](formatCount)
}

// decodeType emits the "type" of one NDJSON event. The target struct has only that field, so
// encoding/json validates the rest of the record but allocates nothing for it.
func decodeType(ctx context.Context, record []byte, emit func(string)) {
	var ev struct {
		Type string `json:"type"`
	}
	// A record without a type decodes without error, but there is no row to count it under.
	if err := json.Unmarshal(record, &ev); err != nil || ev.Type == "" {
		badRecords.Inc(ctx, 1)
		return
	}
	emit(ev.Type)
}

// formatCount renders one stats.Count result as an output line.
func formatCount(eventType string, count int) string {
	return eventType + "\t" + strconv.Itoa(count)
}

// errMismatch reports counts that differ from the seeded ones; the MISMATCH line on stdout
// has already said how.
var errMismatch = errors.New("per-type counts differ from what was seeded")

func main() {
	flag.Usage = usage // the demo and its own flags before Beam's
	flag.Parse()
	// beam.Init must come before any other work: in a worker process it takes over here and
	// never returns.
	beam.Init()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx)
	stop()
	if err != nil {
		if !errors.Is(err, errMismatch) {
			fmt.Fprintf(os.Stderr, "backfill: %v\n", err)
		}
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	cfg := s3io.Config{
		Bucket:       *bucket,
		Prefix:       *prefix,
		Endpoint:     *s3Endpoint,
		Region:       *s3Region,
		UsePathStyle: *pathStyle,
		Framer:       *framer,
	}
	if err := checkModeFlags(); err != nil {
		return err
	}

	var seeded *seedSummary
	if *bucket == "" {
		srv, err := startEmbeddedS3()
		if err != nil {
			return err
		}
		defer srv.Close()
		sum, err := srv.seed(ctx, *records)
		if err != nil {
			return fmt.Errorf("seeding the embedded S3 server: %w", err)
		}
		seeded = &sum
		if err := setEmbeddedEnv(); err != nil {
			return err
		}
		cfg.Bucket, cfg.Prefix, cfg.Endpoint, cfg.UsePathStyle = embeddedBucket, embeddedPrefix, srv.URL, true
		fmt.Printf("seeded %d events in %d objects (%d plain, %d gzip, %d zstd), %s stored, %s uncompressed\n",
			sum.Records, sum.Objects, sum.Kinds["plain"], sum.Kinds["gzip"], sum.Kinds["zstd"],
			megabytes(sum.StoredBytes), megabytes(sum.PlainBytes))
	}
	// s3io.Read panics on a bad Config, as Beam transforms do; a flag typo deserves an error.
	if err := cfg.Validate(); err != nil {
		return err
	}

	out := *output
	if out == "" {
		dir, err := os.MkdirTemp("", "backfill-")
		if err != nil {
			return err
		}
		out = filepath.Join(dir, "counts.tsv")
	}

	p, s := beam.NewPipelineWithRoot()
	events := s3io.Read(s, cfg)
	types := beam.ParDo(s, decodeType, events)
	counts := stats.Count(s, types)
	textio.Write(s, out, beam.ParDo(s, formatCount, counts))

	fmt.Printf("reading s3://%s/%s on %s\n", cfg.Bucket, cfg.Prefix, endpointName(cfg))
	start := time.Now()
	pr, err := beamx.RunWithMetrics(ctx, p)
	elapsed := time.Since(start)
	if err != nil {
		return fmt.Errorf("pipeline failed after %v: %w", elapsed.Round(time.Millisecond), err)
	}

	s3c := countersIn(pr, s3io.MetricsNamespace)
	bad := countersIn(pr, backfillNamespace)["bad_records"]
	printSummary(s3c, bad, elapsed, out)

	got, err := readCounts(ctx, out)
	if err != nil {
		return err
	}
	return report(got, seeded, bad)
}

// checkModeFlags rejects flags that the chosen mode would silently ignore: a --prefix
// without --bucket is most likely a forgotten --bucket, and would otherwise count the sample
// data as if it were the user's.
func checkModeFlags() error {
	var misplaced []string
	flag.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "prefix", "s3-endpoint", "s3-region", "path-style":
			if *bucket == "" {
				misplaced = append(misplaced, "--"+f.Name)
			}
		case "records":
			if *bucket != "" {
				misplaced = append(misplaced, "--"+f.Name)
			}
		}
	})
	switch {
	case len(misplaced) > 0 && *bucket == "":
		return fmt.Errorf("%s given without --bucket, which would read the embedded sample server instead", strings.Join(misplaced, ", "))
	case len(misplaced) > 0:
		return fmt.Errorf("--records only applies to the embedded server, which --bucket replaces")
	case *records < 0:
		return fmt.Errorf("--records is %d; it must be 0 or more", *records)
	}
	return nil
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

func endpointName(cfg s3io.Config) string {
	if cfg.Endpoint == "" {
		return "AWS S3"
	}
	return cfg.Endpoint
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

func printSummary(c map[string]int64, bad int64, elapsed time.Duration, out string) {
	secs := elapsed.Seconds()
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "objects\t%d read, %d planned\n", c["objects"], c["objects_planned"])
	fmt.Fprintf(w, "splits\t%d planned\n", c["splits_planned"])
	fmt.Fprintf(w, "records\t%d\n", c["records"])
	fmt.Fprintf(w, "raw bytes\t%d (%s)\n", c["raw_bytes"], megabytes(c["raw_bytes"]))
	fmt.Fprintf(w, "decompressed bytes\t%d (%s)\n", c["decompressed_bytes"], megabytes(c["decompressed_bytes"]))
	fmt.Fprintf(w, "bad records\t%d\n", bad)
	fmt.Fprintf(w, "elapsed\t%v (pipeline run, including runner start-up)\n", elapsed.Round(time.Millisecond))
	fmt.Fprintf(w, "throughput\t%.1f MB/s decompressed, %.1f MB/s raw\n",
		float64(c["decompressed_bytes"])/1e6/secs, float64(c["raw_bytes"])/1e6/secs)
	fmt.Fprintf(w, "output\t%s\n", out)
	w.Flush()
}

func megabytes(n int64) string { return fmt.Sprintf("%.1f MB", float64(n)/1e6) }

// readCounts reads the "type<TAB>count" lines back from every file textio wrote, through
// Beam's filesystem registry so that a gs:// output works as well as a local one. textio may
// shard its output, hence the glob.
func readCounts(ctx context.Context, out string) (map[string]int64, error) {
	fs, err := filesystem.New(ctx, out)
	if err != nil {
		return nil, err
	}
	defer fs.Close()
	files, err := fs.List(ctx, out+"*")
	if err != nil {
		return nil, fmt.Errorf("listing %s*: %w", out, err)
	}
	counts := map[string]int64{}
	if len(files) == 0 {
		// textio.Write groups its lines under one key and writes from that group, so when
		// nothing was counted there is no group and no file: an empty prefix, not an error.
		fmt.Printf("no file matches %s*: nothing was counted\n", out)
		return counts, nil
	}
	for _, name := range files {
		if err := readCountFile(ctx, fs, name, counts); err != nil {
			return nil, err
		}
	}
	return counts, nil
}

func readCountFile(ctx context.Context, fs filesystem.Interface, name string, counts map[string]int64) error {
	r, err := fs.OpenRead(ctx, name)
	if err != nil {
		return err
	}
	defer r.Close()
	sc := bufio.NewScanner(r)
	for line := 1; sc.Scan(); line++ {
		// The count follows the last tab: a type is free text and may itself hold a tab.
		i := strings.LastIndexByte(sc.Text(), '\t')
		if i < 0 {
			return fmt.Errorf("%s:%d: %q is not a type<TAB>count line", name, line, sc.Text())
		}
		n, err := strconv.ParseInt(sc.Text()[i+1:], 10, 64)
		if err != nil {
			return fmt.Errorf("%s:%d: %w", name, line, err)
		}
		counts[sc.Text()[:i]] += n
	}
	return sc.Err()
}

// report prints the per-type table and, when the data was seeded here, whether the counts
// equal the seeded ones.
func report(got map[string]int64, seeded *seedSummary, bad int64) error {
	want := map[string]int64{}
	if seeded != nil {
		want = seeded.CountsByType
	}
	types := make([]string, 0, len(got)+len(want))
	for t := range got {
		types = append(types, t)
	}
	for t := range want {
		if _, ok := got[t]; !ok {
			types = append(types, t)
		}
	}
	sort.Slice(types, func(i, j int) bool {
		a, b := max(got[types[i]], want[types[i]]), max(got[types[j]], want[types[j]])
		return a > b || a == b && types[i] < types[j]
	})

	fmt.Println()
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	var mismatches []string
	var totalGot, totalWant int64
	if seeded != nil {
		fmt.Fprintf(w, "type\tcounted\tseeded\t\n")
	} else {
		fmt.Fprintf(w, "type\tcounted\t\n")
	}
	for _, t := range types {
		totalGot += got[t]
		totalWant += want[t]
		if seeded == nil {
			fmt.Fprintf(w, "%s\t%d\t\n", displayType(t), got[t])
			continue
		}
		fmt.Fprintf(w, "%s\t%d\t%d\t\n", displayType(t), got[t], want[t])
		if got[t] != want[t] {
			mismatches = append(mismatches, fmt.Sprintf("%s counted %d, seeded %d", displayType(t), got[t], want[t]))
		}
	}
	if seeded == nil {
		fmt.Fprintf(w, "total\t%d\t\n", totalGot)
		return w.Flush()
	}
	fmt.Fprintf(w, "total\t%d\t%d\t\n", totalGot, totalWant)
	if err := w.Flush(); err != nil {
		return err
	}
	// Every seeded event is well-formed, so a bad record means s3io cut one wrongly.
	if bad > 0 {
		mismatches = append(mismatches, fmt.Sprintf("%d bad records, seeded none", bad))
	}
	if len(mismatches) > 0 {
		fmt.Printf("MISMATCH: %s\n", strings.Join(mismatches, "; "))
		return errMismatch
	}
	fmt.Println("OK: per-type counts equal what was seeded")
	return nil
}

// displayType quotes a type holding a tab, newline or other control character, which would
// otherwise break the table's columns.
func displayType(t string) string {
	if strings.ContainsFunc(t, unicode.IsControl) {
		return strconv.Quote(t)
	}
	return t
}
