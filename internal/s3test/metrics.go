package s3test

import (
	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/metrics"
)

// Counters sums a pipeline's committed counters of namespace by name: a counter updated
// by several steps (lanes of a stage, fused copies) is reported once per step.
func Counters(pr beam.PipelineResult, namespace string) map[string]int64 {
	out := map[string]int64{}
	if pr == nil {
		return out
	}
	for _, c := range pr.Metrics().Query(func(r metrics.SingleResult) bool { return r.Namespace() == namespace }).Counters() {
		out[c.Name()] += c.Result()
	}
	return out
}
