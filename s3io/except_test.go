package s3io_test

import (
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"

	"github.com/spate-io/beam-s3/internal/s3test"
	"github.com/spate-io/beam-s3/s3io"
)

func init() {
	register.Function1x1(descriptorID)
}

func descriptorID(d s3io.SplitDescriptor) string { return d.ID }

// TestExcept: the descriptors whose ID is done are dropped, every other one is kept once,
// and done IDs that the plan does not hold (splits of an older plan) change nothing.
func TestExcept(t *testing.T) {
	var descs []s3io.SplitDescriptor
	for _, k := range []string{"a", "b", "c", "d", "e"} {
		ms := []s3io.Member{{Key: "p/" + k, Size: 10, ETag: `"` + k + `"`}}
		descs = append(descs, s3io.SplitDescriptor{ID: s3io.SplitID("bk", ms), Bucket: "bk", Members: ms})
	}
	p, s := beam.NewPipelineWithRoot()
	done := beam.CreateList(s, []string{descs[1].ID, descs[3].ID, "0123456789abcdef0123456789abcdef"})
	left := s3io.Except(s, beam.CreateList(s, descs), done)
	passert.EqualsList(s, beam.ParDo(s, descriptorID, left), []string{descs[0].ID, descs[2].ID, descs[4].ID})
	pr, err := ptest.RunWithMetrics(p)
	if err != nil {
		t.Fatal(err)
	}
	c := s3test.Counters(pr, s3io.MetricsNamespace)
	if c["splits_already_read"] != 2 || c["splits_left"] != 3 {
		t.Errorf("splits_already_read = %d, splits_left = %d; want 2 and 3", c["splits_already_read"], c["splits_left"])
	}
}
