package main

import (
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/metrics"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/harness" // for the linknames
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/metricsx"
)

// A worker reports its metrics to the runner by short IDs, which it numbers 1, 2, 3...
// Prism (through Beam 2.78) resolves short IDs per job, not per worker: in a pipeline
// whose Python transforms run in one SDK worker and s3io's in this Go one, both number
// from 1, and prism decodes the Go worker's counter "1" as the Python worker's metric "1"
// and fails the job ("error decoding metrics beam:metric:sampled_byte_size:v1 ... EOF").
// So this worker numbers its short IDs from 1<<40 up, which no other SDK worker of a job
// reaches. The Go SDK keeps its counter unexported; it is reached by linkname, and
// TestShortIDsStartHigh fails if a new Beam version moves it.

//go:linkname defaultShortIDCache github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/harness.defaultShortIDCache
var defaultShortIDCache unsafe.Pointer

//go:linkname harnessShortID github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/harness.getShortID
func harnessShortID(l metrics.Labels, urn metricsx.Urn) string

// shortIDCache mirrors the layout of the harness's shortIDCache (Beam v2.78.0,
// core/runtime/harness/monitoring.go): a mutex, two maps, the last short ID.
type shortIDCache struct {
	mu          sync.Mutex
	_, _        unsafe.Pointer
	lastShortID int64
}

// shortIDBase is where this worker's short IDs start.
const shortIDBase = 1 << 40

func init() { startShortIDsHigh() }

func startShortIDsHigh() {
	c := (*shortIDCache)(defaultShortIDCache)
	c.mu.Lock()
	defer c.mu.Unlock()
	if atomic.LoadInt64(&c.lastShortID) < shortIDBase {
		atomic.StoreInt64(&c.lastShortID, shortIDBase)
	}
}
