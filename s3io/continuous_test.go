package s3io

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
)

// TestRefreshScheduleLastTick: the last refresh of a schedule is the last multiple t of the
// interval with t+interval <= end, as periodic.Sequence emits them (its restriction is
// [0, (end-start)/interval)), for starts aligned to the interval.
func TestRefreshScheduleLastTick(t *testing.T) {
	for _, tc := range []struct{ end, interval, want int64 }{
		{3000, 500, 2500},
		{3100, 500, 2500},
		{3499, 500, 2500},
		{3500, 500, 3000},
		{0, 500, 0}, // no end
	} {
		fn := &refreshScheduleFn{IntervalMs: tc.interval, EndMs: tc.end}
		if got := fn.lastTick(); got != tc.want {
			t.Errorf("end %d interval %d: last tick %d, want %d", tc.end, tc.interval, got, tc.want)
		}
		if tc.end == 0 {
			continue
		}
		// What periodic.Sequence would emit from any aligned start before the end.
		for start := int64(0); start+tc.interval <= tc.end; start += tc.interval {
			n := (tc.end - start) / tc.interval
			if last := start + (n-1)*tc.interval; last != tc.want {
				t.Errorf("end %d interval %d start %d: the sequence's last tick is %d, lastTick says %d", tc.end, tc.interval, start, last, tc.want)
			}
		}
	}
}

// TestReadContinuouslyRejects: a bad Config or an interval under a second fails when the
// pipeline is built, naming what to fix.
func TestReadContinuouslyRejects(t *testing.T) {
	for _, tc := range []struct {
		cfg      Config
		interval time.Duration
		want     string
	}{
		{Config{Bucket: "logs"}, 100 * time.Millisecond, "interval of a second or more"},
		{Config{}, time.Minute, "Bucket"},
	} {
		func() {
			defer func() {
				r := recover()
				if r == nil || !strings.Contains(fmt.Sprint(r), tc.want) {
					t.Errorf("ReadContinuously(%+v, %v) panicked with %v, want a message naming %q", tc.cfg, tc.interval, r, tc.want)
				}
			}()
			_, s := beam.NewPipelineWithRoot()
			ReadContinuously(s, tc.cfg, tc.interval, time.Time{})
		}()
	}
}
