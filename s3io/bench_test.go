package s3io

import (
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/sdf"
)

// BenchmarkTrackerClaim measures the per-record claim the reader makes through the
// LockRTracker Beam hands it.
func BenchmarkTrackerClaim(b *testing.B) {
	rt := sdf.NewLockRTracker(newTracker(restriction{End: position{Member: 1}, Sizes: []int64{1}}))
	b.ReportAllocs()
	claim := position{}
	for b.Loop() {
		if !rt.TryClaim(claim) {
			b.Fatal("claim failed")
		}
		claim.Index++
	}
}
