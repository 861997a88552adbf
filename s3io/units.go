package s3io

import (
	"context"
	"io"
	"slices"
	"sync"

	"github.com/spate-io/beam-s3/s3io/internal/decode"
	"github.com/spate-io/beam-s3/s3io/internal/fetch"
)

// unitProbeBytes bounds how far past a cut the planner looks for a unit start (a gzip member
// or a zstd frame): a BGZF block is at most 64 KiB, a pzstd frame a few MiB of input at its
// default level, and at most a quarter of a segment (minUnitProbeBytes at least). A cut
// with no unit start that near is dropped, and its bytes go to the
// segment before it.
const unitProbeBytes = 1 << 20

// minUnitProbeBytes is the least a probe looks through: a BGZF block, the smallest unit
// there is to find, is at most 64 KiB.
const minUnitProbeBytes = 64 << 10

// unitProbeRequest is what the first request of a probe covers: a BGZF block and the proof
// that it decodes, in most cases the whole probe. Each next request asks twice as much, up
// to maxUnitProbeRequest, so the 1.1 MiB a single-member object's probe reads before it
// gives up take 7 requests, not 18 of 64 KiB (a request's latency each, ~30 ms on S3).
const unitProbeRequest = 64 << 10

// maxUnitProbeRequest bounds a probe's requests: past it, doubling would ask for up to
// twice what the probe reads, and a probe stops at the first unit it proves.
const maxUnitProbeRequest = 256 << 10

// unitProbesInFlight bounds the probes of one object's cuts that run at once.
const unitProbesInFlight = 8

// unitProbeShare bounds what an object's probes cost: past one request per cut, at most
// 1/unitProbeShare (4 %) of its stored bytes, so that planning and reading it fetch ~1.05×
// it. A probe costs the distance from its cut to the next unit start, half a unit on
// average, plus its proof: a BGZF cut ~64 KiB (1.6 % of a 4 MiB segment), but the 1.1 MB
// members of 8 MiB chunks gzip'd and concatenated ~0.7 MB a cut, which at the 31 cuts of a
// 16 MiB split target cost 17 % of the object (measured). A variable, so that unit tests
// can cut small objects into many segments.
var unitProbeShare int64 = 25

// unitSegmentBytes is the stored size of a compressed object's segments under a split
// target of segSize: a quarter of it, at most maxUnitSegmentBytes. A runner that reads a
// bundle's restrictions one after another (prism) decodes the segment after the one being
// emitted into memory (decodedAhead, decodeAhead), so a segment's decoded size, several
// times its stored one, is what a reader holds ahead; consecutive segments are packed back
// into descriptors of unitRunSegments (packer.addRun).
func unitSegmentBytes(segSize int64) int64 {
	return max(min(segSize/4, maxUnitSegmentBytes), minSegmentBytes)
}

// maxUnitSegmentBytes bounds a compressed object's segment: 4 MiB of logs compressed 4-5
// fold decode to ~20 MiB, which the part budget's credit holds ahead (measured: at 16 MiB
// segments the segment decoded ahead ran out of credit, and the second core idled).
const maxUnitSegmentBytes = 4 << 20

// unitSegments cuts a large gzip or zstd object m into segments of about segSize stored
// bytes, each starting at a unit (a gzip member, a zstd frame) whose start is proven by
// decoding it: a zstd seek table's frames when the object ends with one (seekable format),
// else a probe after each even cut (BGZF blocks are a few KiB apart, a concatenation's
// members maybe MiBs: a probe reads 64 KiB, then twice as much per request, and stops at the
// first unit it proves). The cuts are probed by halving: the middle one first, up to
// unitProbeBytes far (an object whose middle cut finds no unit start is taken for one unit
// and kept whole, nil: one probe is all it costs), then the quarters, the eighths, ..., each
// up to four times as far as the farthest unit found, while what the probes cost so far
// says the next round fits the object's probe budget (unitProbeShare). An object whose
// units are large relative to its segments so gets fewer, larger segments, still evenly
// spread. A segment's reader decodes its own units and the next one's first record
// (decode.OpenUnits), so that a record straddling two units or two segments is read once.
func (p *planner) unitSegments(ctx context.Context, bucket string, m Member, comp decode.Compression, segSize int64, probes *probeStats) []Member {
	gets := fetch.NewGets(p.client, bucket, p.cfg.fetchSettings())
	n := (m.Size + segSize - 1) / segSize
	if n < 2 {
		return nil
	}
	targets := make([]int64, n-1)
	for i := range targets {
		targets[i] = m.Size * int64(i+1) / n
	}
	var cuts []int64
	if comp == decode.Zstd {
		if starts, ok := p.zstdSeekTable(ctx, gets, m, probes); ok {
			for _, t := range targets {
				if i, _ := slices.BinarySearch(starts, t); i < len(starts) {
					cuts = append(cuts, starts[i])
				}
			}
			return unitCuts(m, comp, cuts)
		}
	}
	type probed struct {
		at, cost int64
		found    bool
	}
	probe := func(t int64, window int) probed {
		r := gets.OpenGrowing(ctx, m.object(), t, min(t+int64(window)+2*decodeProofSlack, m.Size), unitProbeRequest, maxUnitProbeRequest)
		off, found, err := decode.FindUnit(comp, r, window, p.cfg.MaxDecoderWindowBytes)
		return probed{at: t + off, cost: probes.close(r), found: found && err == nil}
	}
	rounds := halvingRounds(len(targets))
	mid := rounds[0][0]
	first := probe(targets[mid], unitProbeBytes)
	if !first.found {
		return nil
	}
	cuts = append(cuts, first.at)
	budget := max(m.Size/unitProbeShare, int64(len(targets))*unitProbeRequest)
	spent, made, farthest := first.cost, int64(1), first.at-targets[mid]
	for _, round := range rounds[1:] {
		// Probes cost alike on average: the round gets what the budget has left for them.
		k := min(int64(len(round)), (budget-spent)*made/max(spent, 1))
		if k <= 0 {
			break
		}
		round = spread(round, int(k))
		window := int(min(max(4*farthest, minUnitProbeBytes), unitProbeBytes, max(segSize/2, minUnitProbeBytes)))
		got := make([]probed, len(round))
		sem := make(chan struct{}, unitProbesInFlight)
		var wg sync.WaitGroup
		for j, i := range round {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				got[j] = probe(targets[i], window)
			}()
		}
		wg.Wait()
		for j, g := range got {
			spent, made = spent+g.cost, made+1
			if g.found {
				cuts = append(cuts, g.at)
				farthest = max(farthest, g.at-targets[round[j]])
			}
		}
	}
	return unitCuts(m, comp, cuts)
}

// halvingRounds orders the indices [0, n) of n cuts by halving: the middle one, then the
// middles of the two halves, and so on, one round per level, each round in order. Stopping
// after any round leaves cuts spread evenly over the object.
func halvingRounds(n int) [][]int {
	var rounds [][]int
	type span struct{ lo, hi int } // the indices [lo, hi) not yet in a round
	level := []span{{0, n}}
	for len(level) > 0 {
		var round []int
		var next []span
		for _, s := range level {
			if s.lo >= s.hi {
				continue
			}
			mid := (s.lo + s.hi) / 2
			round = append(round, mid)
			next = append(next, span{s.lo, mid}, span{mid + 1, s.hi})
		}
		if len(round) > 0 {
			rounds = append(rounds, round)
		}
		level = next
	}
	return rounds
}

// spread returns k of the indices in round, evenly spaced.
func spread(round []int, k int) []int {
	if k >= len(round) {
		return round
	}
	out := make([]int, k)
	for j := range out {
		out[j] = round[(2*j+1)*len(round)/(2*k)]
	}
	return out
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
