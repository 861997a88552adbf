package s3io

import (
	"context"
	"io"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/log"

	"github.com/spate-io/beam-s3/s3io/internal/decode"
	"github.com/spate-io/beam-s3/s3io/internal/fetch"
)

// restrictionRead is the state of one restriction's read: the fetcher of its members'
// bytes and the members being decoded.
type restrictionRead struct {
	fn    *reader
	d     SplitDescriptor
	start position
	hint  resumeHint
	last  int // the last member the restriction owns; a split may lower it
	ahead int // members decoded ahead of the one being read
	// members are the members' fetches, and decodings once started, by member -
	// start.Member: entries of the handover store that the read owns until it opens them,
	// so that a residual that starts while this read still holds the members a split gave
	// it takes them over (handover.go). nil for archived members and once opened.
	members []*handed
}

// newRestrictionRead queues the fetches of rest's members, taking over those the instance
// fetched ahead for them, and then fetches ahead for the restrictions announced next.
func (fn *reader) newRestrictionRead(ctx context.Context, d SplitDescriptor, rest restriction) *restrictionRead {
	rd := &restrictionRead{fn: fn, d: d, start: rest.Start, hint: rest.Resume, last: rest.lastMember()}
	rd.ahead, _ = fn.Cfg.decoding()
	n := max(rd.last-rest.Start.Member+1, 0)
	rd.members = make([]*handed, n)
	wants := fn.ahead.take(d.ID, rest.Start, memberFetches(d, rest), fn.getsFor, fn.fetcher)
	handovers.Lock()
	for _, w := range wants {
		if w.ahead {
			metricFetchedAhead.Inc(ctx, 1)
		}
		w.of.Bind(ctx)
		h := &handed{key: fn.ahead.handKey(w.fetchKey), of: w.of, mr: w.mr, rd: rd, from: fn, id: d.ID, m: rest.Start.Member + w.i, pending: w.pending}
		rd.members[w.i] = h
		handovers.add(h)
	}
	handovers.Unlock()
	fn.ahead.started(d.ID, rest.Start)
	fn.ahead.fetchNext(fn.fetcher, fn.getsFor)
	return rd
}

// spanOf returns where reading member m begins and ends.
func (rd *restrictionRead) spanOf(m int) readSpan { return memberSpan(rd.d, rd.start, rd.hint, m) }

// memberSpan returns where reading member m of d begins and ends, for a restriction that
// starts at start with resume hint hint: the hint applies to its first member only.
func memberSpan(d SplitDescriptor, start position, hint resumeHint, m int) readSpan {
	if m != start.Member {
		hint = resumeHint{}
	}
	return spanOf(d.Members[m], hint)
}

// memberFetches returns what reading rest of d fetches, member by member: every member but
// the archived ones, which are never requested (their GET could only fail).
func memberFetches(d SplitDescriptor, rest restriction) []aheadWant {
	var wants []aheadWant
	for m := rest.Start.Member; m <= rest.lastMember(); m++ {
		if d.Members[m].Archived != "" {
			continue
		}
		rng := memberSpan(d, rest.Start, rest.Resume, m).fetchRange()
		w := aheadWant{i: m - rest.Start.Member, fetchKey: fetchKey{bucket: d.Bucket, obj: d.Members[m].object(), rng: rng}, m: m}
		if m == rest.Start.Member {
			w.first = rest.Start.Index
		}
		w.whole = w.first == 0 && (m > rest.Start.Member || !rest.Resume.known())
		wants = append(wants, w)
	}
	return wants
}

// object is what the fetch layer needs to know of m.
func (m Member) object() fetch.Object { return fetch.Object{Key: m.Key, ETag: m.ETag, Size: m.Size} }

// open returns the read of member m, started now or earlier, and starts decoding the
// members after it that the restriction still owns. The read has claimed m's first
// position, so no other read can have taken it from the store; should one have, m is read
// with a fetch of its own.
func (rd *restrictionRead) open(ctx context.Context, m int) *memberRead {
	handovers.Lock()
	for k := m; k <= min(m+rd.ahead, rd.last); k++ {
		if h := rd.members[k-rd.start.Member]; h != nil && h.rd == rd && h.mr == nil {
			h.mr = rd.fn.startMember(ctx, rd.d, k, rd.spanOf(k), h.of)
		}
	}
	i := m - rd.start.Member
	h := rd.members[i]
	rd.members[i] = nil
	own := h != nil && h.rd == rd && handovers.remove(h)
	handovers.Unlock()
	if m == rd.last {
		// No member of its own is decoded ahead now: the next restriction's first may be.
		rd.fn.ahead.decodeFirst(func(d SplitDescriptor, m int, span readSpan, of *fetch.ObjectFetch) *memberRead {
			return rd.fn.startMember(context.Background(), d, m, span, of)
		})
	}
	if !own {
		span := rd.spanOf(m)
		of := rd.fn.fetcher.Add(rd.fn.getsFor(rd.d.Bucket), rd.d.Members[m].object(), span.fetchRange())
		of.Bind(ctx)
		return rd.fn.startMember(ctx, rd.d, m, span, of)
	}
	if h.pending != nil {
		h.mr.pending, h.mr.pendingAt, h.mr.idx0, h.mr.handedOver = h.pending.b, h.pending.at, h.pending.idx, false
	}
	return h.mr
}

// truncate hands over the fetches and decodings of the members after last, which a split
// took away: the residual that reads them takes them over (handover.go).
func (rd *restrictionRead) truncate(last int) {
	var out []*handed
	handovers.Lock()
	for m := max(last+1, rd.start.Member); m <= rd.last; m++ {
		i := m - rd.start.Member
		if h := rd.members[i]; h != nil && h.rd == rd && handovers.remove(h) {
			out = append(out, h)
		}
		rd.members[i] = nil
	}
	rd.last = min(rd.last, last)
	handovers.Unlock()
	for _, h := range out {
		rd.handOverRead(h)
	}
}

// close hands over what the read still holds (the members a split or a checkpoint left
// unread) and accounts for what the worker's fetchers transferred.
func (rd *restrictionRead) close(ctx context.Context) {
	rd.truncate(rd.start.Member - 1)
	rd.fn.reportFetches(ctx)
}

// reportFetches counts what the fetchers of the worker's instances of the same Config
// transferred since their last report. A fetcher outlives restrictions, and its parts
// outlive its instance's bundles when they are handed over: an instance whose bundle has
// ended may never report again, so every instance reports for all of them, and what is
// fetched and later dropped is counted by the next report in the worker.
func (fn *reader) reportFetches(ctx context.Context) {
	var st fetch.Stats
	for _, r := range fetchersOf(fn.ahead.key) {
		st = st.Plus(r.takeReport())
	}
	metricGets.Inc(ctx, st.Gets)
	metricBodyResumes.Inc(ctx, st.Resumes)
	metricRawBytes.Inc(ctx, st.Received)
	metricCancelledGets.Inc(ctx, st.Cancelled)
	metricDroppedBytes.Inc(ctx, st.Dropped)
	metricRangeIgnored.Inc(ctx, st.RangeIgnored)
	if st.RangeIgnored > 0 && fn.warnedRange.CompareAndSwap(false, true) {
		log.Warnf(ctx, "s3io: %d ranged GETs were answered with the whole object (200, not 206): the server or a proxy in front of it ignores Range. Reads stay exact (the bytes before each range are discarded), but each costs the object's bytes up to its range; counter %s/range_ignored counts them. Warned once per reader.",
			st.RangeIgnored, MetricsNamespace)
	}
}

// memberRead is one member being read. Its decoding and framing run on a goroutine of their
// own, started before the member's records are claimed, so that decompression overlaps
// Beam's per-record work instead of following it.
type memberRead struct {
	m      int
	of     *fetch.ObjectFetch
	src    *fetch.Stream
	dec    *decode.Decompressors
	fn     *reader
	frames *decode.Framing
	idx0   int64 // index of the first record the stream yields
	// base is the stream offset where decoding starts (the ranged GET's first byte for an
	// uncompressed read, the inflate checkpoint's decoded offset for a gzip one resumed at
	// one, else 0), and skipTo the offset decoded unframed from there (a compressed member's
	// resume point): what lies between, and the records skipped after, was decoded again to
	// reach the restriction's first record.
	base, skipTo int64
	// cps are the inflate checkpoints its gzip decoding keeps (nil for any other read), for
	// the hints of splits inside it.
	cps *decode.Checkpoints
	// units, set by the framing goroutine, stops a segment's chunk goroutines once framing
	// has stopped.
	units io.Closer
	// pending, taken over from a read a split stopped inside the member, is the batch to
	// emit first, from its record pendingAt (nextBatch).
	pending   *decode.Batch
	pendingAt int
	// handedOver is set once a split stopped the read inside the member and its decoding
	// went to the handover store for the residual: the read no longer finishes it.
	handedOver bool
}

// nextBatch returns the next batch of records to emit and the index in it of the first.
func (mr *memberRead) nextBatch() (*decode.Batch, int) {
	if b := mr.pending; b != nil {
		mr.pending = nil
		return b, mr.pendingAt
	}
	return mr.frames.Next(), 0
}

// checkpointsKept is how many inflate checkpoints, every bytes of stored input apart, a gzip
// read keeps: enough to span its decoding window, which runs ahead of the last claimed
// record (a window's decoded bytes are at most as many stored ones), plus the one before it.
// With four, a reader whose emitting fell behind a full window (a loaded machine) at 256 KiB
// between checkpoints had dropped the one its split needed, and the residual decoded the
// object again from its start.
func checkpointsKept(every int64) int {
	return max(4, int(decodeWindowBytes/every)+2)
}

// unitCheckpointsKept is how many unit starts a segment read in chunks keeps for hints.
const unitCheckpointsKept = 8

// inChunks reports whether s is a segment of units large enough to decode in chunks on
// goroutines of their own (decode.ParallelUnits): more than two chunks of units.
func (s readSpan) inChunks() bool { return s.units > 2*unitChunkBytes }

// unitChunkBytes is the least stored bytes of a chunk of a segment's units that decodes on
// a goroutine of its own (decode.ParallelUnits): a gzip member of 8 MiB of logs, or 16 BGZF
// blocks. A segment of fewer than two chunks decodes on its framing goroutine.
const unitChunkBytes = 1 << 20

// parallelUnits is how a segment's units decode in chunks: each ends at the first unit start
// at least unitChunkBytes in, looked for 1 MiB further (a larger unit ends the chunking:
// the rest decodes as one); one chunk decodes ahead of the one being framed, holding at most
// 8 MiB decoded, so that a reader holds at most ~4 MiB stored and 16 MiB decoded per
// segment beyond what it frames. One is enough on two cores: the framing and the emitting
// goroutines take the rest (two ahead were not measurably faster in a noisy A/B, and held
// ~50-150 MiB more peak RSS).
func (fn *reader) parallelUnits() decode.ParallelUnits {
	return decode.ParallelUnits{Chunk: unitChunkBytes, Search: 1 << 20, Ahead: 1, OutBytes: 8 << 20,
		MaxWindow: fn.Cfg.MaxDecoderWindowBytes, Get: fn.getDecoders, Put: fn.putDecoders}
}

// startMember starts decoding member m of d from where span says, from the bytes of of.
func (fn *reader) startMember(ctx context.Context, d SplitDescriptor, m int, span readSpan, of *fetch.ObjectFetch) *memberRead {
	member := d.Members[m]
	src := of.Stream()
	mr := &memberRead{m: m, of: of, src: src, dec: fn.getDecoders(), fn: fn}
	if span.hint.known() {
		metricResumed.Inc(ctx, 1)
		mr.idx0 = span.hint.Index
	}
	if span.seekable {
		mr.base, mr.skipTo = span.from, span.from
	} else if span.hint.known() {
		mr.skipTo = span.hint.Offset
	}
	if !span.seekable && span.units == 0 && fn.Cfg.CheckpointBytes > 0 {
		mr.cps = &decode.Checkpoints{Every: fn.Cfg.CheckpointBytes, Keep: checkpointsKept(fn.Cfg.CheckpointBytes)}
		mr.dec.Checkpoints = mr.cps
	}
	if span.inChunks() {
		// The unit starts between its chunks: a split inside the segment resumes at the one
		// before its first record. They cost no window; framing runs up to ~20 MiB decoded
		// (4 chunks) ahead of the claims, so a few more than that are kept.
		mr.cps = &decode.Checkpoints{Keep: unitCheckpointsKept}
	}
	if span.inflate != nil {
		mr.base = span.inflate.Decoded
	}
	// The open runs on the framing goroutine: it may block on the network.
	op := &memberOpener{fn: fn, mr: mr, member: member, span: span, src: src, of: of}
	_, window := fn.Cfg.decoding()
	budget := fn.fetcher.Budget()
	credit := partCredit{budget: budget, keep: budget.Limit() / 4}
	mr.frames = decode.StartFraming(decode.FramingSource{Open: op.open, Consumed: src.Consumed, Cancel: of.Cancel, StopAt: span.stopAt, Credit: credit, RecycleSlabs: fn.copiesRecords},
		window, fn.Cfg.fetchBudget()-credit.keep)
	return mr
}

// memberOpener opens the record reader of one member's read, on the framing goroutine:
// one method per kind of read, which the member's span decides. Each returns the reader,
// whether its offsets are the stored object's (seekable), and whether its framing may
// borrow budget past its window (borrow).
type memberOpener struct {
	fn     *reader
	mr     *memberRead
	member Member
	span   readSpan
	src    *fetch.Stream
	of     *fetch.ObjectFetch
}

// open chooses the kind of read the span asks for: decode.FramingSource.Open.
func (o *memberOpener) open() (recs *decode.RecordReader, seekable, borrow bool, err error) {
	switch {
	case o.span.seekable:
		return o.openRange()
	case o.span.units > 0:
		return o.openUnits()
	case o.span.inflate != nil:
		return o.openInflated()
	}
	return o.openWhole()
}

// openRange reads stored bytes from the span's first byte: an uncompressed member, whole or
// a segment of it.
func (o *memberOpener) openRange() (*decode.RecordReader, bool, bool, error) {
	fn, span := o.fn, o.span
	recs := decode.NewRecordReader(o.src, fn.newFramer(), fn.Cfg.MaxRecordBytes, span.from)
	if span.from == 0 {
		recs.SkipHeaders(fn.Cfg.SkipHeaderRecords)
	}
	var err error
	if span.skipPartial {
		err = recs.SkipPastNewline()
	}
	return recs, true, false, err
}

// openUnits reads a compressed object's segment, whose own units start at its first byte.
func (o *memberOpener) openUnits() (*decode.RecordReader, bool, bool, error) {
	fn, mr, member, span := o.fn, o.mr, o.member, o.span
	_, end := member.span()
	var stream io.Reader
	var err error
	if span.inChunks() {
		// Its units decode in chunks on goroutines of their own (decode.ParallelUnits).
		cfg := fn.parallelUnits()
		cfg.Checkpoints, cfg.Base = mr.cps, mr.base
		var s io.ReadCloser
		s, err = mr.dec.OpenUnitsParallel(decode.Compression(member.Codec), o.src, span.from, span.units, end < member.Size, cfg)
		stream, mr.units = s, s
	} else {
		stream, err = mr.dec.OpenUnits(decode.Compression(member.Codec), o.src, span.from, span.units, end < member.Size)
	}
	if err != nil {
		return nil, false, false, err
	}
	recs := decode.NewRecordReader(stream, fn.newFramer(), fn.Cfg.MaxRecordBytes, mr.base)
	switch {
	case span.from == 0:
		recs.SkipHeaders(fn.Cfg.SkipHeaderRecords)
	case span.skipPartial:
		err = recs.SkipPastNewline() // the record in progress is the previous segment's
	}
	if err == nil && span.hint.known() {
		err = recs.Discard(span.hint.Offset)
	}
	// It borrows: decoded ahead (decodedAhead), its framing must go on past its window
	// while the segment before it is emitted, or the second core idles.
	return recs, false, true, err
}

// openInflated resumes a gzip member at an inflate checkpoint: it decodes from the
// checkpoint's stored byte on.
func (o *memberOpener) openInflated() (*decode.RecordReader, bool, bool, error) {
	cp := o.span.inflate
	stream, err := decode.OpenGzipAt(o.src, *cp, o.mr.cps)
	if err != nil {
		return nil, false, false, err
	}
	recs := decode.NewRecordReader(stream, o.fn.newFramer(), o.fn.Cfg.MaxRecordBytes, cp.Decoded)
	return recs, false, false, recs.Discard(o.span.hint.Offset)
}

// openWhole reads a member from its first stored byte, whatever its compression or archive
// format, skipping (decoded, not framed) up to a resume point.
func (o *memberOpener) openWhole() (*decode.RecordReader, bool, bool, error) {
	fn, mr, member := o.fn, o.mr, o.member
	obj := decode.ObjectInfo{Key: member.Key, Size: member.Size, ReadRange: o.of.ReadRange}
	entries, stream, comp, err := mr.dec.OpenEntries(decode.Compression(fn.Cfg.Compression), obj, o.src)
	if err != nil {
		return nil, false, false, err
	}
	var recs *decode.RecordReader
	if entries != nil {
		// An archive's records are offsets of its entries, not of the gzip stream. The log
		// stays (the claims of this member hold it, on another goroutine), but empty.
		if mr.cps != nil {
			mr.cps.Disable()
		}
		recs = decode.NewEntriesRecordReader(entries, func() decode.Framer { return fn.newFramer() }, fn.Cfg.MaxRecordBytes)
	} else {
		recs = decode.NewRecordReader(stream, fn.newFramer(), fn.Cfg.MaxRecordBytes, 0)
	}
	recs.SkipHeaders(fn.Cfg.SkipHeaderRecords)
	if o.span.hint.known() {
		// Compressed: decompress up to the resume point, but frame nothing before it.
		err = recs.Discard(o.span.hint.Offset)
	}
	return recs, comp == decode.None && entries == nil, slowCodec(comp), err
}

// slowCodec reports the codecs that decode at tens of MB/s on one core (bzip2, xz, brotli):
// an object decoded ahead with one of them fills its window long before the object being
// emitted is done, while the fetch, a few MB/s of stored bytes, leaves the part budget
// mostly unused; measured on 16 MiB objects, a 4 MiB window held xz at 0.68× of a two-core
// decode loop (docs/performance.md).
func slowCodec(c decode.Compression) bool {
	return c == decode.Bzip2 || c == decode.Xz || c == decode.Brotli
}

// partCredit lends a slow decoder the part budget it does not need for parts, keeping keep
// bytes free so that the object being emitted always finds room for its next part.
type partCredit struct {
	budget *fetch.Budget
	keep   int64
}

func (c partCredit) Reserve(n int64) bool { return c.budget.Reserve(n, c.keep) }
func (c partCredit) Release(n int64)      { c.budget.Release(n) }

// finish stops mr's goroutine, drops what it fetched and did not use, and accounts for
// what it decoded.
func (mr *memberRead) finish(ctx context.Context) {
	mr.frames.Stop()
	if mr.units != nil {
		mr.units.Close()
	}
	mr.src.Close()
	mr.dec.Checkpoints = nil
	mr.fn.putDecoders(mr.dec)
	metricBytes.Inc(ctx, mr.frames.Decoded())
	metricHeadersSkipped.Inc(ctx, mr.frames.HeadersSkipped())
}
