// Package runners runs the same s3io pipelines on every runner the project supports here:
// prism in-process, a prism job server in a separate process, and Apache Flink through
// Beam's Flink job server, all with LOOPBACK workers against a versitygw S3 server.
package runners

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/local"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/textio"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/runners/flink"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/runners/prism"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/runners/universal"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"

	"github.com/spate-io/beam-s3/internal/clitool"
	"github.com/spate-io/beam-s3/internal/faultproxy"
	"github.com/spate-io/beam-s3/internal/jobservers"
	"github.com/spate-io/beam-s3/internal/s3test"
	"github.com/spate-io/beam-s3/internal/versitygw"
	"github.com/spate-io/beam-s3/s3io"
)

// TestMain parses Beam's flags and lets this binary serve as a LOOPBACK worker.
func TestMain(m *testing.M) { ptest.Main(m) }

// target is one runner and how to submit to it.
type target struct {
	name   string
	runner string                     // the Beam runner name
	start  func(t *testing.T) string  // starts the job server; returns its endpoint
	check  func(t *testing.T, r *run) // runner-specific assertions
}

type run struct {
	proxy    *faultproxy.Proxy
	counters map[string]int64
}

var targets = []target{
	{name: "prism in-process", runner: "prism"},
	{name: "prism job server", runner: "universal", start: func(t *testing.T) string { return jobservers.Prism(t) }},
	{
		name: "flink", runner: "flink", start: func(t *testing.T) string { return jobservers.Flink(t, "[local]") },
		// Flink never splits a splittable DoFn dynamically: descriptors and initial
		// splits are its parallelism. With parallelism 2, two tasks read at once.
		check: func(t *testing.T, r *run) {
			if n := r.proxy.MaxInFlight(); n < 2 {
				t.Errorf("at most %d object GET(s) in flight: Flink did not read descriptors in parallel tasks", n)
			}
		},
	},
}

// submit runs p on tg, with LOOPBACK workers in this process, and returns its result.
func submit(t *testing.T, tg target, endpoint string, p *beam.Pipeline) (beam.PipelineResult, error) {
	t.Helper()
	if endpoint != "" {
		oldEndpoint, oldEnv := *jobopts.Endpoint, *jobopts.EnvironmentType
		*jobopts.Endpoint, *jobopts.EnvironmentType = endpoint, "LOOPBACK"
		defer func() { *jobopts.Endpoint, *jobopts.EnvironmentType = oldEndpoint, oldEnv }()
	}
	if tg.runner == "flink" {
		old := *jobopts.Parallelism
		*jobopts.Parallelism = 2
		defer func() { *jobopts.Parallelism = old }()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	return beam.Run(ctx, tg.runner, p)
}

// seedMixedPrefix stores plain, gzip and zstd objects, many small ones and one large
// uncompressed one that the planner segments, and returns every record.
func seedMixedPrefix(t *testing.T, g *versitygw.Gateway, bucket string) []string {
	g.CreateBucket(t, bucket)
	var want []string
	for i := 0; i < 24; i++ {
		var b strings.Builder
		for j := 0; j < 500+i*10; j++ {
			r := fmt.Sprintf(`{"obj":%d,"i":%d,"kind":"%s"}`, i, j, []string{"plain", "gzip", "zstd"}[i%3])
			b.WriteString(r + "\n")
			want = append(want, r)
		}
		data, key := []byte(b.String()), fmt.Sprintf("in/obj-%02d.ndjson", i)
		switch i % 3 {
		case 1:
			data, key = s3test.Gzip(b.String()), key+".gz"
		case 2:
			data, key = s3test.Zstd(b.String()), key+".zst"
		}
		g.Put(t, bucket, key, data)
	}
	var big strings.Builder
	for j := 0; big.Len() < 600<<10; j++ {
		r := fmt.Sprintf(`{"big":%d,"pad":"%s"}`, j, strings.Repeat("b", j%120))
		big.WriteString(r + "\n")
		want = append(want, r)
	}
	g.Put(t, bucket, "in/zz-large.ndjson", []byte(big.String()))
	return want
}

// seedBGZF stores one object written by bgzip (a gzip member per 64 KiB of records, which the
// planner cuts into segments at member starts) and returns its records, sorted.
func seedBGZF(t *testing.T, g *versitygw.Gateway, bucket string) []string {
	g.CreateBucket(t, bucket)
	var b strings.Builder
	var want []string
	for j := 0; b.Len() < 4<<20; j++ {
		r := fmt.Sprintf(`{"seg":%d,"pad":"%x"}`, j, uint64(j)*0x9e3779b97f4a7c15)
		b.WriteString(r + "\n")
		want = append(want, r)
	}
	g.Put(t, bucket, "bgzf/records.ndjson.gz", clitool.Run(t, []byte(b.String()), "bgzip", "-c"))
	slices.Sort(want)
	return want
}

func TestRunners(t *testing.T) {
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			g := versitygw.Start(t)
			proxy := faultproxy.New(t, g.URL)
			endpoint := ""
			if tg.start != nil {
				endpoint = tg.start(t)
			}

			t.Run("mixed prefix", func(t *testing.T) {
				want := seedMixedPrefix(t, g, "mixed")
				// Each object's first GET pauses: reads that overlap show parallel tasks.
				proxy.Configure(func(p *faultproxy.Proxy) {
					p.Decide = func(key string, n int) faultproxy.Fault {
						if n == 1 {
							return faultproxy.Fault{StallAfter: 1, Stall: 200 * time.Millisecond}
						}
						return faultproxy.Fault{}
					}
				})
				out := filepath.Join(t.TempDir(), "records.txt")
				p, s := beam.NewPipelineWithRoot()
				cfg := s3io.Config{Bucket: "mixed", Prefix: "in/", Endpoint: proxy.URL, UsePathStyle: true,
					SplitTargetBytes: 64 << 10, InitialSplitBytes: 32 << 10}
				textio.Write(s, out, beam.ParDo(s, s3test.RecordString, s3io.Read(s, cfg)))
				pr, err := submit(t, tg, endpoint, p)
				if err != nil {
					t.Fatalf("%s: pipeline failed: %v", tg.name, err)
				}
				got := s3test.ReadLines(t, out+"*")
				slices.Sort(got)
				slices.Sort(want)
				c := s3test.Counters(pr, s3io.MetricsNamespace)
				t.Logf("%s: job %q done; compared %d records written by textio with %d seeded; counters %v; max GETs in flight %d",
					tg.name, pr.JobID(), len(got), len(want), c, proxy.MaxInFlight())
				if !slices.Equal(got, want) {
					t.Fatalf("%s: the output is not the seeded multiset: %d records, want %d", tg.name, len(got), len(want))
				}
				if c["segments_planned"] < 2 {
					t.Errorf("segments_planned = %d: the large object was not segmented", c["segments_planned"])
				}
				if tg.check != nil {
					tg.check(t, &run{proxy: proxy, counters: c})
				}
			})

			t.Run("segmented bgzip object", func(t *testing.T) {
				want := seedBGZF(t, g, "units")
				// Every GET pauses: segments read by parallel tasks overlap.
				proxy.Reset()
				proxy.Configure(func(p *faultproxy.Proxy) {
					p.Decide = func(key string, n int) faultproxy.Fault {
						return faultproxy.Fault{StallAfter: 1, Stall: 100 * time.Millisecond}
					}
				})
				defer proxy.Configure(func(p *faultproxy.Proxy) { p.Decide = nil })
				out := filepath.Join(t.TempDir(), "records.txt")
				p, s := beam.NewPipelineWithRoot()
				cfg := s3io.Config{Bucket: "units", Prefix: "bgzf/", Endpoint: proxy.URL, UsePathStyle: true, Framer: "ndjson",
					SplitTargetBytes: 256 << 10}
				textio.Write(s, out, beam.ParDo(s, s3test.RecordString, s3io.Read(s, cfg)))
				pr, err := submit(t, tg, endpoint, p)
				if err != nil {
					t.Fatalf("%s: pipeline failed: %v", tg.name, err)
				}
				got := s3test.ReadLines(t, out+"*")
				slices.Sort(got)
				c := s3test.Counters(pr, s3io.MetricsNamespace)
				t.Logf("%s: %d records, counters %v, max GETs in flight %d", tg.name, len(got), c, proxy.MaxInFlight())
				if !slices.Equal(got, want) {
					t.Fatalf("%s: the output is not the object's records: %d records, want %d", tg.name, len(got), len(want))
				}
				if c["segments_planned"] < 8 || c["splits_planned"] < 2 {
					t.Errorf("segments_planned = %d, splits_planned = %d: want the BGZF object in at least 8 segments and 2 descriptors", c["segments_planned"], c["splits_planned"])
				}
				// Its 64 KiB segments plan 8 KiB past their end for the next member's first record.
				if c["raw_bytes"] > c["bytes_listed"]*13/10 {
					t.Errorf("raw_bytes = %d for %d stored: the segments fetched more than 1.3x the object", c["raw_bytes"], c["bytes_listed"])
				}
				if tg.check != nil {
					tg.check(t, &run{proxy: proxy, counters: c})
				}
			})

			t.Run("deleted object fails the job", func(t *testing.T) {
				g.CreateBucket(t, "quarantine")
				for i := 0; i < 4; i++ {
					g.Put(t, "quarantine", fmt.Sprintf("q/%d.txt", i), []byte(fmt.Sprintf("line %d\n", i)))
				}
				proxy.Reset()
				proxy.Configure(func(p *faultproxy.Proxy) {
					p.Decide = nil
					p.Before = faultproxy.BeforeFirstGet([]string{"q/2.txt"}, func(key string) {
						g.Delete(t, "quarantine", key) // after planning, before its read
					})
				})
				defer proxy.Configure(func(p *faultproxy.Proxy) { p.Before = nil })
				p, s := beam.NewPipelineWithRoot()
				s3io.Read(s, s3io.Config{Bucket: "quarantine", Prefix: "q/", Endpoint: proxy.URL, UsePathStyle: true})
				pr, err := submit(t, tg, endpoint, p)
				if err == nil {
					t.Fatalf("%s: the job succeeded although q/2.txt was deleted after planning", tg.name)
				}
				jobID := ""
				if pr != nil {
					jobID = pr.JobID()
				}
				if !strings.Contains(err.Error(), "q/2.txt") {
					t.Errorf("%s: the job error does not name the deleted object q/2.txt: %v", tg.name, err)
				}
				t.Logf("%s: job %q failed as it must: %.400q", tg.name, jobID, err)
			})
		})
	}
}
