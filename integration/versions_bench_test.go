package integration

import (
	"context"
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/spate-io/beam-s3/s3io"
)

// BenchmarkPlanVersions measures what planning versions costs against planning current
// objects, on MinIO, over one prefix of 2,000 keys in 40 folders with four versions each
// (three noncurrent) and a delete marker on every tenth: LIST requests, and keys planned
// per second.
//
//	go test -run '^$' -bench PlanVersions -benchtime 5x ./integration
func BenchmarkPlanVersions(b *testing.B) {
	srv := startMinIO(b)
	const bucket, keys = "bench-versions", 2000
	srv.bucket(b, bucket, types.BucketVersioningStatusEnabled)
	for i := range keys {
		key := fmt.Sprintf("v/%02d/obj-%05d.txt", i%40, i)
		for gen := range 4 {
			srv.put(b, bucket, key, fmt.Appendf(nil, "gen %d of %d\n", gen, i))
		}
		if i%10 == 0 {
			srv.del(b, bucket, key, "")
		}
	}
	for _, mode := range []struct {
		name string
		v    s3io.Versions
	}{{"current", s3io.Versions{}}, {"pinned", s3io.Versions{Pinned: true}}} {
		b.Run(mode.name, func(b *testing.B) {
			cfg := s3io.Config{Bucket: bucket, Prefix: "v/", Endpoint: srv.endpoint, UsePathStyle: true, Versions: mode.v}
			var st s3io.PlanStats
			for b.Loop() {
				var err error
				st, err = s3io.PlanDescriptors(context.Background(), cfg, func(s3io.SplitDescriptor) error { return nil })
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(st.ListRequests), "lists/plan")
			b.ReportMetric(float64(st.VersionsListed), "versions/plan")
			b.ReportMetric(float64(st.Objects), "objects/plan")
			b.ReportMetric(float64(st.KeysListed)*float64(b.N)/b.Elapsed().Seconds(), "keys/s")
		})
	}
}
