package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/metrics"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/s3"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/textio"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/runners/prism"
	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"

	"github.com/spate-io/beam-s3/s3io"
)

// childCommand is the hidden subcommand the benchmark re-executes itself with. Every
// measured run is a fresh process, so its CPU time and peak RSS (from the kernel's rusage
// when it exits) belong to that run alone, and no warm connection, cache or Beam state
// carries over from one run to the next.
const childCommand = "run"

// resultMarker starts the one stdout line that carries a child's JSON result; Beam and
// prism may print other things.
const resultMarker = "S3IO-BENCH-RESULT "

// The variants. loop1, loop2 and loop32 are the plain SDK loop with that many GETs in
// flight: two readers on this 2-core machine is the limit a Beam pipeline can hope to
// approach on loopback, and 32 the yardstick for reads bound by request latency (--shape).
// s3io-unshaped and s3io-direct are s3io through the proxy with shaping off, and straight
// to the server; the parent decides the endpoint, the child runs them as s3io.
const (
	variantLoop1        = "loop1"
	variantLoop2        = "loop2"
	variantLoop32       = "loop32"
	variantS3io         = "s3io"
	variantS3ioUnshaped = "s3io-unshaped"
	variantS3ioDirect   = "s3io-direct"
	variantTextio       = "textio"
	variantFloor        = "floor" // the same records emitted from memory: Beam's per-element floor
	variantIdle         = "idle"  // an s3io pipeline over an empty prefix: the baseline process
)

var (
	defaultVariants = []string{variantLoop1, variantLoop2, variantS3io, variantTextio, variantFloor}
	shapeVariants   = []string{variantS3io, variantLoop1, variantLoop2, variantLoop32, variantS3ioUnshaped, variantS3ioDirect, variantFloor}
	knownVariants   = []string{variantLoop1, variantLoop2, variantLoop32, variantS3io, variantS3ioUnshaped, variantS3ioDirect, variantTextio, variantFloor, variantIdle}
	loopReaders     = map[string]int{variantLoop1: 1, variantLoop2: 2, variantLoop32: 32}
)

// childResult is what a child reports on its result line.
type childResult struct {
	Variant string `json:"variant"`
	Prefix  string `json:"prefix"`
	// Records and Bytes are what the variant's own counting saw: records (lines) and
	// decompressed bytes, one newline per record included.
	Records int64 `json:"records"`
	Bytes   int64 `json:"bytes"`
	// Seconds is the time from the child's start to the end of reading, without process
	// start-up and exit; the parent's wall time includes them.
	Seconds float64 `json:"seconds"`
	// PipelineSeconds and PipelineCPUSeconds are the wall and CPU time (getrusage) of
	// beam.Run alone, for the pipeline variants: the floor is reported by these, without
	// the generation of its records.
	PipelineSeconds    float64 `json:"pipeline_seconds,omitempty"`
	PipelineCPUSeconds float64 `json:"pipeline_cpu_seconds,omitempty"`
	// VmHWMKiB is the peak resident set of this process's own memory map, from
	// /proc/self/status just before the result is printed (see runResult.PeakRSSKiB).
	VmHWMKiB int64 `json:"vmhwm_kib,omitempty"`
	// Counters are the s3io counters of an s3io pipeline.
	Counters map[string]int64 `json:"counters,omitempty"`
	Error    string           `json:"error,omitempty"`
}

// benchNamespace holds the counting DoFns' counters.
const benchNamespace = "s3io_bench"

var (
	countedRecords = beam.NewCounter(benchNamespace, "records")
	countedBytes   = beam.NewCounter(benchNamespace, "bytes")
)

func init() {
	register.DoFn2x0[context.Context, []byte](&countRecordsFn{})
	register.DoFn2x0[context.Context, string](&countLinesFn{})
	register.DoFn2x0[[]byte, func([]byte)](&floorFn{})
	register.Emitter1[[]byte]()
}

// countRecordsFn counts s3io's records and their bytes in fields and adds them to counters
// once per bundle: a counter update per record would cost a metrics lookup each, and the
// sum is all the benchmark needs.
type countRecordsFn struct{ n, b int64 }

func (f *countRecordsFn) StartBundle(context.Context) { f.n, f.b = 0, 0 }

func (f *countRecordsFn) ProcessElement(_ context.Context, rec []byte) {
	f.n++
	f.b += int64(len(rec)) + 1 // the newline the framer removed
}

func (f *countRecordsFn) FinishBundle(ctx context.Context) {
	countedRecords.Inc(ctx, f.n)
	countedBytes.Inc(ctx, f.b)
}

// countLinesFn is countRecordsFn for textio, whose lines are strings.
type countLinesFn struct{ n, b int64 }

func (f *countLinesFn) StartBundle(context.Context) { f.n, f.b = 0, 0 }

func (f *countLinesFn) ProcessElement(_ context.Context, line string) {
	f.n++
	f.b += int64(len(line)) + 1
}

func (f *countLinesFn) FinishBundle(ctx context.Context) {
	countedRecords.Inc(ctx, f.n)
	countedBytes.Inc(ctx, f.b)
}

// childMain runs one variant over one prefix and prints its result line. Its AWS
// credentials, region and (for textio) endpoint come from the environment the parent set.
func childMain(args []string) int {
	started := time.Now()
	fs := flag.NewFlagSet("s3io-bench "+childCommand, flag.ContinueOnError)
	variant := fs.String("variant", "", "one of "+strings.Join(knownVariants, ", "))
	bucket := fs.String("bucket", "", "bucket to read")
	prefix := fs.String("prefix", "", "prefix to read, without its trailing slash")
	endpoint := fs.String("endpoint", "", "path-style S3 endpoint for loop and s3io (textio takes AWS_ENDPOINT_URL_S3)")
	cpuprofile := fs.String("cpuprofile", "", "write a CPU profile of this run to this file")
	size := fs.Int64("size", 0, "floor: decompressed bytes of the dataset whose records it emits")
	objectSize := fs.Int64("object-size", 0, "floor: decompressed bytes per object")
	recordSize := fs.Int("record-size", 0, "floor: average record size")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	// A Beam program calls Init before anything else; in a worker process it would take
	// over here (prism in-process runs its workers in this process, so it returns).
	beam.Init()

	res := childResult{Variant: *variant, Prefix: *prefix}
	err := func() error {
		if *cpuprofile != "" {
			f, err := os.Create(*cpuprofile)
			if err != nil {
				return fmt.Errorf("cpu profile: %w", err)
			}
			defer f.Close()
			if err := pprof.StartCPUProfile(f); err != nil {
				return fmt.Errorf("cpu profile: %w", err)
			}
			defer pprof.StopCPUProfile()
		}
		ctx := context.Background()
		switch *variant {
		case variantLoop1, variantLoop2, variantLoop32:
			return runLoop(ctx, loopReaders[*variant], *bucket, *prefix, *endpoint, &res)
		case variantS3io, variantS3ioUnshaped, variantS3ioDirect, variantIdle:
			return runS3io(ctx, *bucket, *prefix, *endpoint, &res)
		case variantTextio:
			return runTextio(ctx, *bucket, *prefix, &res)
		case variantFloor:
			return runFloor(ctx, *size, *objectSize, *recordSize, &res)
		}
		return fmt.Errorf("unknown variant %q", *variant)
	}()
	res.Seconds = time.Since(started).Seconds()
	res.VmHWMKiB = vmHWM()
	if err != nil {
		res.Error = err.Error()
	}
	line, _ := json.Marshal(res)
	fmt.Printf("%s%s\n", resultMarker, line)
	if err != nil {
		fmt.Fprintf(os.Stderr, "s3io-bench %s: %v\n", childCommand, err)
		return 1
	}
	return 0
}

// runLoop is what a Go programmer writes without Beam: list the prefix with the
// ListObjectsV2 paginator, then `readers` goroutines each GET whole objects (so up to
// `readers` GETs are in flight), decompress them and count lines. Response checksum
// validation is off, as in s3io, so both pay for the same work.
func runLoop(ctx context.Context, readers int, bucket, prefix, endpoint string, res *childResult) error {
	cfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return fmt.Errorf("load AWS config: %w", err)
	}
	client := s3.NewFromConfig(cfg, func(o *s3.Options) {
		o.BaseEndpoint = aws.String(endpoint)
		o.UsePathStyle = true
		o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
	})
	var keys []string
	pages := s3.NewListObjectsV2Paginator(client, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix + "/")})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("list s3://%s/%s/: %w", bucket, prefix, err)
		}
		for _, o := range page.Contents {
			keys = append(keys, aws.ToString(o.Key))
		}
	}

	jobs := make(chan string)
	errs := make(chan error, readers)
	var mu sync.Mutex
	var wg sync.WaitGroup
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for r := 0; r < readers; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lr := &loopReader{buf: make([]byte, 4<<20)}
			defer lr.close()
			var records, n int64
			for key := range jobs {
				rc, bc, err := lr.read(ctx, client, bucket, key)
				if err != nil {
					errs <- err
					cancel()
					break
				}
				records += rc
				n += bc
			}
			for range jobs { // drain after an error so the feeder never blocks
			}
			mu.Lock()
			res.Records += records
			res.Bytes += n
			mu.Unlock()
		}()
	}
	for _, k := range keys {
		jobs <- k
	}
	close(jobs)
	wg.Wait()
	close(errs)
	return <-errs // nil when no reader failed
}

// loopReader is one reader goroutine's state: a large line-counting buffer and decoders
// reused from object to object, as a careful hand-written loop would.
type loopReader struct {
	buf []byte
	gz  *gzip.Reader
	zs  *zstd.Decoder
}

func (lr *loopReader) close() {
	if lr.zs != nil {
		lr.zs.Close()
	}
}

func (lr *loopReader) read(ctx context.Context, client *s3.Client, bucket, key string) (records, n int64, err error) {
	out, err := client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		return 0, 0, fmt.Errorf("get s3://%s/%s: %w", bucket, key, err)
	}
	defer out.Body.Close()
	var r io.Reader = out.Body
	switch {
	case strings.HasSuffix(key, ".gz"):
		if lr.gz == nil {
			lr.gz, err = gzip.NewReader(out.Body)
		} else {
			err = lr.gz.Reset(out.Body)
		}
		r = lr.gz
	case strings.HasSuffix(key, ".zst"):
		if lr.zs == nil {
			lr.zs, err = zstd.NewReader(out.Body, zstd.WithDecoderConcurrency(1))
		} else {
			err = lr.zs.Reset(out.Body)
		}
		r = lr.zs
	}
	if err != nil {
		return 0, 0, fmt.Errorf("decompress s3://%s/%s: %w", bucket, key, err)
	}
	records, n, err = countLines(r, lr.buf)
	if err != nil {
		return records, n, fmt.Errorf("read s3://%s/%s: %w", bucket, key, err)
	}
	return records, n, nil
}

// countLines counts the lines of r (a last line without a newline counts too) and its
// bytes. It fills buf before scanning, so bytes.IndexByte runs over long spans.
func countLines(r io.Reader, buf []byte) (lines, n int64, err error) {
	last := byte('\n')
	for {
		filled := 0
		for filled < len(buf) && err == nil {
			var k int
			k, err = r.Read(buf[filled:])
			filled += k
		}
		chunk := buf[:filled]
		n += int64(filled)
		for {
			i := bytes.IndexByte(chunk, '\n')
			if i < 0 {
				break
			}
			lines++
			chunk = chunk[i+1:]
		}
		if filled > 0 {
			last = buf[filled-1]
		}
		if err == io.EOF {
			if last != '\n' {
				lines++
			}
			return lines, n, nil
		}
		if err != nil {
			return lines, n, err
		}
	}
}

// runS3io reads the prefix with s3io.Read on the in-process prism runner and counts with a
// ParDo0 sink. The endpoint is the server's (or the proxy's) path-style URL; credentials
// come from the environment, as on any worker. Everything else is s3io's default: the
// defaults are what is measured.
func runS3io(ctx context.Context, bucket, prefix, endpoint string, res *childResult) error {
	p, s := beam.NewPipelineWithRoot()
	records := s3io.Read(s, s3io.Config{Bucket: bucket, Prefix: prefix + "/", Endpoint: endpoint, UsePathStyle: true, Region: "us-east-1"})
	beam.ParDo0(s, &countRecordsFn{}, records)
	return runPipeline(ctx, "s3io", p, res)
}

// floorData is what floorFn emits. prism runs in-process, so its workers see it.
var floorData [][]byte

// floorFn emits every record of floorData, newline removed, as s3io's framers emit them.
type floorFn struct{}

func (floorFn) ProcessElement(_ []byte, emit func([]byte)) {
	for _, obj := range floorData {
		for len(obj) > 0 {
			i := bytes.IndexByte(obj, '\n') // every generated record ends with one
			emit(obj[:i:i])
			obj = obj[i+1:]
		}
	}
}

// runFloor is Beam's per-element floor: the main dataset's records, generated into memory
// before the pipeline starts, emitted by one DoFn from an Impulse into the sink s3io's
// records go to. Only beam.Run is timed (PipelineSeconds, PipelineCPUSeconds).
func runFloor(ctx context.Context, size, objectSize int64, recordSize int, res *childResult) error {
	if size <= 0 || objectSize <= 0 || recordSize <= 0 {
		return errors.New("floor needs --size, --object-size and --record-size")
	}
	floorData = materialize(size, objectSize, recordSize)
	p, s := beam.NewPipelineWithRoot()
	beam.ParDo0(s, &countRecordsFn{}, beam.ParDo(s, &floorFn{}, beam.Impulse(s)))
	return runPipeline(ctx, "floor", p, res)
}

// runTextio reads the prefix with Beam's textio over Beam's S3 filesystem, configured only
// through the AWS environment (AWS_ENDPOINT_URL_S3, keys, region), as its users must: the
// filesystem takes no options and addresses buckets virtual-hosted style.
func runTextio(ctx context.Context, bucket, prefix string, res *childResult) error {
	if os.Getenv("AWS_ENDPOINT_URL_S3") == "" {
		return errors.New("AWS_ENDPOINT_URL_S3 is not set: textio would read from AWS itself")
	}
	p, s := beam.NewPipelineWithRoot()
	lines := textio.Read(s, "s3://"+bucket+"/"+prefix+"/*")
	beam.ParDo0(s, &countLinesFn{}, lines)
	return runPipeline(ctx, "textio", p, res)
}

// runPipeline runs p on the in-process prism runner, times beam.Run in wall and CPU time,
// and collects the counting DoFn's totals, and any s3io counters, from its result.
func runPipeline(ctx context.Context, name string, p *beam.Pipeline, res *childResult) error {
	start, cpu := time.Now(), selfCPU()
	pr, err := beam.Run(ctx, "prism", p)
	res.PipelineSeconds, res.PipelineCPUSeconds = time.Since(start).Seconds(), (selfCPU() - cpu).Seconds()
	if pr != nil {
		collect(pr, res)
	}
	if err != nil {
		return fmt.Errorf("%s pipeline: %w", name, err)
	}
	return nil
}

// collect reads the counting DoFn's totals, and s3io's counters, from the pipeline result.
func collect(pr beam.PipelineResult, res *childResult) {
	for _, c := range pr.Metrics().Query(func(r metrics.SingleResult) bool {
		return r.Namespace() == benchNamespace || r.Namespace() == s3io.MetricsNamespace
	}).Counters() {
		switch {
		case c.Namespace() == benchNamespace && c.Name() == "records":
			res.Records += c.Result()
		case c.Namespace() == benchNamespace && c.Name() == "bytes":
			res.Bytes += c.Result()
		case c.Namespace() == s3io.MetricsNamespace:
			if res.Counters == nil {
				res.Counters = map[string]int64{}
			}
			res.Counters[c.Name()] += c.Result()
		}
	}
}

// vmHWM returns this process's peak resident set in KiB from /proc/self/status, or 0 where
// there is none.
func vmHWM() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			v, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return v
		}
	}
	return 0
}
