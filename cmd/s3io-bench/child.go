package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/s3"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/textio"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/runners/prism"
	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"

	"github.com/spate-io/beam-s3/internal/s3test"
	"github.com/spate-io/beam-s3/s3io"
)

// childCommand is the hidden subcommand the benchmark re-executes itself with, so that every
// measured run is a fresh process: its CPU time and peak RSS are its own, and no warm
// connection, cache or Beam state carries over from one run to the next.
const childCommand = "run"

// childResult is what a child writes to its result file: the records (lines) and decompressed
// bytes (newlines included) the variant counted; the wall and CPU time of beam.Run alone, by
// which the floor is reported (without generating its records); and the peak resident set
// from /proc/self/status (not ru_maxrss: Go starts children with CLONE_VM, and Linux folds
// the parent's high-water mark into the child's ru_maxrss).
type childResult struct {
	Records, Bytes                      int64
	PipelineSeconds, PipelineCPUSeconds float64
	// FetchedBytes is what s3io's reads and the planner's probes received (its raw_bytes and
	// probe_bytes counters); 0 for a variant that is not s3io.
	FetchedBytes int64
	// ChecksumsVerified is s3io's checksums_verified counter: the objects s3io-verify checked.
	ChecksumsVerified int64
	VmHWMKiB          int64
	Error             string
}

// benchNamespace holds the counting DoFns' counters.
const benchNamespace = "s3io_bench"

var (
	countedRecords = beam.NewCounter(benchNamespace, "records")
	countedBytes   = beam.NewCounter(benchNamespace, "bytes")
)

// sinkRecords and sinkBytes are what the sinks counted, in this process. They, not the
// counters, are the benchmark's counts: prism v2.78 can drop a whole bundle's contribution
// to a counter whose first values reach it in two bundles' final reports at once (its
// metrics store parks them in a map keyed by the counter's short ID, so the second
// overwrites the first), which is exactly how a FinishBundle-only counter first arrives
// when a split makes two sink bundles finish together. prism runs in-process here and fails
// a job rather than retry a bundle, so nothing is counted twice.
var sinkRecords, sinkBytes atomic.Int64

func init() {
	register.DoFn2x0[context.Context, []byte](&countRecordsFn{})
	register.DoFn2x0[context.Context, string](&countLinesFn{})
	register.DoFn2x0[[]byte, func([]byte)](&floorFn{})
	register.Emitter1[[]byte]()
}

// tally counts records and their bytes (plus the newline the framer removed) in fields and
// adds them to the totals once per bundle: a counter update per record would cost a
// metrics lookup each.
type tally struct{ n, b int64 }

func (t *tally) StartBundle(context.Context) { t.n, t.b = 0, 0 }

func (t *tally) FinishBundle(ctx context.Context) {
	sinkRecords.Add(t.n)
	sinkBytes.Add(t.b)
	countedRecords.Inc(ctx, t.n)
	countedBytes.Inc(ctx, t.b)
}

// countRecordsFn is the sink of s3io's records and the floor's; countLinesFn of textio's.
type countRecordsFn struct{ tally }

func (f *countRecordsFn) ProcessElement(_ context.Context, rec []byte) {
	f.n, f.b = f.n+1, f.b+int64(len(rec))+1
}

type countLinesFn struct{ tally }

func (f *countLinesFn) ProcessElement(_ context.Context, line string) {
	f.n, f.b = f.n+1, f.b+int64(len(line))+1
}

// childJob is what the parent asks of a child, as JSON in its one argument. AWS credentials,
// region and (for textio) the endpoint come from the environment the parent sets.
type childJob struct {
	Variant, Bucket, Prefix string
	Endpoint                string // path-style, for the loop and s3io; textio takes AWS_ENDPOINT_URL_S3
	Result, CPUProfile      string // files to write
	Size, ObjectSize        int64  // the floor's dataset
	ReadBufferBytes         int64  // s3io's; 0: its default
	WorkerBufferBytes       int64  // s3io's; 0: its default
	SplitTargetBytes        int64  // s3io's; 0: its default
}

// s3ioConfig is the Config of the s3io variants: every field at its default but the
// buffers and the split target the flags set.
func (j *childJob) s3ioConfig() s3io.Config {
	return s3io.Config{Bucket: j.Bucket, Prefix: j.Prefix + "/", Endpoint: j.Endpoint, UsePathStyle: true, Region: "us-east-1",
		ReadBufferBytes: j.ReadBufferBytes, WorkerBufferBytes: j.WorkerBufferBytes, SplitTargetBytes: j.SplitTargetBytes,
		VerifyChecksums: j.Variant == variantS3ioVerify}
}

// childMain runs one variant over one prefix and writes its result file.
func childMain(args []string) int {
	var j childJob
	if len(args) != 1 || json.Unmarshal([]byte(args[0]), &j) != nil {
		fmt.Fprintf(os.Stderr, "usage: s3io-bench %s JOB-JSON (run by s3io-bench itself)\n", childCommand)
		return 2
	}
	// A Beam program calls Init first; prism in-process runs its workers here, so it returns.
	beam.Init()
	if j.CPUProfile != "" {
		f, err := os.Create(j.CPUProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "cpu profile: %v\n", err)
			return 1
		}
		defer f.Close()
		defer pprof.StopCPUProfile()
	}
	var res childResult
	err := j.run(context.Background(), &res)
	res.VmHWMKiB, _ = strconv.ParseInt(strings.TrimSuffix(procValue("/proc/self/status", "VmHWM"), " kB"), 10, 64)
	if err != nil {
		res.Error = err.Error()
		fmt.Fprintf(os.Stderr, "s3io-bench %s: %v\n", childCommand, err)
	}
	data, _ := json.Marshal(res)
	if err := os.WriteFile(j.Result, data, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if res.Error != "" {
		return 1
	}
	return 0
}

func (j *childJob) run(ctx context.Context, res *childResult) error {
	if readers := loopReaders[j.Variant]; readers > 0 {
		return runLoop(ctx, readers, j.Bucket, j.Prefix, j.Endpoint, nil, res)
	}
	if j.Variant == variantLib {
		// loop2 with the codec library's own decoder: two objects fetched and decoded at once.
		c := codecOf(j.Prefix)
		if c == nil {
			return fmt.Errorf("%s reads only codec-NAME/ prefixes, not %s/", variantLib, j.Prefix)
		}
		return runLoop(ctx, loopReaders[variantLoop2], j.Bucket, j.Prefix, j.Endpoint, c.lib, res)
	}
	p, s := beam.NewPipelineWithRoot()
	switch j.Variant {
	case variantS3io, variantS3ioUnshaped, variantS3ioDirect, variantS3ioVerify, variantIdle:
		beam.ParDo0(s, &countRecordsFn{}, s3io.Read(s, j.s3ioConfig()))
	case variantS3ioBatches:
		readBatches(s, j.s3ioConfig())
	case variantTextio:
		beam.ParDo0(s, &countLinesFn{}, textio.Read(s, "s3://"+j.Bucket+"/"+j.Prefix+"/*"))
	case variantFloor:
		floorData = materialize(j.Size, j.ObjectSize)
		beam.ParDo0(s, &countRecordsFn{}, beam.ParDo(s, &floorFn{}, beam.Impulse(s)))
	default:
		return fmt.Errorf("unknown variant %q", j.Variant)
	}
	return runPipeline(ctx, p, res)
}

// runPipeline runs p on the in-process prism runner, times beam.Run in wall and CPU time,
// and reads the counting DoFn's totals from its result.
func runPipeline(ctx context.Context, p *beam.Pipeline, res *childResult) error {
	start, cpu := time.Now(), selfCPU()
	pr, err := beam.Run(ctx, "prism", p)
	res.PipelineSeconds, res.PipelineCPUSeconds = time.Since(start).Seconds(), (selfCPU() - cpu).Seconds()
	res.Records, res.Bytes = sinkRecords.Load(), sinkBytes.Load()
	counters := s3test.Counters(pr, benchNamespace)
	if counters["records"] != res.Records {
		// Beam's counters disagree with what the sinks saw: prism lost a bundle's metrics
		// (see sinkRecords). Logged so that it stays visible; the counts are unaffected.
		fmt.Fprintf(os.Stderr, "prism's counters report %d records, the sinks counted %d\n", counters["records"], res.Records)
	}
	// s3io's own counters go to the run's log.
	sc := s3test.Counters(pr, s3io.MetricsNamespace)
	res.FetchedBytes = sc["raw_bytes"] + sc["probe_bytes"]
	res.ChecksumsVerified = sc["checksums_verified"]
	fmt.Fprintf(os.Stderr, "sink counted %d records, %d bytes; s3io counters %v\n", res.Records, res.Bytes, sc)
	if err != nil {
		return fmt.Errorf("pipeline: %w", err)
	}
	return nil
}

// floorData is what floorFn emits: the main dataset's records, generated into memory before
// the pipeline starts. prism runs in-process, so its workers see it.
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

// runLoop is what a Go programmer writes without Beam: list the prefix, then `readers`
// goroutines each GET whole objects (so up to `readers` GETs are in flight), decompress them
// and count lines. Response checksum validation is off, as in s3io. With lib set (the lib
// variant), each goroutine decodes every object with the decoder lib returns it; else it
// goes by the key's suffix: gzip, zstd or none.
func runLoop(ctx context.Context, readers int, bucket, prefix, endpoint string, lib func() func(io.Reader) (io.Reader, error), res *childResult) error {
	cfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return fmt.Errorf("load AWS config: %w", err)
	}
	client := s3.NewFromConfig(cfg, func(o *s3.Options) {
		o.BaseEndpoint, o.UsePathStyle = aws.String(endpoint), true
		o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
	})
	objects, err := list(ctx, client, bucket, prefix)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	keys := make(chan string)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range readers {
		wg.Go(func() {
			lr := &loopReader{buf: make([]byte, 4<<20)}
			if lib != nil {
				lr.lib = lib()
			}
			for key := range keys {
				if ctx.Err() != nil {
					continue // drain after an error so the feeder never blocks
				}
				records, n, err := lr.read(ctx, client, bucket, key)
				if err != nil {
					cancel(fmt.Errorf("read s3://%s/%s: %w", bucket, key, err))
				}
				mu.Lock()
				res.Records, res.Bytes = res.Records+records, res.Bytes+n
				mu.Unlock()
			}
		})
	}
	for _, o := range objects {
		keys <- aws.ToString(o.Key)
	}
	close(keys)
	wg.Wait()
	return context.Cause(ctx) // nil when no reader failed
}

// loopReader is one reader goroutine's state: a large line-counting buffer and decoders
// reused from object to object, as a careful hand-written loop would.
type loopReader struct {
	buf []byte
	gz  *gzip.Reader
	zs  *zstd.Decoder
	lib func(io.Reader) (io.Reader, error) // the codec library's decoder (the lib variant)
}

// read GETs one object and counts its lines and decompressed bytes. The last line counts
// without a newline too. buf is filled before it is scanned, so bytes.IndexByte runs over
// long spans.
func (lr *loopReader) read(ctx context.Context, client *s3.Client, bucket, key string) (lines, n int64, err error) {
	out, err := client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		return 0, 0, err
	}
	defer out.Body.Close()
	var r io.Reader = out.Body
	switch {
	case lr.lib != nil:
		r, err = lr.lib(out.Body)
	case strings.HasSuffix(key, ".gz"):
		if lr.gz == nil {
			lr.gz = new(gzip.Reader)
		}
		r, err = lr.gz, lr.gz.Reset(out.Body)
	case strings.HasSuffix(key, ".zst"):
		if lr.zs == nil {
			lr.zs, _ = zstd.NewReader(nil, zstd.WithDecoderConcurrency(1)) // fails only on invalid options
		}
		r, err = lr.zs, lr.zs.Reset(out.Body)
	}
	for last := byte('\n'); err == nil; {
		var k int
		k, err = io.ReadFull(r, lr.buf)
		n += int64(k)
		for chunk := lr.buf[:k]; ; {
			i := bytes.IndexByte(chunk, '\n')
			if i < 0 {
				break
			}
			lines, chunk = lines+1, chunk[i+1:]
		}
		if k > 0 {
			last = lr.buf[k-1]
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			if last != '\n' {
				lines++
			}
			return lines, n, nil
		}
	}
	return lines, n, err
}
