package s3io_test

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/spate-io/beam-s3/internal/dirbucket"
	"github.com/spate-io/beam-s3/internal/s3test"
	"github.com/spate-io/beam-s3/s3io"
)

// BenchmarkPlanDirectoryBucket plans the same keys from a directory bucket and from a
// general-purpose bucket served by the same in-process server (dirbucket), with and without
// a LIST latency, and reports keys planned per second and the requests each plan sent:
//
//	go test -run '^$' -bench PlanDirectoryBucket -benchtime 5x ./s3io
//
// Layouts: the test's (10,443 keys in 121 folders), 100 folders of 1,000 keys, and one
// folder of 20,000 keys, which a directory bucket can only list one page after another.
func BenchmarkPlanDirectoryBucket(b *testing.B) {
	s3test.SetAWSEnv(b, "ak", "sk")
	body := make([]byte, 100)
	layouts := []struct {
		name string
		keys []string
	}{
		{"test-layout", func() []string { k, _ := directoryLayout(60, 100, 70); return k }()},
		{"100x1000", numbered("ev/f%03d/%04d", 100, 1000)},
		{"1x20000", numbered("ev/f%03d/%05d", 1, 20000)},
	}
	for _, l := range layouts {
		for _, latency := range []time.Duration{0, 30 * time.Millisecond} {
			dir := dirbucket.New(b, dirBucket, "ak", "sk")
			gen := dirbucket.NewGeneral(b, "events", "ak", "sk")
			for _, srv := range []*dirbucket.Server{dir, gen} {
				srv.SetListLatency(latency)
				for _, k := range l.keys {
					srv.Put(k, body)
				}
			}
			for _, srv := range []*dirbucket.Server{gen, dir} {
				kind := "general"
				if srv == dir {
					kind = "directory"
				}
				b.Run(fmt.Sprintf("%s/latency=%s/%s", l.name, latency, kind), func(b *testing.B) {
					cfg := s3io.Config{Bucket: srv.Bucket, Prefix: "ev/", Endpoint: srv.URL, UsePathStyle: true, Region: "us-west-2", Compression: s3io.CompressionNone}
					before, cpu := srv.Counts(), cpuTime()
					var st s3io.PlanStats
					for b.Loop() {
						var err error
						if st, err = s3io.PlanDescriptors(context.Background(), cfg, func(s3io.SplitDescriptor) error { return nil }); err != nil {
							b.Fatal(err)
						}
					}
					after, used := srv.Counts(), cpuTime()-cpu
					b.ReportMetric(float64(used.Nanoseconds())/1e3/float64(st.KeysListed*int64(b.N)), "cpu-µs/key")
					b.ReportMetric(float64(st.KeysListed)*float64(b.N)/b.Elapsed().Seconds(), "keys/s")
					b.ReportMetric(float64(after.Lists-before.Lists)/float64(b.N), "LIST/plan")
					b.ReportMetric(float64(after.CreateSession-before.CreateSession), "CreateSession")
					b.ReportMetric(0, "ns/op")
				})
			}
		}
	}
}

// cpuTime is the CPU time this process has used: the planner's and the in-process
// server's, which serves both kinds of bucket with the same code but for the order.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// numbered returns folders × perFolder keys formatted from format with the folder's and
// the key's numbers.
func numbered(format string, folders, perFolder int) []string {
	var keys []string
	for f := range folders {
		for i := range perFolder {
			keys = append(keys, fmt.Sprintf(format, f, i))
		}
	}
	return keys
}
