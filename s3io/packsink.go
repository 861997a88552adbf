package s3io

import (
	"context"
	"io"
	"sync/atomic"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/log"

	"golang.org/x/sync/errgroup"

	"github.com/spate-io/beam-s3/s3io/internal/decode"
	"github.com/spate-io/beam-s3/s3io/internal/fetch"
)

// packSink packs a scan's selection into descriptors, cutting large uncompressed objects
// into segments, and hands each descriptor to emit as soon as it is cut.
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
	segs := s.p.segmentable(ctx, s.bucket, ms, &probes)
	st.ProbeRequests += probes.gets.Load()
	st.ProbeBytes += probes.bytes.Load()
	metricProbeRequests.Inc(ctx, probes.gets.Load())
	metricProbeBytes.Inc(ctx, probes.bytes.Load())
	for i, seg := range segs {
		if err := s.p.addMember(ctx, ms[i], seg, s.pk, st); err != nil {
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

// segmentable returns, for each member, the segments it is cut into, or nil to keep it
// whole: large uncompressed objects are cut at even byte offsets, large gzip, zstd and
// bzip2 objects at unit starts the planner finds (unitSegments), in both cases only under a
// self-synchronising framer. The probes (magic bytes, unit starts, a seek table) run
// ListParallelism objects at a time: one after another, a prefix of thousands of large
// objects would cost a request's latency per object to plan.
func (p *planner) segmentable(ctx context.Context, bucket string, ms []Member, probes *probeStats) [][]Member {
	out := make([][]Member, len(ms))
	if !selfSynchronizing(p.cfg.Framer) {
		return out
	}
	segSize := max(p.cfg.SplitTargetBytes, minSegmentBytes)
	var g errgroup.Group
	g.SetLimit(max(p.cfg.ListParallelism, 1))
	for i, m := range ms {
		if m.Archived != "" || m.Size <= segSize {
			continue
		}
		g.Go(func() error {
			switch comp, ok := p.storedCompression(ctx, bucket, m, probes); {
			case !ok:
			case comp == decode.None:
				out[i] = segments(m, segSize)
			case decode.CutAtUnits(comp):
				out[i] = p.unitSegments(ctx, bucket, m, comp, segSize, probes)
			}
			return nil
		})
	}
	g.Wait() // the probes report no error: an object they cannot probe is kept whole
	return out
}

// addMember packs m, or the segments it is cut into.
func (p *planner) addMember(ctx context.Context, m Member, segs []Member, pk *packer, st *PlanStats) error {
	if segs != nil {
		st.Segments += int64(len(segs))
		metricSegmentsPlanned.Inc(ctx, int64(len(segs)))
		if segs[0].Codec != "" {
			return pk.addRun(segs)
		}
		for _, s := range segs {
			if err := pk.add(s); err != nil {
				return err
			}
		}
		return nil
	}
	return pk.add(m)
}

// minSegmentBytes keeps a tiny SplitTargetBytes from cutting objects into segments that
// cost more in requests than they save in parallelism.
const minSegmentBytes = 64 << 10

// segments cuts an object into segments of at most target bytes, as even as whole bytes
// allow, so that readers of one large object work in parallel.
func segments(o Member, target int64) []Member {
	bounds := append(append([]int64{0}, evenCuts(o.Size, target)...), o.Size)
	out := make([]Member, len(bounds)-1)
	for i := range out {
		out[i] = o
		out[i].Start, out[i].End = bounds[i], bounds[i+1]
	}
	return out
}

// storedCompression returns how o's stored bytes are compressed, which segmenting needs: a
// reader can only start inside an object at a record (uncompressed) or at a unit (gzip,
// zstd). In auto mode an object without a compressed extension is probed for magic bytes
// with a pinned GET of its first bytes; ok is false if the probe fails: the object stays
// whole, and its read reports the real problem.
func (p *planner) storedCompression(ctx context.Context, bucket string, o Member, probes *probeStats) (comp decode.Compression, ok bool) {
	mode := decode.Compression(p.cfg.Compression)
	if c := decode.Detect(mode, o.Key, nil); c != decode.None || mode == decode.None {
		return c, true // forced, or named by its extension
	}
	r := fetch.NewGets(p.client, bucket, p.cfg.fetchSettings()).Open(ctx, o.object(), 0, min(decode.MagicLen, o.Size))
	head, err := io.ReadAll(r)
	probes.close(r)
	if err != nil {
		return "", false
	}
	return decode.Detect(decode.Auto, o.Key, head), true
}
