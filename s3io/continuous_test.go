package s3io

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/timers"
)

// TestRefreshClockLastTick: the clock's last refresh is the last multiple t of the
// interval with t+interval <= end; the clock arms its timer for every aligned refresh up to
// it and for none after.
func TestRefreshClockLastTick(t *testing.T) {
	for _, tc := range []struct{ end, interval, want int64 }{
		{3000, 500, 2500},
		{3100, 500, 2500},
		{3499, 500, 2500},
		{3500, 500, 3000},
		{0, 500, 0}, // no end
	} {
		fn := &refreshClockFn{IntervalMs: tc.interval, EndMs: tc.end}
		if got := fn.lastTick(); got != tc.want {
			t.Errorf("end %d interval %d: last tick %d, want %d", tc.end, tc.interval, got, tc.want)
		}
		if tc.end == 0 {
			continue
		}
		if tc.want+tc.interval > tc.end || tc.want+2*tc.interval <= tc.end {
			t.Errorf("end %d interval %d: last tick %d is not the last t with t+interval <= end", tc.end, tc.interval, tc.want)
		}
		for start := int64(0); start+tc.interval <= tc.end; start += tc.interval {
			var armed []int64
			tp := &recordingTimers{}
			for at := start; ; at += tc.interval {
				tp.set = nil
				fn.set(tp, at)
				if len(tp.set) == 0 {
					break
				}
				armed = append(armed, at)
			}
			if last := armed[len(armed)-1]; last != tc.want {
				t.Errorf("end %d interval %d start %d: the clock's last refresh is %d, want %d", tc.end, tc.interval, start, last, tc.want)
			}
		}
	}
}

// recordingTimers is a timers.Provider that keeps what is set.
type recordingTimers struct{ set []timers.TimerMap }

func (r *recordingTimers) Set(t timers.TimerMap) { r.set = append(r.set, t) }

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
