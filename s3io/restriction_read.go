package s3io

import (
	"context"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/log"

	"github.com/spate-io/beam-s3/s3io/internal/fetch"
	"github.com/spate-io/beam-s3/s3io/internal/member"
)

// restrictionRead is the state of one restriction's read: the fetcher of its members'
// bytes and the members being decoded.
type restrictionRead struct {
	fn          *reader
	d           SplitDescriptor
	start       position
	hint        resumeHint
	last        int // the last member the restriction owns; a split may lower it
	decodeDepth int // members decoded beyond the one being read
	// progress is how the read reports to the worker's progress lines.
	progress *progressRead
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
	rd.decodeDepth, _ = fn.Cfg.decoding()
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

// planOf returns what reading member m plans.
func (rd *restrictionRead) planOf(m int) member.Plan { return memberPlan(rd.d, rd.start, rd.hint, m) }

// memberPlan returns what reading member m of d plans, for a restriction that starts at
// start with resume hint hint: the hint applies to its first member only.
func memberPlan(d SplitDescriptor, start position, hint resumeHint, m int) member.Plan {
	if m != start.Member {
		hint = resumeHint{}
	}
	return d.Members[m].plan(hint)
}

// memberFetches returns what reading rest of d fetches, member by member: every member but
// the archived ones, which are never requested (their GET could only fail).
func memberFetches(d SplitDescriptor, rest restriction) []aheadWant {
	var wants []aheadWant
	for m := rest.Start.Member; m <= rest.lastMember(); m++ {
		if d.Members[m].Archived != "" {
			continue
		}
		rng := memberPlan(d, rest.Start, rest.Resume, m).FetchRange()
		w := aheadWant{i: m - rest.Start.Member, fetchKey: fetchKey{bucket: d.Bucket, obj: d.Members[m].object(), rng: rng}, m: m}
		if m == rest.Start.Member {
			w.first = rest.Start.Index
		}
		w.whole = w.first == 0 && (m > rest.Start.Member || !rest.Resume.Known())
		wants = append(wants, w)
	}
	return wants
}

// object is what the fetch layer needs to know of m.
func (m Member) object() fetch.Object {
	return fetch.Object{Key: m.Key, ETag: m.ETag, VersionID: m.VersionID, Size: m.Size}
}

// open returns the read of member m, started now or earlier, and starts decoding the
// members after it that the restriction still owns. The read has claimed m's first
// position, so no other read can have taken it from the store; should one have, m is read
// with a fetch of its own.
func (rd *restrictionRead) open(ctx context.Context, m int) *memberRead {
	handovers.Lock()
	for k := m; k <= min(m+rd.decodeDepth, rd.last); k++ {
		if h := rd.members[k-rd.start.Member]; h != nil && h.rd == rd && h.mr == nil {
			h.mr = rd.fn.startMember(ctx, k, rd.planOf(k), h.of)
		}
	}
	i := m - rd.start.Member
	h := rd.members[i]
	rd.members[i] = nil
	own := h != nil && h.rd == rd && handovers.remove(h)
	handovers.Unlock()
	if m == rd.last {
		// No member of its own is decoded ahead now: the next restriction's first may be.
		rd.fn.ahead.decodeFirst(func(m int, p member.Plan, of *fetch.ObjectFetch) *memberRead {
			return rd.fn.startMember(context.Background(), m, p, of)
		})
	}
	if !own {
		p := rd.planOf(m)
		of := rd.fn.fetcher.Add(rd.fn.getsFor(rd.d.Bucket), rd.d.Members[m].object(), p.FetchRange())
		of.Bind(ctx)
		return rd.fn.startMember(ctx, m, p, of)
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
	metricChecksumLookups.Inc(ctx, st.ChecksumLookups)
	metricChecksumsOK.Inc(ctx, st.ChecksumsVerified)
	metricChecksumsNone.Inc(ctx, st.ChecksumsMissing)
	metricChecksumsPart.Inc(ctx, st.ChecksumsUnchecked)
	if st.RangeIgnored > 0 && fn.warnedRange.CompareAndSwap(false, true) {
		log.Warnf(ctx, "s3io: %d ranged GETs were answered with the whole object (200, not 206): the server or a proxy in front of it ignores Range. Reads stay exact (the bytes before each range are discarded), but each costs the object's bytes up to its range; counter %s/range_ignored counts them. Warned once per reader.",
			st.RangeIgnored, MetricsNamespace)
	}
}

// memberRead is one member being read (member.Read), and what the restriction's read
// knows of it.
type memberRead struct {
	m    int
	of   *fetch.ObjectFetch
	r    *member.Read
	fn   *reader // whose decoders it gives back
	idx0 int64   // index of the first record the read yields
	// pending, taken over from a read a split stopped inside the member, is the batch to
	// emit first, from its record pendingAt (nextBatch).
	pending   *member.Batch
	pendingAt int
	// handedOver is set once a split stopped the read inside the member and its decoding
	// went to the handover store for the residual: the read no longer finishes it.
	handedOver bool
	// framedTo is the stream offset up to which the worker's progress counts the read's
	// decompressed bytes (framed): a batch handed over with the read is counted once.
	framedTo int64
}

// nextBatch returns the next batch of records to emit and the index in it of the first.
func (mr *memberRead) nextBatch() (*member.Batch, int) {
	if b := mr.pending; b != nil {
		mr.pending = nil
		mr.framed(b)
		return b, mr.pendingAt
	}
	b := mr.r.Next()
	mr.framed(b)
	return b, 0
}

// framed counts in the worker's progress the decompressed bytes up to b's last record, one
// batch at a time so that a long member shows as it is read; finish counts the rest.
func (mr *memberRead) framed(b *member.Batch) {
	if n := len(b.Ends); n > 0 && b.Ends[n-1] > mr.framedTo {
		workerProgress.decompressed.Add(b.Ends[n-1] - mr.framedTo)
		mr.framedTo = b.Ends[n-1]
	}
}

// startMember starts reading member m as p plans, from the bytes of of.
func (fn *reader) startMember(ctx context.Context, m int, p member.Plan, of *fetch.ObjectFetch) *memberRead {
	mr := &memberRead{m: m, of: of, fn: fn}
	if p.Resume.Known() {
		metricResumed.Inc(ctx, 1)
		mr.idx0 = p.Resume.Index
	}
	mr.r = fn.members.Start(p, of)
	mr.framedTo = mr.r.Base()
	return mr
}

// finish stops mr's goroutines, drops what it fetched and did not use, and accounts for
// what it decoded.
func (mr *memberRead) finish(ctx context.Context) {
	decoded, headers := mr.r.Finish(mr.fn.members)
	metricBytes.Inc(ctx, decoded)
	workerProgress.decompressed.Add(decoded - (mr.framedTo - mr.r.Base()))
	metricHeadersSkipped.Inc(ctx, headers)
}
