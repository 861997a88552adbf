package main

import (
	"strconv"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/metrics"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/metricsx"
)

// The harness must number this worker's metrics from shortIDBase up: a new Beam version
// that moves or reshapes its short ID counter fails here, not in a Python pipeline on prism.
func TestShortIDsStartHigh(t *testing.T) {
	startShortIDsHigh()
	id := harnessShortID(metrics.PCollectionLabels("test-pcollection"), metricsx.UrnElementCount)
	n, err := strconv.ParseInt(id, 36, 64)
	if err != nil || n <= shortIDBase {
		t.Fatalf("the harness gave short ID %q (%d, %v); want one above %d", id, n, err, int64(shortIDBase))
	}
}
