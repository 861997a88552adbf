package s3io

// This file is where the planner cuts large objects into segments, members that each own a
// span of one object: where an object may be cut (cutLarge), at even byte offsets
// (segments) or at compressed units it proves (unitSegments), and how one object's segments
// are packed (addMember, packer.addRun). Member says what a segment owns; the reader sees
// only its span.

import (
	"context"
	"io"
	"slices"

	"golang.org/x/sync/errgroup"

	"github.com/spate-io/beam-s3/s3io/internal/decode"
	"github.com/spate-io/beam-s3/s3io/internal/fetch"
)

// unitProbeBytes bounds how far past a cut the planner looks for a unit start (a gzip member
// or a zstd frame): a BGZF block is at most 64 KiB, a pzstd frame a few MiB of input at its
// default level, and at most half a segment (minUnitProbeBytes at least). A cut
// with no unit start that near is dropped, and its bytes go to the
// segment before it.
const unitProbeBytes = 1 << 20

// minUnitProbeBytes is the least a probe looks through: a BGZF block, the smallest unit
// there is to find, is at most 64 KiB.
const minUnitProbeBytes = 64 << 10

// unitProbeRequest is what the first request of a probe covers: a BGZF block and the proof
// that it decodes, in most cases the whole probe. Each next request asks twice as much, up
// to maxUnitProbeRequest, so the 1.1 MiB a single-member object's probe reads before it
// gives up take 6 requests, not 18 of 64 KiB (a request's latency each, ~30 ms on S3).
const unitProbeRequest = 64 << 10

// maxUnitProbeRequest bounds a probe's requests: a probe stops at the first unit it
// proves, and a request of twice what it read so far would ask for up to that much more
// than it needs. A cut of the 1.1 MB members of 8 MiB chunks gzip'd and concatenated costs
// ~0.7 MB with it (its next member start is half a member away on average).
const maxUnitProbeRequest = 256 << 10

// unitProbesInFlight bounds the probes of one object's cuts that run at once.
const unitProbesInFlight = 8

// unitSegmentBytes is the stored size of the segments of an object of close units (BGZF,
// the seekable format) under a split target of segSize: a quarter of it, at most
// maxUnitSegmentBytes; their cuts cost a request each. A runner that reads a
// bundle's restrictions one after another (prism) decodes the segment after the one being
// emitted into memory (decodedEarly, decodeDepth), so a segment's decoded size, several
// times its stored one, is what a reader holds ahead; consecutive segments are packed back
// into descriptors of unitRunSegments (packer.addRun).
func unitSegmentBytes(segSize int64) int64 {
	return max(min(segSize/4, maxUnitSegmentBytes), minSegmentBytes)
}

// maxUnitSegmentBytes bounds a compressed object's segment: 4 MiB of logs compressed 4-5
// fold decode to ~20 MiB, which the part budget's credit holds ahead (measured: at 16 MiB
// segments the segment decoded ahead ran out of credit, and the second core idled, before
// segments decoded their units in chunks on goroutines of their own).
const maxUnitSegmentBytes = 4 << 20

// unitSegments cuts a large gzip, zstd or bzip2 object m into segments, each starting at a
// unit (a gzip member, a zstd frame, a bzip2 stream) whose start is proven (decode.FindUnit:
// by decoding it, or for bzip2 by the previous stream's end right before it): a zstd seek
// table's frames when the object ends with one (seekable format), else a probe after each
// even cut. The first probe, at the first cut of segments of segSize (the split target),
// looks up to unitProbeBytes far, and then spacedUnitBytes past the unit it found for the
// next. Units that close (BGZF's blocks) are cheap to find: the object is cut into
// segments of unitSegmentBytes(segSize). Units farther apart (a concatenation's members,
// pzstd's frames) cost the distance to the next one at each cut: the object is cut into
// segments of segSize.
// The other probes look four times as far as the first found its unit (a probe reads 64 KiB,
// then twice as much per request, or 64 KiB at a time for spaced units, and stops at the
// first unit it proves). An object whose first cut finds no unit start is taken for one unit
// and kept whole (nil): one probe is all it costs; so is a tar (tarInside). A segment's
// reader decodes its own units and the next one's first record (member/units.go), so that
// a record straddling two units or two segments is read once.
func (p *planner) unitSegments(ctx context.Context, bucket string, m Member, comp decode.Compression, segSize int64, probes *probeStats) []Member {
	gets := fetch.NewGets(p.client, bucket, p.cfg.fetchSettings())
	fine := unitSegmentBytes(segSize)
	if m.Size <= fine || decode.NamesTar(m.Key) {
		return nil // a tar's records are its entries: read whole, as a tar
	}
	targets := evenCuts(m.Size, fine)
	if comp == decode.Zstd {
		if starts, ok := p.zstdSeekTable(ctx, gets, m, probes); ok {
			if p.tarInside(ctx, gets, m, comp, probes) {
				return nil
			}
			return unitCuts(m, comp, seekTableCuts(targets, starts))
		}
	}
	probe := func(t int64, window int, most int64) (int64, bool) {
		r := gets.OpenGrowing(ctx, m.object(), t, min(t+int64(window)+2*decodeProofSlack, m.Size), unitProbeRequest, most)
		defer probes.close(r)
		off, found, err := decode.FindUnit(comp, r, window, p.cfg.MaxDecoderWindowBytes)
		return t + off, found && err == nil
	}
	// The first cut, at the first of the coarse cuts (below), looks up to unitProbeBytes far.
	coarse := evenCuts(m.Size, max(segSize, fine))
	if len(coarse) == 0 {
		coarse = targets[:1]
	}
	first, ok := probe(coarse[0], unitProbeBytes, maxUnitProbeRequest)
	if !ok || p.tarInside(ctx, gets, m, comp, probes) {
		return nil
	}
	most, spaced := int64(maxUnitProbeRequest), false
	if _, near := probe(first+1, spacedUnitBytes, unitProbeRequest); !near {
		// Units this far apart cost that much to find at each cut, and the bytes between a
		// cut and the next unit are read twice, by the probe and by the segment before: cut
		// such an object into segments of the whole target (segSize), each of which decodes
		// its units on two cores in chunks (member/units.go), and probe them in
		// requests of unitProbeRequest, which ask for little past the unit found.
		targets, most, spaced = coarse, unitProbeRequest, true
	} else {
		// The fine cuts, the nearest of them moved to the one probed already.
		i, _ := slices.BinarySearch(targets, coarse[0])
		if i == len(targets) || i > 0 && coarse[0]-targets[i-1] < targets[i]-coarse[0] {
			i--
		}
		targets[i] = coarse[0]
	}
	// The others look four times as far as the first found its unit, the spacing of close
	// units the object shows; up to unitProbeBytes for spaced ones, of which a probe pays
	// only what it reads before the next (a shorter window would drop cuts).
	window := unitProbeBytes
	if !spaced {
		window = int(min(max(4*(first-coarse[0]), minUnitProbeBytes), unitProbeBytes, max(segSize/2, minUnitProbeBytes)))
	}
	return unitCuts(m, comp, probeCuts(targets, coarse[0], first, func(t int64) (int64, bool) {
		return probe(t, window, most)
	}))
}

// seekTableCuts returns, for each target offset, the first frame start of a seek table's
// starts at or after it.
func seekTableCuts(targets, starts []int64) []int64 {
	var cuts []int64
	for _, t := range targets {
		if i, _ := slices.BinarySearch(starts, t); i < len(starts) {
			cuts = append(cuts, starts[i])
		}
	}
	return cuts
}

// probeCuts probes every target but known, whose unit start at was found already,
// unitProbesInFlight at a time, and returns the unit starts found in target order.
func probeCuts(targets []int64, known, at int64, probe func(t int64) (int64, bool)) []int64 {
	found := make([]int64, len(targets))
	have := make([]bool, len(targets))
	var g errgroup.Group
	g.SetLimit(unitProbesInFlight)
	for i, t := range targets {
		if t == known {
			found[i], have[i] = at, true
			continue
		}
		g.Go(func() error {
			found[i], have[i] = probe(t)
			return nil
		})
	}
	g.Wait() // a probe that fails finds no cut; the others still count
	var cuts []int64
	for i, c := range found {
		if have[i] {
			cuts = append(cuts, c)
		}
	}
	return cuts
}

// spacedUnitBytes is how far apart an object's first two units past its first cut may be
// for them to count as close (unitSegments): BGZF blocks are at most 64 KiB stored; the
// members of concatenated gzip files, pzstd's frames or pbzip2's streams are ~0.2-1 MB
// apart. Telling them apart costs one request of unitProbeRequest past the first unit.
const spacedUnitBytes = 64 << 10

// evenCuts returns the offsets that cut size bytes into pieces of about seg, evenly.
func evenCuts(size, seg int64) []int64 {
	n := (size + seg - 1) / seg
	cuts := make([]int64, max(n-1, 0))
	for i := range cuts {
		cuts[i] = size * int64(i+1) / n
	}
	return cuts
}

// tarProbeBytes bounds what tarInside reads of an object's first unit: a bzip2 block, up to
// 900 kB of input, yields no byte before its end.
const tarProbeBytes = 1 << 20

// tarInside reports whether the object m, made of units, decodes to a tar (a bgzip'd or
// pbzip2'd tarball under a name that does not say so): cut into segments, its headers and
// padding would be framed as records, so it is read whole, as its entries, as the reader
// would read it anyway. It decodes the first 512 bytes (decode.MagicLen), through the
// first unit's first request or few, and counts them with the probes. An object whose head
// does not decode is kept whole too: the whole read reports what is wrong with it.
func (p *planner) tarInside(ctx context.Context, gets *fetch.Gets, m Member, comp decode.Compression, probes *probeStats) bool {
	r := gets.OpenGrowing(ctx, m.object(), 0, min(m.Size, tarProbeBytes), unitProbeRequest, maxUnitProbeRequest)
	defer probes.close(r)
	return decode.DecodesToTar(comp, r, p.cfg.MaxDecoderWindowBytes)
}

// decodeProofSlack is what a probe may read past its window to prove a candidate near the
// window's end: decode.FindUnit decodes 64 KiB of a candidate's output.
const decodeProofSlack = 64 << 10

// zstdSeekTable reads the seek table of a seekable-format zstd object, if it ends with one:
// a suffix GET of its last bytes, and a second one if the table is longer.
func (p *planner) zstdSeekTable(ctx context.Context, gets *fetch.Gets, m Member, probes *probeStats) ([]int64, bool) {
	read := func(n int64) ([]byte, error) {
		r := gets.Open(ctx, m.object(), m.Size-n, m.Size)
		defer probes.close(r)
		buf := make([]byte, n)
		_, err := io.ReadFull(r, buf)
		return buf, err
	}
	tail, err := read(min(decode.ZstdSeekTail, m.Size))
	if err != nil {
		return nil, false
	}
	starts, need, ok := decode.ZstdSeekTable(tail, m.Size)
	if need > len(tail) {
		if tail, err = read(int64(need)); err != nil {
			return nil, false
		}
		starts, _, ok = decode.ZstdSeekTable(tail, m.Size)
	}
	return starts, ok
}

// unitCuts returns m's segments between the cuts (stored offsets of unit starts, in order;
// duplicates and a cut at 0 dropped), or nil when no cut is left.
func unitCuts(m Member, comp decode.Compression, cuts []int64) []Member {
	slices.Sort(cuts)
	cuts = slices.Compact(slices.DeleteFunc(cuts, func(c int64) bool { return c <= 0 || c >= m.Size }))
	if len(cuts) == 0 {
		return nil
	}
	out := make([]Member, 0, len(cuts)+1)
	start := int64(0)
	for _, c := range append(cuts, m.Size) {
		seg := m
		seg.Start, seg.End, seg.Codec = start, c, string(comp)
		out = append(out, seg)
		start = c
	}
	return out
}

// cutLarge returns, for each member, the segments it is cut into, or nil to keep it
// whole: large uncompressed objects are cut at even byte offsets, large gzip, zstd and
// bzip2 objects at unit starts the planner finds (unitSegments), in both cases only under a
// self-synchronising framer. The probes (magic bytes, unit starts, a seek table) run
// ListParallelism objects at a time: one after another, a prefix of thousands of large
// objects would cost a request's latency per object to plan.
func (p *planner) cutLarge(ctx context.Context, bucket string, ms []Member, probes *probeStats) [][]Member {
	out := make([][]Member, len(ms))
	if !selfSynchronizing(p.cfg.Framer) || p.cfg.VerifyChecksums {
		// A segment's bytes cannot be checked against the object's checksum alone; read
		// whole (in parallel ranged parts all the same), every object ends verified.
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

// addRun packs the segments of one compressed object, in order, as descriptors of
// unitRunSegments consecutive segments, fewer if they would pass the target's bytes: they
// are cut finer than the target so that a reader decodes the next while it emits one
// (unitSegmentBytes). A descriptor's members are fetched ahead into the reader's part
// budget, which the segment decoded ahead borrows from, so a descriptor holds a few
// segments, not the target's bytes: at the default 64 MiB, descriptors of 16 segments read
// a bgzip object at 1.01x a single gzip member on loopback, of 4 at 1.20x. One segment
// per descriptor fetches too little ahead through a network: 0.82x of the same read
// unshaped, against 1.05x with 4 (docs/performance.md). The cuts depend on the object
// alone.
func (p *packer) addRun(segs []Member) error {
	if err := p.flush(); err != nil {
		return err
	}
	p.gap = 0
	for _, m := range segs {
		if len(p.cur) > 0 && (len(p.cur) >= min(p.maxMembers, unitRunSegments) || p.curBytes+m.weight() > p.target) {
			if err := p.flush(); err != nil {
				return err
			}
		}
		p.cur = append(p.cur, m)
		p.curBytes += m.weight()
	}
	return p.flush()
}

// unitRunSegments is how many of a compressed object's segments a descriptor holds (addRun).
const unitRunSegments = 4
