package s3io

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/sdf"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/log"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// segmentSlack and segmentWindow size the ranged GETs of a segment: its own range plus
// segmentSlack in the first request, then segmentWindow at a time for a record that
// straddles the segment's end by more.
const (
	segmentSlack  = 64 << 10
	segmentWindow = 1 << 20
)

// reader is the splittable DoFn shared by readFn and readPositionsFn. Its only exported
// field is the Config, which Beam serializes as JSON into the pipeline; the client, framer
// and decoders are built on the worker.
type reader struct {
	Cfg Config

	client    *s3.Client
	newFramer func() RecordFramer
	// decs holds idle decoders: objects are decoded decodeAhead+1 at a time, each with its
	// own, and a zstd decoder's buffers are worth reusing.
	decsMu sync.Mutex
	decs   []*decompressors
}

func (fn *reader) Setup(ctx context.Context) error {
	f, ok := lookupFramer(fn.Cfg.Framer)
	if !ok {
		return fmt.Errorf("s3io: framer %q is not registered in this worker's binary; register it in an init function, not in main", fn.Cfg.Framer)
	}
	fn.newFramer = f
	c, err := newClient(ctx, fn.Cfg)
	fn.client = c
	return err
}

func (fn *reader) Teardown() {
	fn.decsMu.Lock()
	defer fn.decsMu.Unlock()
	for _, d := range fn.decs {
		d.close()
	}
	fn.decs = nil
}

func (fn *reader) getDecoders() *decompressors {
	fn.decsMu.Lock()
	defer fn.decsMu.Unlock()
	if n := len(fn.decs); n > 0 {
		d := fn.decs[n-1]
		fn.decs = fn.decs[:n-1]
		return d
	}
	return &decompressors{}
}

func (fn *reader) putDecoders(d *decompressors) {
	fn.decsMu.Lock()
	defer fn.decsMu.Unlock()
	fn.decs = append(fn.decs, d)
}

// CreateInitialRestriction covers every record of every member.
func (fn *reader) CreateInitialRestriction(d SplitDescriptor) restriction {
	return fullRestriction(d)
}

// SplitRestriction cuts a descriptor heavier than Config.InitialSplitBytes at member
// boundaries, so that a runner which never splits dynamically (Flink) still reads the members
// of one descriptor in parallel.
func (fn *reader) SplitRestriction(_ SplitDescriptor, r restriction) []restriction {
	if r.size() <= float64(fn.Cfg.InitialSplitBytes) {
		return []restriction{r}
	}
	return r.memberBoundaries(fn.Cfg.InitialSplitBytes)
}

// RestrictionSize is the restriction's weight in stored bytes.
func (fn *reader) RestrictionSize(_ SplitDescriptor, r restriction) float64 {
	return r.size()
}

func (fn *reader) CreateTracker(r restriction) *sdf.LockRTracker {
	return sdf.NewLockRTracker(newTracker(r))
}

// process reads the members the restriction owns, in order, handing each owned record to
// sink. It claims a member's first owned position before reading from it, and every later
// record before emitting it. The members' bytes are fetched ahead of their claims, and the
// next objects are decoded while the current one is emitted; whatever a split takes away is
// cancelled and dropped unemitted. Returning an error fails the bundle; the runner retries it
// from the restriction, never from a position already handed to a residual.
func (fn *reader) process(ctx context.Context, rt *sdf.LockRTracker, d SplitDescriptor, sink func(m int, idx int64, rec []byte), fail func(Failure)) error {
	rest := rt.GetRestriction().(restriction)
	if err := rest.valid(len(d.Members)); err != nil {
		return fmt.Errorf("%w (split %s)", err, d.ID)
	}
	metricRestrictions.Inc(ctx, 1)
	rr := fn.newRestrictionRead(ctx, d, rest)
	defer rr.close(ctx)
	for m := rest.Start.Member; ; m++ {
		first := int64(0)
		if m == rest.Start.Member {
			first = rest.Start.Index
		}
		// After the last member this claim fails, telling the tracker the reader is done.
		if !rt.TryClaim(&readerClaim{position: position{Member: m, Index: first}, end: -1}) {
			return nil
		}
		if class := d.Members[m].Archived; class != "" {
			err := fmt.Errorf("%w: the listing showed it in %s and not restored; restore it (aws s3api restore-object) and read it again, or set Config.SkipArchived to leave such objects out of the plan", ErrArchived, class)
			if err := fn.quarantine(ctx, d, m, first, err, fail); err != nil {
				return err
			}
			continue
		}
		if start, _ := d.Members[m].span(); first == 0 && start == 0 {
			metricObjects.Inc(ctx, 1) // once per object, however it is segmented and split
		}
		stopped, err := fn.readMember(ctx, rt, d, rr, rr.open(ctx, m), first, sink)
		if err != nil {
			if err := fn.quarantine(ctx, d, m, first, err, fail); err != nil {
				return err
			}
			continue // the object's remaining records are given up; the split reads on
		}
		if stopped {
			return nil
		}
	}
}

// quarantine reports a failed member read as a Failure, or returns the error when it must
// fail the job.
func (fn *reader) quarantine(ctx context.Context, d SplitDescriptor, m int, first int64, err error, fail func(Failure)) error {
	fatal, reason := classify(err)
	if fatal {
		return err
	}
	f := Failure{ObjectRef: d.ref(m), Index: first, Reason: reason, Message: err.Error(), Attempts: attemptsOf(err)}
	var oe *ObjectError
	if errors.As(err, &oe) {
		f.Index, f.Message = max(oe.Index, first), oe.Err.Error()
	}
	metricFailed.Inc(ctx, 1)
	metricFailedByReason[reason].Inc(ctx, 1)
	log.Warnf(ctx, "s3io: quarantined %v", f)
	fail(f)
	return nil
}

// restrictionRead is the state of one restriction's read: the fetcher of its members'
// bytes and the members being decoded.
type restrictionRead struct {
	fn      *reader
	d       SplitDescriptor
	start   position
	hint    resumeHint
	last    int            // the last member the restriction owns; a split may lower it
	fetches []*objectFetch // by member - start.Member; nil once handed to a memberRead
	reads   []*memberRead  // same indexing: members whose decoding has started
	fetcher *fetcher
}

func (fn *reader) newRestrictionRead(ctx context.Context, d SplitDescriptor, rest restriction) *restrictionRead {
	rr := &restrictionRead{fn: fn, d: d, start: rest.Start, hint: rest.Resume, last: rest.lastMember(),
		fetcher: newFetcher(ctx, fn.client, &fn.Cfg, d.Bucket)}
	n := max(rr.last-rest.Start.Member+1, 0)
	rr.fetches, rr.reads = make([]*objectFetch, n), make([]*memberRead, n)
	for m := rest.Start.Member; m <= rr.last; m++ {
		if d.Members[m].Archived != "" {
			continue // never requested: its GET could only fail
		}
		st := rr.startOf(m)
		rr.fetches[m-rest.Start.Member] = rr.fetcher.add(d.Members[m], st.from, st.planEnd)
	}
	return rr
}

// memberStart is where and how the read of one member begins. It is decided once, in
// startOf, for both the fetch of the member's bytes and their framing.
type memberStart struct {
	hint    resumeHint // where to resume, if the restriction starts inside this member
	from    int64      // the first byte to fetch
	planEnd int64      // where the planned bytes end: the object's size, or a segment's end plus slack
	// raw is true when the read begins inside the stored bytes, which are then known to be
	// the records themselves (uncompressed): a resume at a seekable hint, or a segment.
	raw bool
	// skipPartial is true when raw begins on the byte before a segment's range: if that
	// byte ends a line, the first record starts at the segment's start; otherwise the
	// record in progress belongs to the previous segment.
	skipPartial bool
}

// startOf decides where reading member m begins: a seekable resume hint into it starts
// there; a segment starts on the byte before its range, to see whether a record begins on
// its first byte, and plans its own range plus segmentSlack for the record that straddles
// its end; anything else is read from byte 0 and decoded.
func (rr *restrictionRead) startOf(m int) memberStart {
	member := rr.d.Members[m]
	segStart, segEnd := member.span()
	st := memberStart{planEnd: member.Size}
	if m == rr.start.Member {
		st.hint = rr.hint
	}
	if member.isSegment() {
		st.from, st.planEnd = max(segStart-1, 0), min(segEnd+segmentSlack, member.Size)
		st.raw, st.skipPartial = true, segStart > 0
	}
	if st.hint.known() && st.hint.Seekable {
		st.from, st.raw, st.skipPartial = st.hint.Offset, true, false
	}
	st.planEnd = max(st.planEnd, st.from)
	return st
}

// open returns the read of member m, started now or earlier, and starts decoding the
// members after it that the restriction still owns.
func (rr *restrictionRead) open(ctx context.Context, m int) *memberRead {
	for k := m; k <= min(m+decodeAhead, rr.last); k++ {
		i := k - rr.start.Member
		if rr.reads[i] == nil && rr.d.Members[k].Archived == "" {
			rr.reads[i] = rr.fn.startMember(ctx, rr.d, k, rr.startOf(k), rr.fetches[i])
			rr.fetches[i] = nil
		}
	}
	mr := rr.reads[m-rr.start.Member]
	rr.reads[m-rr.start.Member] = nil
	return mr
}

// truncate drops the fetches and reads of the members after last, which a split took away.
func (rr *restrictionRead) truncate(ctx context.Context, last int) {
	for m := max(last+1, rr.start.Member); m <= rr.last; m++ {
		i := m - rr.start.Member
		if mr := rr.reads[i]; mr != nil {
			mr.finish(ctx)
			rr.reads[i] = nil
		}
		if of := rr.fetches[i]; of != nil {
			of.drop()
			rr.fetches[i] = nil
		}
	}
	rr.last = min(rr.last, last)
}

// close drops everything the read still holds and accounts for what it transferred.
func (rr *restrictionRead) close(ctx context.Context) {
	rr.truncate(ctx, rr.start.Member-1)
	f := rr.fetcher
	f.close()
	metricGets.Inc(ctx, f.gets.Load())
	metricBodyResumes.Inc(ctx, f.resumes.Load())
	metricRawBytes.Inc(ctx, f.rawBytes.Load())
	metricCancelledGets.Inc(ctx, f.cancelled.Load())
	metricDroppedBytes.Inc(ctx, f.droppedBytes.Load())
}

// memberRead is one member being read. Its decoding and framing run on a goroutine of their
// own, started before the member's records are claimed, so that decompression overlaps
// Beam's per-record work instead of following it.
type memberRead struct {
	m      int
	src    *objectStream
	dec    *decompressors
	fn     *reader
	frames *framing
	idx0   int64 // index of the first record the stream yields
}

// startMember starts decoding member m of d as st says, from the bytes fetch brings in.
func (fn *reader) startMember(ctx context.Context, d SplitDescriptor, m int, st memberStart, fetch *objectFetch) *memberRead {
	member := d.Members[m]
	_, segEnd := member.span()
	src := fetch.stream()
	mr := &memberRead{m: m, src: src, dec: fn.getDecoders(), fn: fn}
	if st.hint.known() {
		metricResumed.Inc(ctx, 1)
		mr.idx0 = st.hint.Index
	}
	// open runs on the framing goroutine: it may block on the network.
	open := func() (rr *recordReader, seekable bool, err error) {
		if st.raw {
			rr = newRecordReader(src, fn.newFramer(), fn.Cfg.MaxRecordBytes, fetch.from)
			if st.skipPartial {
				err = rr.skipPastNewline()
			}
			return rr, true, err
		}
		stream, comp, err := mr.dec.open(fn.Cfg.Compression, member.Key, src)
		if err != nil {
			return nil, false, err
		}
		rr = newRecordReader(stream, fn.newFramer(), fn.Cfg.MaxRecordBytes, 0)
		if st.hint.known() {
			// Compressed: decompress up to the resume point, but frame nothing before it.
			err = rr.discard(st.hint.Offset)
		}
		return rr, comp == CompressionNone, err
	}
	mr.frames = startFraming(open, src, member.isSegment(), segEnd, fetch.cancel)
	return mr
}

// finish stops mr's goroutine, drops what it fetched and did not use, and accounts for
// what it decoded.
func (mr *memberRead) finish(ctx context.Context) {
	mr.frames.stop()
	mr.src.close()
	mr.fn.putDecoders(mr.dec)
	metricBytes.Inc(ctx, mr.frames.decoded())
}

// readMember hands sink the records of mr from index first on (which the caller claimed),
// claiming each later one. It reports whether a claim failed.
func (fn *reader) readMember(ctx context.Context, rt *sdf.LockRTracker, d SplitDescriptor, rr *restrictionRead, mr *memberRead, first int64, sink func(int, int64, []byte)) (stopped bool, err error) {
	m := mr.m
	idx, emitted, skipped := mr.idx0, int64(0), int64(0)
	defer func() {
		mr.finish(ctx)
		metricRecords.Inc(ctx, emitted)
		metricSkipped.Inc(ctx, skipped)
		if err != nil {
			err = &ObjectError{ObjectRef: d.ref(m), Index: max(idx, first), Err: err}
		}
	}()
	// One claim value for the whole object: a claim boxed per record would allocate.
	claim := &readerClaim{position: position{Member: m}}
	for {
		b := mr.frames.next()
		claim.seekable = b.seekable
		for i, rec := range b.recs {
			if idx < first {
				skipped++
				idx++
				continue
			}
			if idx > first {
				claim.Index, claim.end, claim.raw = idx, b.ends[i], b.raw
				if !rt.TryClaim(claim) {
					return true, nil
				}
			}
			sink(m, idx, rec)
			emitted++
			idx++
		}
		switch {
		case b.err == io.EOF:
			return false, nil
		case b.err != nil:
			return false, b.err
		}
		mr.frames.recycle(b) // the framing goroutine may refill it from here on
		// A split may have taken the members after this one: stop fetching them.
		if last := rt.GetRestriction().(restriction).lastMember(); last < rr.last {
			rr.truncate(ctx, last)
		}
	}
}

// readFn emits each record's bytes.
type readFn struct{ reader }

func (fn *readFn) ProcessElement(ctx context.Context, rt *sdf.LockRTracker, d SplitDescriptor, emit func([]byte), fail func(Failure)) error {
	return fn.process(ctx, rt, d, func(_ int, _ int64, rec []byte) { emit(rec) }, fail)
}

// readPositionsFn emits each record with its identity.
type readPositionsFn struct{ reader }

func (fn *readPositionsFn) ProcessElement(ctx context.Context, rt *sdf.LockRTracker, d SplitDescriptor, emit func(Record), fail func(Failure)) error {
	return fn.process(ctx, rt, d, func(m int, idx int64, rec []byte) {
		emit(Record{SplitID: d.ID, Key: d.Members[m].Key, Member: m, Index: idx, Data: rec})
	}, fail)
}
