package s3io

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/log"

	"github.com/spate-io/beam-s3/s3io/internal/fetch"
)

// packSink packs a scan's selection into descriptors, cutting large objects where they
// can be (cutLarge), and hands each descriptor to emit as soon as it is complete.
type packSink struct {
	p      *planner
	bucket string
	pk     *packer
	st     *PlanStats // the scan's, where descriptors are counted
}

func newPackSink(ctx context.Context, p *planner, bucket string, emit func(SplitDescriptor) error) *packSink {
	s := &packSink{p: p, bucket: bucket}
	s.pk = &packer{bucket: bucket, target: p.cfg.SplitTargetBytes, maxMembers: p.cfg.MaxSplitMembers, emit: func(d SplitDescriptor) error {
		s.st.Descriptors++
		metricSplitsPlanned.Inc(ctx, 1)
		return emit(d)
	}}
	return s
}

func (s *packSink) take(ctx context.Context, page []selected, st *PlanStats) error {
	s.st = st
	ms := make([]Member, len(page))
	for i, o := range page {
		ms[i] = o.Member
	}
	var probes probeStats
	cut := s.p.cutLarge(ctx, s.bucket, ms, &probes)
	st.ProbeRequests += probes.gets.Load()
	st.ProbeBytes += probes.bytes.Load()
	metricProbeRequests.Inc(ctx, probes.gets.Load())
	metricProbeBytes.Inc(ctx, probes.bytes.Load())
	for i, pieces := range cut {
		if err := s.p.addMember(ctx, ms[i], pieces, s.pk, st); err != nil {
			return err
		}
	}
	return nil
}

// probeStats counts the GETs the planner makes to decide how to cut objects (magic bytes,
// unit starts, seek tables), from the goroutines that probe a page's objects at once.
type probeStats struct{ gets, bytes atomic.Int64 }

// close closes r, counting what it cost: its requests, and the bytes they asked for (or
// received, when a server sent more), since a probe that stops early was sent most of its
// last request anyway.
func (c *probeStats) close(r *fetch.PinnedReader) {
	g, b := r.Transferred()
	b = max(b, r.Requested())
	c.gets.Add(int64(g))
	c.bytes.Add(b)
	r.Close()
}

func (s *packSink) finish() error { return s.pk.flush() }

func (s *packSink) report(ctx context.Context, where string, st *PlanStats, took time.Duration) {
	metricObjectsPlanned.Inc(ctx, st.Objects)
	log.Infof(ctx, "s3io: planned %s: %d keys listed with %d requests in %v; %d objects (%d bytes, %d archived) in %d descriptors; %d left out by selection, %d folders not listed", where, st.KeysListed, st.ListRequests, took.Round(time.Millisecond), st.Objects, st.Bytes, st.Archived, st.Descriptors, st.Skipped, st.FoldersSkipped)
}
