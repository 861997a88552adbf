// Package listing lists an S3 prefix with parallel ListObjectsV2 requests (ListObjectVersions
// with Options.Versions; folder by folder in a directory bucket) and hands the keys on in key
// order: the ranges of the key space it cuts, the LIST decoder it reads pages with,
// and the globs that select keys and prune folders.
package listing

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// Options says what a Listing lists and how.
type Options struct {
	Client     *s3.Client
	Bucket     string
	Prefix     string // every request's Prefix
	StartAfter string // keys up to it are not listed
	// Parallelism is the most requests in flight (at least 1).
	Parallelism int
	// PageKeys, when set, is sent as MaxKeys, and the page size the splits estimate with:
	// small prefixes then list in many pages.
	PageKeys int32
	// SkipFolder, when set, says a folder ("a/b/") holds no key the caller would select: a
	// range that holds only that folder's keys is not listed.
	SkipFolder func(folder string) bool
	// Versions, when set, lists object versions instead of current objects (see Versions).
	Versions *Versions
	// Warnf, when set, logs what the caller should know once per process: that pages are
	// decoded by the SDK because its middleware stack changed.
	Warnf func(format string, args ...any)
}

// Stats counts what a listing did.
type Stats struct {
	Requests       int64 // LIST requests answered: pages and probes
	Versions       int64 // versions and delete markers a version listing's pages held
	Probes         int64 // delimiter probes among them
	Keys           int64 // keys handed on
	SkippedFolders int64 // folders never listed, because SkipFolder said so
}

// Error is a LIST request that failed, with the prefix it listed; Err is the SDK's error.
type Error struct {
	Bucket, Prefix string
	Err            error
}

func (e *Error) Error() string {
	return fmt.Sprintf("s3io: list s3://%s/%s: %v", e.Bucket, e.Prefix, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// s3PageKeys is what one ListObjectsV2 page holds at most; the listing's memory bound is
// counted in pages.
const s3PageKeys = 1000

// Listing lists a prefix with up to Parallelism ListObjectsV2 requests in flight and hands
// the keys to one consumer in key order, whatever order the requests complete in, so that
// what is planned from it never depends on timing or on the parallelism.
//
// The keyspace is a sequence of contiguous ranges (lo, hi]: lo is sent as StartAfter, hi
// ends the range (inclusive; the last range is open). Each range is listed page by page,
// StartAfter the last key seen, so a range's state is one key and it can be cut anywhere.
// A worker with nothing to list splits the remainder of the earliest range worth splitting
// (see split): at the folders a delimiter listing reveals, else at points spread over the
// alphabet the keys use. Ranges ahead of the consumer keep their pages until it reaches
// them; the pages buffered are bounded (see admit), so memory depends on the parallelism,
// not on the number of keys.
type Listing struct {
	opts   Options
	budget int // pages that ranges ahead of the consumer may buffer

	mu       sync.Mutex
	cond     *sync.Cond
	ranges   []*keyRange // in key order; ranges[0] is the one the consumer reads
	buffered int         // pages held by all ranges
	inFlight int
	err      error
	// stop cancels the requests still in flight once every range is done: a delimiter
	// probe can outlive the range it was sent for, and its answer is no longer needed.
	stop     context.CancelFunc
	alphabet alphabet
	stats    Stats
}

// New prepares a listing; Run starts it.
func New(opts Options) *Listing {
	opts.Parallelism = max(opts.Parallelism, 1)
	l := &Listing{opts: opts, budget: opts.Parallelism * bufferPagesPerRequest}
	l.cond = sync.NewCond(&l.mu)
	after := opts.StartAfter
	if after < opts.Prefix {
		after = "" // every key under prefix sorts after it
	}
	l.ranges = []*keyRange{{lo: after, after: after}}
	return l
}

// Stats returns what the listing did so far; final once Next has returned the end.
func (l *Listing) Stats() Stats {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.stats
}

// send lists one page, or probe.
func (l *Listing) send(ctx context.Context, in *s3.ListObjectsV2Input, probe bool) (*Page, error) {
	if l.opts.Versions != nil {
		return l.sendVersions(ctx, in, probe)
	}
	p, err := fetchPage(ctx, l.opts.Client, in, l.opts.Warnf)
	if err != nil {
		return nil, &Error{Bucket: l.opts.Bucket, Prefix: l.opts.Prefix, Err: err}
	}
	if err := p.unescape(l.opts.Bucket); err != nil {
		return nil, err
	}
	p.requests = 1
	return p, nil
}

// keyRange is one contiguous piece of the keyspace: keys > lo and, when bounded, <= hi.
type keyRange struct {
	lo, hi  string
	bounded bool
	// after is the last key listed (or lo): the next page starts after it.
	after   string
	listed  int64  // keys listed in this range so far
	first   string // the first of them, for the density estimate
	pages   [][]Object
	busy    bool // a page of this range is being listed
	probing bool // a delimiter probe of this range is in flight
	done    bool // every key of the range is listed
	flat    bool // a delimiter listing found no folders to split at
	// only, when set, is a folder that holds every key of the range (a delimiter listing
	// showed nothing else between its cuts): the range lists with it as Prefix, so its last
	// page says it is the last instead of running into the next folder.
	only string
}

func (r *keyRange) setInFlight(probe, on bool) {
	if probe {
		r.probing = on
	} else {
		r.busy = on
	}
}

// bufferPagesPerRequest sizes the pages ranges ahead of the consumer may hold: enough
// that every request in flight has room for several pages, so that the listers keep going
// while the consumer works through the range before theirs.
const bufferPagesPerRequest = 8

// Run lists until every range is done or ctx ends; the consumer reads with Next. It returns
// at once; the workers stop when the listing is done, fails, or ctx is cancelled.
func (l *Listing) Run(ctx context.Context) {
	ctx, l.stop = context.WithCancel(ctx)
	for range l.opts.Parallelism {
		go l.work(ctx)
	}
	go func() {
		<-ctx.Done()
		l.fail(ctx.Err())
	}()
}

func (l *Listing) fail(err error) {
	l.mu.Lock()
	if l.err == nil && len(l.ranges) > 0 {
		l.err = err
	}
	l.cond.Broadcast()
	l.mu.Unlock()
}

// Next returns the next page of keys in key order, or nil at the end of the listing.
func (l *Listing) Next() ([]Object, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for {
		if l.err != nil {
			l.stop()
			return nil, l.err
		}
		if len(l.ranges) == 0 {
			// Complete: the requests still out are probes nobody needs. Wait for them so
			// that the stats are final and no worker outlives the listing.
			l.stop()
			for l.inFlight > 0 {
				l.cond.Wait()
			}
			return nil, nil
		}
		head := l.ranges[0]
		if len(head.pages) > 0 {
			p := head.pages[0]
			head.pages[0] = nil
			head.pages = head.pages[1:]
			l.buffered--
			l.cond.Broadcast()
			return p, nil
		}
		if head.done {
			l.ranges = l.ranges[1:]
			l.cond.Broadcast()
			continue
		}
		l.cond.Wait()
	}
}

// task is one request a worker sends: a page of a range, or a delimiter probe of it.
type task struct {
	r     *keyRange
	probe bool
	in    s3.ListObjectsV2Input
}

func (l *Listing) work(ctx context.Context) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for {
		if l.err != nil || len(l.ranges) == 0 {
			return
		}
		t, ok := l.nextTask()
		if !ok {
			l.cond.Wait()
			continue
		}
		t.r.setInFlight(t.probe, true)
		l.inFlight++
		l.mu.Unlock()
		out, err := l.send(ctx, &t.in, t.probe)
		l.mu.Lock()
		l.inFlight--
		t.r.setInFlight(t.probe, false)
		if err != nil {
			if l.err == nil && len(l.ranges) > 0 {
				l.err = err
			}
			l.cond.Broadcast()
			return
		}
		l.stats.Requests += int64(out.requests)
		l.stats.Versions += int64(out.versions)
		if t.probe {
			l.stats.Probes++
			l.splitAtFolders(t.r, out)
		} else {
			l.addPage(t.r, out)
		}
		l.cond.Broadcast()
	}
}

// nextTask picks the earliest range that may list its next page, else a range to split.
// Called with l.mu held.
func (l *Listing) nextTask() (task, bool) {
	if t, ok := l.runnable(); ok || l.opts.Parallelism == 1 {
		return t, ok
	}
	return l.split()
}

// runnable returns the next page of the earliest range that is idle and admitted.
func (l *Listing) runnable() (task, bool) {
	held := 0 // pages buffered by the ranges before the one considered, and by it
	for i, r := range l.ranges {
		held += len(r.pages)
		if r.done || r.busy {
			continue
		}
		if !l.admit(i, held) {
			break
		}
		return task{r: r, in: l.pageInput(r)}, true
	}
	return task{}, false
}

// admit reports whether the range at index i, with held pages buffered at or before it, may
// list another page. The consumer's range always may (nothing else can make progress for
// it); any other only while the ranges up to it hold less than the budget and all of them
// less than twice that, which bounds the pages buffered whatever the splits do.
func (l *Listing) admit(i, held int) bool {
	return i == 0 || held < l.budget && l.buffered < 2*l.budget
}

// page is how many keys a full page holds.
func (l *Listing) page() float64 {
	if l.opts.PageKeys > 0 {
		return float64(l.opts.PageKeys)
	}
	return s3PageKeys
}

func (l *Listing) pageInput(r *keyRange) s3.ListObjectsV2Input {
	in := l.input()
	if r.after != "" {
		in.StartAfter = aws.String(r.after)
	}
	// Every key after r.after and up to r.hi starts with their common prefix: asking for it
	// spares the server, and the page, the keys past r's end under a wider prefix.
	if c := commonPrefix(r.after, r.hi); r.bounded && len(c) > len(l.opts.Prefix) {
		in.Prefix = aws.String(c)
	}
	if r.only != "" {
		in.Prefix = aws.String(r.only)
	}
	return in
}

func (l *Listing) input() s3.ListObjectsV2Input {
	in := s3.ListObjectsV2Input{
		Bucket:                   aws.String(l.opts.Bucket),
		EncodingType:             types.EncodingTypeUrl,
		OptionalObjectAttributes: []types.OptionalObjectAttributes{types.OptionalObjectAttributesRestoreStatus},
	}
	if l.opts.Prefix != "" {
		in.Prefix = aws.String(l.opts.Prefix)
	}
	if l.opts.PageKeys > 0 {
		in.MaxKeys = aws.Int32(l.opts.PageKeys)
	}
	return in
}

// addPage files a page's keys under r: those past r's end belong to the next range (it
// lists them itself) and end r. Called with l.mu held.
func (l *Listing) addPage(r *keyRange, p *Page) {
	keys := p.Objects
	for i, o := range keys {
		if r.bounded && o.Key > r.hi {
			l.adopt(r, keys[i:])
			keys, r.done = keys[:i], true
			break
		}
	}
	l.file(r, keys)
	if p.Last != "" && !r.done {
		// Keys a version listing selected nothing of still move the range on.
		if r.bounded && p.Last > r.hi {
			r.done = true
		} else if p.Last > r.after {
			r.after = p.Last
		}
	}
	if !p.Truncated {
		r.done = true
	}
}

// adopt hands keys past r's end to the ranges after r that have not started listing: they
// are those ranges' first keys, and a page that runs past a cut (a folder range's page runs
// into the next folder) would otherwise be listed twice. A range that has started, or has
// a request in flight, lists its keys itself. Called with l.mu held.
func (l *Listing) adopt(r *keyRange, rest []Object) {
	at := slices.Index(l.ranges, r)
	for _, nr := range l.ranges[at+1:] {
		if len(rest) == 0 || nr.busy || nr.done || nr.listed > 0 || nr.after != nr.lo {
			return
		}
		n := len(rest)
		if nr.bounded {
			n, _ = slices.BinarySearchFunc(rest, nr.hi, func(o Object, hi string) int { return strings.Compare(o.Key, hi+"\x00") })
		}
		l.file(nr, rest[:n])
		if n == len(rest) {
			return // the page ended inside nr: nr lists on from its last key
		}
		nr.done = true // a key past nr's end was listed
		rest = rest[n:]
	}
}

// file appends sorted keys, all in r's range, to r's pages. Called with l.mu held.
func (l *Listing) file(r *keyRange, keys []Object) {
	if len(keys) > 0 {
		if keys[0].Key <= r.after {
			l.err = fmt.Errorf("s3io: the listing of s3://%s/%s is not in key order (%q after %q); s3io plans from sorted listings, as S3's general-purpose buckets give (a directory bucket, named base--zone-id--x-s3, is listed folder by folder instead)", l.opts.Bucket, l.opts.Prefix, keys[0].Key, r.after)
			return
		}
		for i := 1; i < len(keys); i++ {
			if keys[i].Key <= keys[i-1].Key {
				l.err = fmt.Errorf("s3io: the listing of s3://%s/%s is not in key order (%q after %q); s3io plans from sorted listings, as S3's general-purpose buckets give (a directory bucket, named base--zone-id--x-s3, is listed folder by folder instead)", l.opts.Bucket, l.opts.Prefix, keys[i].Key, keys[i-1].Key)
				return
			}
		}
		if r.listed == 0 {
			r.first = keys[0].Key
		}
		r.after = keys[len(keys)-1].Key
		r.listed += int64(len(keys))
		l.stats.Keys += int64(len(keys))
		r.pages = append(r.pages, keys)
		l.buffered++
		if l.opts.Parallelism > 1 {
			for _, o := range keys {
				l.alphabet.add(o.Key[len(l.opts.Prefix):])
			}
		}
	}
}
