package s3io

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/log"

	"github.com/spate-io/beam-s3/s3io/internal/fetch"
)

// packSink packs a scan's selection into descriptors, cutting large objects where they
// can be (cutLarge), and hands them to emit with the plan's totals once the listing ends
// (see held).
type packSink struct {
	p      *planner
	bucket string
	pk     *packer
	st     *PlanStats // the scan's, where descriptors are counted
	emit   func(SplitDescriptor) error

	// held are the descriptors packed so far, waiting for the listing's end to carry the
	// plan's totals (SplitDescriptor.PlanObjects, PlanBytes), which a worker reading one
	// cannot learn otherwise; heldBytes estimates the memory they hold. A batch runner starts
	// no read before the planner's bundle ends (Read's Reshuffle waits for it), so holding
	// them delays nothing there. A plan whose descriptors would hold more than
	// maxHeldPlanBytes is sent as it is packed instead (spilled), as planning memory must
	// not grow with the listing: its descriptors carry no totals, but for those packed
	// after the listing ended (ended).
	held      []SplitDescriptor
	heldBytes int64
	spilled   bool
	ended     bool
}

// maxHeldPlanBytes bounds what a plan's held descriptors may take, about 200,000 objects of
// 60-byte keys: of the order of the pages the parallel listing buffers (8 × ListParallelism
// pages of 1,000 keys). A variable so that tests can lower it.
var maxHeldPlanBytes int64 = 32 << 20

// Estimates of what a held descriptor takes beyond its strings: its own fields, and each
// member's (four string headers and three int64s).
const (
	heldDescriptorBytes = 128
	heldMemberBytes     = 96
)

func newPackSink(ctx context.Context, p *planner, bucket string, emit func(SplitDescriptor) error) *packSink {
	s := &packSink{p: p, bucket: bucket, emit: emit}
	s.pk = &packer{bucket: bucket, target: p.cfg.SplitTargetBytes, maxMembers: p.cfg.MaxSplitMembers, emit: func(d SplitDescriptor) error {
		s.st.Descriptors++
		metricSplitsPlanned.Inc(ctx, 1)
		return s.send(d)
	}}
	return s
}

// send holds d until the listing ends (finish sends what was held, in order), or sends it
// now once the plan has spilled.
func (s *packSink) send(d SplitDescriptor) error {
	if s.spilled {
		if s.ended {
			return s.emitTotals(d)
		}
		return s.emit(d)
	}
	s.held = append(s.held, d)
	s.heldBytes += heldBytes(d)
	if s.ended || s.heldBytes <= maxHeldPlanBytes {
		return nil
	}
	s.spilled = true
	return s.release(s.emit)
}

// release hands every held descriptor to emit, in order, and forgets them.
func (s *packSink) release(emit func(SplitDescriptor) error) error {
	held := s.held
	s.held, s.heldBytes = nil, 0
	for _, d := range held {
		if err := emit(d); err != nil {
			return err
		}
	}
	return nil
}

// emitTotals sends d with the plan's totals, which st holds once the listing has ended.
func (s *packSink) emitTotals(d SplitDescriptor) error {
	d.PlanObjects, d.PlanBytes = s.st.Objects, s.st.Bytes
	return s.emit(d)
}

// heldBytes estimates the memory d holds.
func heldBytes(d SplitDescriptor) int64 {
	n := int64(heldDescriptorBytes + len(d.ID) + len(d.Bucket))
	for _, m := range d.Members {
		n += int64(heldMemberBytes + len(m.Key) + len(m.ETag) + len(m.Codec) + len(m.Archived))
	}
	return n
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

// finish packs the last descriptor and sends what was held, now that the plan's totals
// are known.
func (s *packSink) finish() error {
	s.ended = true
	if err := s.pk.flush(); err != nil {
		return err
	}
	return s.release(s.emitTotals)
}

func (s *packSink) report(ctx context.Context, where string, st *PlanStats, took time.Duration) {
	metricObjectsPlanned.Inc(ctx, st.Objects)
	log.Infof(ctx, "s3io: planned %s: %d keys listed with %d requests in %v; %d objects (%d bytes, %d archived) in %d descriptors; %d left out by selection, %d folders not listed", where, st.KeysListed, st.ListRequests, took.Round(time.Millisecond), st.Objects, st.Bytes, st.Archived, st.Descriptors, st.Skipped, st.FoldersSkipped)
	if s.spilled {
		log.Infof(ctx, "s3io: the plan of %s was too large to hold until its listing ended (%d MiB of descriptors): its descriptors were sent as they were packed, without the plan's totals, so the workers' progress lines do not show them", where, maxHeldPlanBytes>>20)
	}
}
