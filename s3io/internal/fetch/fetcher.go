package fetch

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spate-io/beam-s3/s3io/internal/checksum"
)

// A Fetcher keeps a reader's GETs in flight: real S3 answers each request after tens of
// milliseconds and sends ~90 MB/s per connection, so one request at a time reads small
// objects at a few MB/s and large ones at one connection's speed. The fetcher walks the
// objects it is given in order and cuts each into parts, fetching as many parts (of one
// object, or of the objects ahead) at once as Settings.MaxRequestsInFlight, its Budget and
// its Pool allow. Parts are pinned ranged GETs, each resuming from its own next byte when
// its body breaks; an object's parts are handed to its reader strictly in order.
//
// One fetcher serves a reader for its lifetime, across restrictions, so that the objects of
// the next restriction can be queued (and fetched) before it starts.
//
// Parts are issued, and admitted into the budget once their answers arrive, in object and
// offset order, so the budget can never deadlock: the part the reader of the current object
// waits for was always admitted before any part held by a later object.
type Fetcher struct {
	ctx    context.Context
	cancel context.CancelFunc
	set    Settings
	pool   *Pool         // the worker's part buffers, shared with other readers
	budget *Budget       // this reader's share of them
	reqs   chan struct{} // one token per request in flight

	mu      sync.Mutex
	queue   []*ObjectFetch // objects with parts left to issue, in order
	running bool           // a scheduler goroutine is walking the queue
	wg      sync.WaitGroup
	issued  int // parts issued since the fetcher was last idle (scheduler only)
	// turn is closed when every part issued so far has been admitted or abandoned: the
	// next part issued is admitted after it (scheduler only).
	turn    chan struct{}
	wasIdle bool // the queue ran dry: the next object starts with small parts (under mu)
	// rate is what one connection delivered lately, from a part's first byte to its last.
	// The request's latency is left out: on a loaded server nearby it is queueing, which
	// says nothing about how fast a connection's body flows (see partLatency).
	rate connRate
	// firstByte is how long requests waited for their answer lately, in nanoseconds (a
	// moving average over parts; 0 before the first).
	firstByte atomic.Int64

	gotten, resumes, received, cancelled, dropped, rangeIgnored              atomic.Int64
	checksumLookups, checksumsVerified, checksumsMissing, checksumsUnchecked atomic.Int64
}

// ObjectFetch is one object's byte range being fetched in parts: [from, planEnd) is fetched
// ahead; bytes after planEnd are read on demand. It belongs to one Fetcher at a time, which
// issues its parts within its budget; Freeze and Adopt hand it, with the parts already
// fetched, to another (handover.go).
type ObjectFetch struct {
	f       atomic.Pointer[Fetcher] // the fetcher that issues its parts
	gets    *Gets
	obj     Object
	from    int64
	planEnd int64
	tail    int64 // the request size past planEnd
	// ctx ends its requests: Drop, Cancel or the context Bind links it to end it, never the
	// fetcher's end, since a handed-over object outlives the fetcher that issued its first
	// parts (issuing stops with the fetcher; see schedule).
	ctx    context.Context
	cancel context.CancelFunc
	// parts carries the parts in order as they are issued; it is closed after the last one,
	// or when the object is dropped.
	parts chan *part
	// next is the offset of the next part to issue, and issuedAny is set once one was (the
	// issuing scheduler only; a handover passes them on under mu).
	next      int64
	issuedAny bool
	// sum is the lookup of the object's stored checksum, for a read of the whole object
	// with Settings.VerifyChecksums (nil otherwise): each part hashes what it fetched
	// once it is known, and the stream folds the parts' values in order.
	sum      *storedSum
	stopBind func() bool // ends the link Bind made to a read's context

	// mu orders the object's state, and its live parts' budget, between the fetchers it
	// moves through; a fetcher's mu is taken before it.
	mu    sync.Mutex
	state fetchState
	// freezing is set by Freeze while the scheduler issues the object: it stops issuing, and
	// the object waits for another fetcher, its parts channel open. stopIssue ends the
	// scheduler's issuing of it; issueDone is closed when the scheduler has let it go.
	freezing  bool
	stopIssue context.CancelFunc
	issueDone chan struct{}
	// live are the parts issued and not yet released, with the budget each is counted in.
	live []*part
}

// fetchState is where an ObjectFetch is in its life; mu guards it.
type fetchState int

const (
	queued   fetchState = iota // in its fetcher's queue
	issuing                    // its fetcher's scheduler is issuing its parts
	frozen                     // issuing stopped by Freeze: parts open, waiting for Adopt or Drop
	finished                   // every part issued, or the object dropped: parts closed
)

// part is one ranged GET of an object, buffered whole. It is promised room in its budget
// when it is requested, and admitted into it (given its buffer) when its answer arrives.
type part struct {
	off  int64
	n    int64 // bytes requested
	ramp bool  // a ramp part, which may be lent a larger buffer (Pool.getRamp)
	// issuer is the budget of the fetcher that issued it, whose order it is admitted in;
	// a part counted in another budget (its object adopted) is admitted at once there
	// (Budget.count), as a part of a frozen object is into the pool alone.
	issuer *Budget
	// turn is closed when the parts issued before it were admitted or abandoned; the
	// part closes passTurn when it has been.
	turn, passTurn chan struct{}

	// Under its object's mu:
	b     *Budget // the budget it is counted in; nil while its object is frozen
	stage partStage
	buf   []byte // its buffer, once admitted
	// pieces are the checksums of buf, cut at a composite object's part ends, when its
	// object is verified (ObjectFetch.hash).
	pieces []checksum.Piece

	done chan struct{}
	err  error
}

// partStage is where a part is in its budget's accounting.
type partStage int

const (
	promised  partStage = iota // requested, counted as promised
	admitted                   // answered, its buffer held
	abandoned                  // ended before it was admitted: nothing counted
)

// NewFetcher returns the scheduler of one reader's GETs, following set, their parts held in
// pool within budget. Its goroutine runs while objects wait in its queue. Close must be
// called.
func NewFetcher(ctx context.Context, set Settings, pool *Pool, budget *Budget) *Fetcher {
	ctx, cancel := context.WithCancel(ctx)
	return &Fetcher{
		ctx: ctx, cancel: cancel, set: set, pool: pool, budget: budget,
		reqs:    make(chan struct{}, set.MaxRequestsInFlight),
		wasIdle: true, turn: closedTurn,
	}
}

// closedTurn is the turn of the first part a fetcher issues.
var closedTurn = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// Budget returns the share of the pool the fetcher's parts are held within.
func (f *Fetcher) Budget() *Budget { return f.budget }

// Range is what to fetch of an object: [From, PlanEnd) in parts, fetched ahead; what the
// reader asks for past PlanEnd, up to the object's end, in requests of TailWindow bytes
// (0: one request to the end).
type Range struct {
	From, PlanEnd int64
	TailWindow    int64
}

// Add queues r of o, read with gets, for fetching after every object added before. Its
// requests end with the fetcher, with Drop, or with the context Bind links it to.
func (f *Fetcher) Add(gets *Gets, o Object, r Range) *ObjectFetch {
	ctx, cancel := context.WithCancel(context.Background())
	n := int64(1)
	if r.PlanEnd > r.From {
		// The channel holds every part the object can be cut into: no part is smaller than
		// the first ramp part or PartBytes.
		unit := min(f.set.PartBytes, rampParts[0])
		n = (r.PlanEnd-r.From+unit-1)/unit + 1
	}
	of := &ObjectFetch{gets: gets, obj: o, from: r.From, planEnd: r.PlanEnd, tail: r.TailWindow, ctx: ctx, cancel: cancel,
		parts: make(chan *part, n), next: r.From}
	of.f.Store(f)
	if f.set.VerifyChecksums && r.From == 0 && r.PlanEnd == o.Size {
		// Only a read from the object's first byte can end verified: a stored checksum
		// covers the whole object (or a composite's parts).
		of.sum = lookupStored(ctx, gets, o, &f.checksumLookups)
	}
	f.mu.Lock()
	f.enqueue(of)
	f.mu.Unlock()
	return of
}

// enqueue appends of to the queue and starts the scheduler if it is not running. f.mu is
// held.
func (f *Fetcher) enqueue(of *ObjectFetch) {
	of.state = queued
	f.queue = append(f.queue, of)
	if !f.running && f.ctx.Err() == nil {
		f.running = true
		f.wg.Add(1)
		go f.schedule()
	}
}

// Bind links of's requests to ctx, the context of the read that will consume it: they end
// when it ends. An object can be added before its read begins (the next restriction's) and
// bound once it does.
func (of *ObjectFetch) Bind(ctx context.Context) {
	if of.stopBind != nil {
		of.stopBind()
	}
	of.stopBind = context.AfterFunc(ctx, of.cancel)
}

// schedule issues the queued objects' parts in order, each once the budget, the pool and a
// request slot allow it, and returns when the queue is empty.
func (f *Fetcher) schedule() {
	defer f.wg.Done()
	for {
		f.mu.Lock()
		if len(f.queue) == 0 || f.ctx.Err() != nil {
			f.running, f.wasIdle = false, true
			f.mu.Unlock()
			return
		}
		of := f.queue[0]
		f.queue = f.queue[1:]
		// Issuing stops when the object is dropped, frozen, or the fetcher closes.
		ictx, icancel := context.WithCancel(of.ctx)
		stop := context.AfterFunc(f.ctx, icancel)
		of.mu.Lock()
		of.state, of.stopIssue, of.issueDone = issuing, icancel, make(chan struct{})
		of.mu.Unlock()
		if f.wasIdle {
			f.issued, f.wasIdle = 0, false
		}
		f.mu.Unlock()
		f.issue(ictx, of)
		stop()
		icancel()
		of.mu.Lock()
		if of.freezing && of.ctx.Err() == nil {
			of.state, of.freezing = frozen, false
		} else {
			if of.more() {
				// Cut short by the fetcher's end: its reader must not take the parts it has
				// for the whole object.
				of.cancel()
			}
			of.state = finished
			close(of.parts)
		}
		close(of.issueDone)
		of.mu.Unlock()
	}
}

// more reports whether of has parts left to issue.
func (of *ObjectFetch) more() bool {
	return of.next < of.planEnd || !of.issuedAny
}

// issue starts the parts of of, in order, until every one is issued or ctx ends.
func (f *Fetcher) issue(ctx context.Context, of *ObjectFetch) {
	for of.more() {
		n := min(f.partSize(), max(of.planEnd-of.next, 0))
		// A ramp part of an object that goes on: full-size parts follow it.
		ramp := f.issued < len(rampParts) && of.planEnd-of.next > n
		c := partClass(n)
		if !f.budget.promise(ctx, c) {
			return
		}
		select {
		case f.reqs <- struct{}{}:
		case <-ctx.Done():
			f.budget.unpromise(c)
			return
		}
		p := &part{off: of.next, n: n, ramp: ramp, issuer: f.budget, b: f.budget,
			turn: f.turn, passTurn: make(chan struct{}), done: make(chan struct{})}
		f.turn = p.passTurn
		of.mu.Lock()
		of.live = append(of.live, p)
		of.next += n
		of.issuedAny = true
		gets := of.gets // Adopt may hand the object to another fetcher's reads meanwhile
		of.mu.Unlock()
		f.issued++
		of.parts <- p // never blocks: the channel holds every part of the object
		f.wg.Add(1)
		go f.fetch(of, p, gets)
	}
}

// rampParts are the sizes of the first parts after the fetcher was idle. The decoder waits
// for the first part whole, and on prism restrictions are read one after the other: a small
// first part shortens the wait that begins a restriction nothing was fetched ahead for from
// a request's latency plus a full part's transfer to little more than the latency.
var rampParts = [...]int64{256 << 10, 1 << 20}

// partsInFlight is how many parts the budget is cut into: enough concurrent connections to
// carry its bytes at ~90 MB/s each, while larger budgets mean larger parts and fewer
// requests (AWS advises 8–16 MiB ranged GETs).
const partsInFlight = 16

// minPartsInFlight is how many parts a part size earned by the request latency leaves room
// for in the budget.
const minPartsInFlight = 8

// minPartBytes is the smallest part after the ramp.
const minPartBytes = 1 << 20

// partLatency is the request latency a part should be worth: a connection whose body flows
// at r bytes per second gets parts of r × partLatency, so that a connection much faster than
// S3's ~90 MB/s (a server nearby, or loopback, where each GET costs the server's CPU on the
// same cores) reads fewer, larger parts, while on S3 the budget's sixteenth decides. 20 ms,
// not 10: with the rate taken only from parts read as their bytes arrived (delivered), 10 ms
// of a loopback connection whose server shares its cores made smaller parts, 320-600 GETs
// per 2 GiB of plain NDJSON against ~330, and the read 3-5 % slower; 20 ms reads with ~330.
const partLatency = 20 * time.Millisecond

// partSize is the size of the next part: small after the fetcher was idle, then the largest
// of a sixteenth of the budget, what a connection delivers in partLatency, and what it
// delivers while a request waits for its first byte (at most an eighth of the budget), in
// powers of two, up to Settings.PartBytes.
func (f *Fetcher) partSize() int64 {
	if f.issued < len(rampParts) {
		return min(rampParts[f.issued], f.set.PartBytes)
	}
	limit, rate := f.budget.Limit(), f.rate.get()
	want := max(limit/partsInFlight, rate*int64(partLatency)/int64(time.Second))
	// A part should take about as long to arrive as its request waited for its first byte,
	// so that latency costs a connection at most half its time (AWS's 8–16 MiB advice, for
	// S3's latency and speed), while the budget still holds minPartsInFlight of them.
	if wait := f.firstByte.Load(); wait > 0 {
		want = max(want, min(rate*wait/int64(time.Second), limit/minPartsInFlight))
	}
	// The power of two at or below want, or the one above when want is within a quarter
	// of it.
	n := int64(minPartBytes)
	for n*2 <= want+want/4 {
		n *= 2
	}
	return min(n, f.set.PartBytes)
}

// delivered adds a part of n bytes, admitted wait after its answer came and then read in d,
// to the connection's rate (connRate). Only a part read as its bytes arrived measures
// the connection: one that waited for its turn or for room found its socket's buffer filled
// meanwhile and read megabytes at memory speed, which made paced 90 MB/s connections look
// like loopback and earned them parts so large that the reader waited on their bodies. Such
// a part still bounds the rate from below, n bytes in wait+d, which raises an estimate that
// is too low (loopback, where nearly every part waits for room).
func (f *Fetcher) delivered(n int64, wait, d time.Duration) {
	if n < minPartBytes || d <= 0 {
		return // small parts measure latency, not delivery
	}
	sample := int64(float64(n) / (wait + d).Seconds())
	if wait > d/admitWaitDiv && sample <= f.rate.get() {
		return // the socket buffered while the part waited: memory speed, not the network's
	}
	f.rate.add(n, wait+d)
}

// admitWaitDiv bounds the admission wait of a part that measures its connection: an
// eighth of its read, so that what its socket buffered meanwhile inflates the rate by an
// eighth at most.
const admitWaitDiv = 8

// answered adds a request's wait for its first byte to the moving average.
func (f *Fetcher) answered(d time.Duration) {
	if d > 0 {
		average(&f.firstByte, int64(d))
	}
}

// average moves the moving average in v toward sample by an eighth (v holds 0 before the
// first sample, which it takes whole); the fetching goroutines update it concurrently.
func average(v *atomic.Int64, sample int64) {
	for {
		old := v.Load()
		nv := sample
		if old > 0 {
			nv = old + (sample-old)/8
		}
		if v.CompareAndSwap(old, nv) {
			return
		}
	}
}

// class is the room p takes in its budget, promised or admitted: its size's class (the
// pool may lend it a larger buffer, Pool.getRamp, which the pool counts).
func (p *part) class() int64 { return partClass(p.n) }

// fetch requests one part through gets, the reads of the fetcher that issued it, and once
// its answer arrives and its turn and room come, reads it into its buffer.
func (f *Fetcher) fetch(of *ObjectFetch, p *part, gets *Gets) {
	defer f.wg.Done()
	r := gets.Open(of.ctx, of.obj, p.off, p.off+p.n)
	p.err = r.answer()
	var answered time.Time
	if p.err == nil {
		answered = time.Now()
		f.answered(r.firstByte)
		p.err = f.admit(of, p)
	}
	if p.err == nil {
		start := time.Now()
		p.err = r.readFull(p.buf)
		if p.err == nil {
			f.delivered(p.n, start.Sub(answered), time.Since(start))
			p.err = of.hash(p)
		}
	} else {
		of.abandon(p)
	}
	r.Close()
	<-f.reqs
	f.account(r)
	if p.err != nil && of.ctx.Err() != nil {
		f.cancelled.Add(1)
	}
	close(p.done)
}

// admit waits for p's turn and for room in its budget, then gives it its buffer; it fails
// if p's object is dropped first. A part of a frozen object is counted in the pool only,
// and one of an adopted object is counted in its new budget without waiting for room
// there: its reader must not wait for the parts that budget's own fetcher issued later.
func (f *Fetcher) admit(of *ObjectFetch, p *part) error {
	dropped := func() error { return &ReadError{Offset: p.off, Attempts: 1, Err: of.ctx.Err()} }
	select {
	case <-p.turn:
	case <-of.ctx.Done():
		return dropped()
	}
	for {
		of.mu.Lock()
		b := p.b
		var ok bool
		var freed <-chan struct{}
		switch {
		case b == nil:
			ok = true
		case b != p.issuer:
			b.count(-p.class(), p.class())
			ok = true
		default:
			ok, freed = b.admit(p.class())
		}
		if ok {
			p.stage = admitted
		}
		of.mu.Unlock()
		if ok {
			break
		}
		select {
		case <-freed:
		case <-of.ctx.Done():
			return dropped()
		}
	}
	// The pool is the worker's, shared with other readers: the next part's turn comes
	// only once this one has its buffer, or a later part could take the buffer the reader
	// waits for.
	get := of.fetcher().pool.get
	if p.ramp {
		get = of.fetcher().pool.getRamp
	}
	buf, ok := get(of.ctx, p.n)
	close(p.passTurn)
	of.mu.Lock()
	defer of.mu.Unlock()
	if !ok {
		p.stage = abandoned
		if p.b != nil {
			p.b.give(p.class())
			p.b = nil
		}
		return dropped()
	}
	p.buf = buf
	return nil
}

// hash computes p's pieces of its object's CRC, on the goroutine that fetched it, so that
// parts hash in parallel and the reader only folds their values (a SHA, which does not
// combine, is hashed by the reader as it takes the parts, objectCheck): once the lookup of
// the stored checksum ends (it started with the object's first part, and is answered long
// before a part's body is read), since a composite object's pieces are cut at its parts'
// ends. A body resumed mid-part fills p.buf once, so no byte is hashed twice.
func (of *ObjectFetch) hash(p *part) error {
	if of.sum == nil {
		return nil
	}
	if err := of.sum.wait(of.ctx); err != nil {
		return err
	}
	if of.sum.usable && of.sum.st.Algorithm.Combinable() {
		p.pieces = checksum.Hash(of.sum.st.Algorithm, of.sum.ends, p.off, p.buf, p.pieces[:0])
	}
	return nil
}

// abandon takes p, which ends before it was admitted, out of its budget's promises, and
// passes its turn on once it comes.
func (of *ObjectFetch) abandon(p *part) {
	of.mu.Lock()
	if p.stage == promised {
		p.stage = abandoned
		if p.b != nil {
			p.b.unpromise(p.class())
			p.b = nil
		}
		select {
		case <-p.turn:
			close(p.passTurn)
		default:
			go func() {
				<-p.turn
				close(p.passTurn)
			}()
		}
	}
	of.mu.Unlock()
}

// account adds what r transferred to the fetcher's counts.
func (f *Fetcher) account(r *PinnedReader) {
	f.gotten.Add(int64(r.gets))
	f.resumes.Add(int64(r.resumes))
	f.received.Add(r.received)
	f.rangeIgnored.Add(int64(r.rangeIgnored))
}

// processReceived counts the body bytes every pinned read of the process received, as each
// read of a body returns them. A worker's progress line reads it: parts outlive the
// instance whose fetcher requested them (they are handed over), and the instances come and
// go, so only a count kept by the process adds up; and a part takes seconds on a slow
// connection, so a count taken when its request ends would show a line of nothing fetched
// while it streams.
var processReceived atomic.Int64

// ProcessReceived returns the body bytes every pinned read of the process has received
// since it started.
func ProcessReceived() int64 { return processReceived.Load() }

// Stats returns what the fetcher's requests transferred so far.
func (f *Fetcher) Stats() Stats {
	return Stats{Gets: f.gotten.Load(), Resumes: f.resumes.Load(), Received: f.received.Load(),
		Cancelled: f.cancelled.Load(), Dropped: f.dropped.Load(), RangeIgnored: f.rangeIgnored.Load(),
		ChecksumLookups: f.checksumLookups.Load(), ChecksumsVerified: f.checksumsVerified.Load(),
		ChecksumsMissing: f.checksumsMissing.Load(), ChecksumsUnchecked: f.checksumsUnchecked.Load()}
}

// release returns p's buffer to the pool and its room to the budget it is counted in. A
// part is released once, by the goroutine that reads its object or by a drop, never both.
func (of *ObjectFetch) release(p *part) {
	of.mu.Lock()
	b := p.b
	p.b = nil
	if i := slices.Index(of.live, p); i >= 0 {
		of.live = slices.Delete(of.live, i, i+1)
	}
	c := p.class()
	buf := p.buf
	p.buf = nil
	of.mu.Unlock()
	if buf != nil {
		of.fetcher().pool.put(buf)
	}
	if b != nil {
		b.give(c)
	}
}

// reads returns the reads of's requests go through: its fetcher's, which Adopt changes.
func (of *ObjectFetch) reads() *Gets {
	of.mu.Lock()
	defer of.mu.Unlock()
	return of.gets
}

// fetcher returns the fetcher of now holds.
func (of *ObjectFetch) fetcher() *Fetcher { return of.f.Load() }

// Cancel ends of's requests; its reader then fails. It does not wait for them to end.
func (of *ObjectFetch) Cancel() { of.cancel() }

// Drop cancels of's requests and frees every part not yet consumed: the object failed, was
// read to its end, or was split away. It waits for the parts in flight to end.
func (of *ObjectFetch) Drop() {
	of.cancel()
	if of.stopBind != nil {
		of.stopBind()
	}
	f := of.fetcher()
	f.mu.Lock()
	of.mu.Lock()
	switch of.state {
	case queued:
		f.unqueue(of) // not reached by the scheduler: out of the queue unissued
		fallthrough
	case frozen:
		of.state = finished
		close(of.parts)
	}
	// An object being issued has its parts closed by the scheduler, which the cancel stops.
	of.mu.Unlock()
	f.mu.Unlock()
	for p := range of.parts {
		<-p.done
		if p.err == nil {
			f.dropped.Add(p.n)
		}
		of.release(p)
	}
}

// unqueue takes of out of the queue. f.mu is held.
func (f *Fetcher) unqueue(of *ObjectFetch) {
	if i := slices.Index(f.queue, of); i >= 0 {
		f.queue = slices.Delete(f.queue, i, i+1)
	}
}

// Close ends every request and waits for the fetcher's goroutines.
func (f *Fetcher) Close() {
	f.cancel()
	f.mu.Lock()
	queued := f.queue
	f.queue = nil
	f.mu.Unlock()
	for _, of := range queued {
		of.cancel()
	}
	f.wg.Wait()
}

// ReadRange reads the bytes [from, to) of of's object with one pinned GET outside the
// part plan, counted with the fetcher's requests and cancelled with the object: a zip's
// central directory, read from the tail before the entries stream from the front.
func (of *ObjectFetch) ReadRange(from, to int64) ([]byte, error) {
	r := of.reads().Open(of.ctx, of.obj, from, to)
	defer of.fetcher().account(r)
	defer r.Close()
	buf := make([]byte, to-from)
	if err := r.readFull(buf); err != nil {
		return nil, err
	}
	return buf, nil
}
