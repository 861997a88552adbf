package s3io

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// listedObject is one key of a listing, with what the planner selects and packs by.
type listedObject struct {
	Key          string
	Size         int64
	ETag         string
	LastModified time.Time
	StorageClass string
	// Restored: the listing's RestoreStatus says a restored copy is readable.
	Restored bool
}

// listPageKeys is what one ListObjectsV2 page holds at most; the listing's memory bound is
// counted in pages.
const listPageKeys = 1000

// listing lists a prefix with up to parallelism ListObjectsV2 requests in flight and hands
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
type listing struct {
	client      *s3.Client
	cfg         *Config
	bucket      string
	prefix      string // every request's Prefix
	parallelism int
	budget      int // pages that ranges ahead of the consumer may buffer
	// pageKeys, when set, is sent as MaxKeys: tests list small prefixes in many pages.
	pageKeys int32
	// skipFolder, when set, says a folder ("a/b/") holds no key the planner would select
	// (Config.Match cannot match under it): a range that holds only that folder's keys is
	// not listed.
	skipFolder func(folder string) bool

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
	stats    listStats
}

// keyRange is one contiguous piece of the keyspace: keys > lo and, when bounded, <= hi.
type keyRange struct {
	lo, hi  string
	bounded bool
	// after is the last key listed (or lo): the next page starts after it.
	after   string
	listed  int64  // keys listed in this range so far
	first   string // the first of them, for the density estimate
	pages   [][]listedObject
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

// listStats counts what the listing did.
type listStats struct {
	requests, probes, keys int64
	skippedFolders         int64
}

// newListing prepares a listing of prefix; run starts it.
func newListing(client *s3.Client, cfg *Config, bucket, prefix, startAfter string) *listing {
	l := &listing{client: client, cfg: cfg, bucket: bucket, prefix: prefix, parallelism: max(cfg.ListParallelism, 1)}
	l.budget = l.parallelism * listBufferPagesPerRequest
	l.cond = sync.NewCond(&l.mu)
	if startAfter < prefix {
		startAfter = "" // every key under prefix sorts after it
	}
	l.ranges = []*keyRange{{lo: startAfter, after: startAfter}}
	return l
}

// listBufferPagesPerRequest sizes the pages ranges ahead of the consumer may hold: enough
// that every request in flight has room for several pages, so that the listers keep going
// while the consumer works through the range before theirs.
const listBufferPagesPerRequest = 8

// run lists until every range is done or ctx ends; the consumer reads with next. It returns
// at once; the workers stop when the listing is done, fails, or ctx is cancelled.
func (l *listing) run(ctx context.Context) {
	ctx, l.stop = context.WithCancel(ctx)
	for range l.parallelism {
		go l.work(ctx)
	}
	go func() {
		<-ctx.Done()
		l.fail(ctx.Err())
	}()
}

func (l *listing) fail(err error) {
	l.mu.Lock()
	if l.err == nil && len(l.ranges) > 0 {
		l.err = err
	}
	l.cond.Broadcast()
	l.mu.Unlock()
}

// next returns the next page of keys in key order, or nil at the end of the listing.
func (l *listing) next() ([]listedObject, error) {
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

func (l *listing) work(ctx context.Context) {
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
		out, err := l.send(ctx, &t.in)
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
		l.stats.requests++
		if t.probe {
			l.stats.probes++
			l.splitAtFolders(t.r, out)
		} else {
			l.addPage(t.r, out)
		}
		l.cond.Broadcast()
	}
}

// nextTask picks the earliest range that may list its next page, else a range to split.
// Called with l.mu held.
func (l *listing) nextTask() (task, bool) {
	if t, ok := l.runnable(); ok || l.parallelism == 1 {
		return t, ok
	}
	return l.split()
}

// runnable returns the next page of the earliest range that is idle and admitted.
func (l *listing) runnable() (task, bool) {
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
func (l *listing) admit(i, held int) bool {
	return i == 0 || held < l.budget && l.buffered < 2*l.budget
}

// page is how many keys a full page holds.
func (l *listing) page() float64 {
	if l.pageKeys > 0 {
		return float64(l.pageKeys)
	}
	return listPageKeys
}

func (l *listing) pageInput(r *keyRange) s3.ListObjectsV2Input {
	in := l.input()
	if r.after != "" {
		in.StartAfter = aws.String(r.after)
	}
	// Every key after r.after and up to r.hi starts with their common prefix: asking for it
	// spares the server, and the page, the keys past r's end under a wider prefix.
	if c := commonPrefix(r.after, r.hi); r.bounded && len(c) > len(l.prefix) {
		in.Prefix = aws.String(c)
	}
	if r.only != "" {
		in.Prefix = aws.String(r.only)
	}
	return in
}

func (l *listing) input() s3.ListObjectsV2Input {
	in := s3.ListObjectsV2Input{
		Bucket:                   aws.String(l.bucket),
		EncodingType:             types.EncodingTypeUrl,
		OptionalObjectAttributes: []types.OptionalObjectAttributes{types.OptionalObjectAttributesRestoreStatus},
	}
	if l.prefix != "" {
		in.Prefix = aws.String(l.prefix)
	}
	if l.pageKeys > 0 {
		in.MaxKeys = aws.Int32(l.pageKeys)
	}
	return in
}

func (l *listing) send(ctx context.Context, in *s3.ListObjectsV2Input) (*listPage, error) {
	out, err := l.client.ListObjectsV2(ctx, in, fastListDecoding)
	if err != nil {
		return nil, describeS3Error(err, fmt.Sprintf("s3io: list s3://%s/%s", l.bucket, l.prefix))
	}
	return decodePage(l.bucket, out)
}

// listPage is a ListObjectsV2 response with its keys decoded.
type listPage struct {
	objects   []listedObject
	folders   []string
	truncated bool
}

// decodePage turns a response into a listPage, decoding keys only when the response says
// they are URL-encoded: some S3-compatible servers ignore the request's EncodingType and
// return raw keys, which a blind decode would corrupt where they contain % or +.
func decodePage(bucket string, out *s3.ListObjectsV2Output) (*listPage, error) {
	encoded := out.EncodingType == types.EncodingTypeUrl
	decode := func(s string) (string, error) {
		if !encoded {
			return s, nil
		}
		d, err := url.QueryUnescape(s)
		if err != nil {
			return "", fmt.Errorf("s3io: the listing of s3://%s returned a key that is not URL-encoded as requested (%q): %w", bucket, s, err)
		}
		return d, nil
	}
	p := &listPage{objects: make([]listedObject, 0, len(out.Contents)), truncated: aws.ToBool(out.IsTruncated)}
	for _, o := range out.Contents {
		key, err := decode(aws.ToString(o.Key))
		if err != nil {
			return nil, err
		}
		obj := listedObject{Key: key, Size: aws.ToInt64(o.Size), ETag: aws.ToString(o.ETag), LastModified: aws.ToTime(o.LastModified), StorageClass: string(o.StorageClass)}
		if rs := o.RestoreStatus; rs != nil && !aws.ToBool(rs.IsRestoreInProgress) && rs.RestoreExpiryDate != nil {
			obj.Restored = true
		}
		p.objects = append(p.objects, obj)
	}
	for _, cp := range out.CommonPrefixes {
		f, err := decode(aws.ToString(cp.Prefix))
		if err != nil {
			return nil, err
		}
		p.folders = append(p.folders, f)
	}
	return p, nil
}

// addPage files a page's keys under r: those past r's end belong to the next range (it
// lists them itself) and end r. Called with l.mu held.
func (l *listing) addPage(r *keyRange, p *listPage) {
	keys := p.objects
	for i, o := range keys {
		if r.bounded && o.Key > r.hi {
			l.adopt(r, keys[i:])
			keys, r.done = keys[:i], true
			break
		}
	}
	l.file(r, keys)
	if !p.truncated {
		r.done = true
	}
}

// adopt hands keys past r's end to the ranges after r that have not started listing: they
// are those ranges' first keys, and a page that runs past a cut (a folder range's page runs
// into the next folder) would otherwise be listed twice. A range that has started, or has
// a request in flight, lists its keys itself. Called with l.mu held.
func (l *listing) adopt(r *keyRange, rest []listedObject) {
	at := slices.Index(l.ranges, r)
	for _, nr := range l.ranges[at+1:] {
		if len(rest) == 0 || nr.busy || nr.done || nr.listed > 0 || nr.after != nr.lo {
			return
		}
		n := len(rest)
		if nr.bounded {
			n, _ = slices.BinarySearchFunc(rest, nr.hi, func(o listedObject, hi string) int { return strings.Compare(o.Key, hi+"\x00") })
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
func (l *listing) file(r *keyRange, keys []listedObject) {
	if len(keys) > 0 {
		if keys[0].Key <= r.after {
			l.err = fmt.Errorf("s3io: the listing of s3://%s/%s is not in key order (%q after %q); s3io plans from sorted listings, as S3's general-purpose buckets give (directory buckets are not supported)", l.bucket, l.prefix, keys[0].Key, r.after)
			return
		}
		for i := 1; i < len(keys); i++ {
			if keys[i].Key <= keys[i-1].Key {
				l.err = fmt.Errorf("s3io: the listing of s3://%s/%s is not in key order (%q after %q); s3io plans from sorted listings, as S3's general-purpose buckets give (directory buckets are not supported)", l.bucket, l.prefix, keys[i].Key, keys[i-1].Key)
				return
			}
		}
		if r.listed == 0 {
			r.first = keys[0].Key
		}
		r.after = keys[len(keys)-1].Key
		r.listed += int64(len(keys))
		l.stats.keys += int64(len(keys))
		r.pages = append(r.pages, keys)
		l.buffered++
		if l.parallelism > 1 {
			for _, o := range keys {
				l.alphabet.add(o.Key[len(l.prefix):])
			}
		}
	}
}

// split cuts the remainder of the earliest range worth cutting into pieces for idle
// workers, or starts a delimiter probe to find where to cut it. Called with l.mu held.
func (l *listing) split() (task, bool) {
	idle := l.parallelism - l.inFlight
	if idle <= 0 {
		return task{}, false
	}
	held := 0
	for i, r := range l.ranges {
		held += len(r.pages)
		if i > 0 && !l.admit(i, held) {
			break
		}
		if r.done || r.probing {
			continue
		}
		est, ok := l.remaining(r)
		if !ok {
			continue
		}
		if !r.flat {
			return l.probe(r), true
		}
		pieces := min(idle+1, max(2, int(est/l.page())))
		if l.cutRange(i, pieces) {
			return l.runnable()
		}
	}
	return task{}, false
}

// remaining estimates the keys left in r, and reports whether r is worth splitting. A range
// is not split before its first page says there is more than a page to list, so a small
// prefix costs one request, not a round of probes. After that an open range always is worth
// it (its end is unknown), a bounded one when its density so far says more than two pages
// are left.
func (l *listing) remaining(r *keyRange) (float64, bool) {
	if r.listed == 0 {
		return 0, false
	}
	if !r.bounded {
		return float64(l.parallelism) * l.page(), true
	}
	base := commonPrefix(r.first, r.hi)
	done := l.alphabet.value(r.after, base) - l.alphabet.value(r.first, base)
	left := l.alphabet.value(r.hi, base) - l.alphabet.value(r.after, base)
	if done <= 0 {
		return 2 * l.page(), left > 0
	}
	est := float64(r.listed) * left / done
	return est, est > 2*l.page()
}

// probe returns a delimiter listing of the folder r's remainder lies in: its folders are
// the best places to cut, and one request finds up to a page of them.
func (l *listing) probe(r *keyRange) task {
	in := l.input()
	folder := l.prefix
	if r.only != "" {
		folder = r.only
	} else if r.bounded {
		c := commonPrefix(r.after, r.hi)
		if i := strings.LastIndexByte(c, '/'); i >= len(l.prefix) {
			folder = c[:i+1]
		}
	}
	in.Prefix = aws.String(folder)
	in.Delimiter = aws.String("/")
	if r.after != "" {
		in.StartAfter = aws.String(r.after)
	}
	return task{r: r, probe: true, in: in}
}

// splitAtFolders cuts r at the folders a probe found past the point r has listed to. A
// folder f starts a range at f less its trailing "/": keys after that include every key
// under f (and any that sort between, such as "f.txt", which belong to the same range
// whichever it is). Called with l.mu held.
func (l *listing) splitAtFolders(r *keyRange, p *listPage) {
	for _, o := range p.objects {
		l.alphabet.add(strings.TrimPrefix(o.Key, l.prefix))
	}
	if r.done {
		// Its pages came back while the probe was out (and the consumer may have dropped
		// it): nothing is left to cut, whatever a prefix that changed meanwhile shows.
		return
	}
	var cuts []string
	var from []int // the folder each cut was made for
	for i, f := range p.folders {
		cut := f[:len(f)-1]
		if cut > r.after && (!r.bounded || cut < r.hi) && (len(cuts) == 0 || cut > cuts[len(cuts)-1]) {
			cuts, from = append(cuts, cut), append(from, i)
		}
	}
	// Folders of a key or two each would cost a request apiece: keep no more cuts than
	// the range's estimated pages, spread evenly over the folders found — unless some of
	// them can be skipped whole, which needs a cut at each.
	prune := l.skipFolder != nil && slices.ContainsFunc(p.folders, l.skipFolder)
	if est, _ := l.remaining(r); len(cuts) > 1 && !prune {
		if keep := max(1, int(est/l.page())); keep < len(cuts) {
			for j := range keep {
				k := j * len(cuts) / keep
				cuts[j], from[j] = cuts[k], from[k]
			}
			cuts, from = cuts[:keep], from[:keep]
		}
	}
	// The range from a folder's cut to the next cut holds only that folder's keys when the
	// next cut is the next folder's, no key lies between them ("f0" sorts after "f/..."),
	// and the folder before does not sort after the cut ("f-x/" sorts between "f" and "f/").
	only := make([]string, len(cuts))
	for j, i := range from {
		only[j] = r.only
		if j+1 < len(cuts) && from[j+1] == i+1 && (i == 0 || p.folders[i-1] < cuts[j]) && !keyBetween(p.objects, cuts[j], p.folders[i+1]) {
			only[j] = p.folders[i]
		}
	}
	if len(cuts) == 0 {
		r.flat = true
		return
	}
	for j, nr := range l.insertCuts(r, cuts, only) {
		if prune && only[j] != "" && l.skipFolder(only[j]) {
			nr.done = true // no key under this folder can be selected: never listed
			l.stats.skippedFolders++
		}
	}
}

// cutRange cuts the remainder of ranges[i] into pieces at points spread evenly over the
// keys' alphabet between where it has listed to and its end. It reports whether it cut.
func (l *listing) cutRange(i, pieces int) bool {
	r := l.ranges[i]
	hi := ""
	if r.bounded {
		hi = r.hi
	}
	cuts := l.alphabet.between(strings.TrimPrefix(r.after, l.prefix), strings.TrimPrefix(hi, l.prefix), r.bounded, pieces)
	if len(cuts) == 0 {
		return false
	}
	only := make([]string, len(cuts))
	for j := range cuts {
		cuts[j] = l.prefix + cuts[j]
		only[j] = r.only
	}
	l.insertCuts(r, cuts, only)
	return true
}

// insertCuts ends r at cuts[0] and adds the ranges (cuts[j], cuts[j+1]], the last ending
// where r ended, each holding only keys under only[j] when that is set. cuts are strictly
// increasing, after r.after and before r's end.
func (l *listing) insertCuts(r *keyRange, cuts, only []string) []*keyRange {
	at := 0
	for at < len(l.ranges) && l.ranges[at] != r {
		at++
	}
	added := make([]*keyRange, len(cuts))
	for j, c := range cuts {
		nr := &keyRange{lo: c, after: c, hi: r.hi, bounded: r.bounded, flat: r.flat, only: only[j]}
		if j+1 < len(cuts) {
			nr.hi, nr.bounded = cuts[j+1], true
		}
		added[j] = nr
	}
	r.hi, r.bounded = cuts[0], true
	rest := append(slices.Clone(added), l.ranges[at+1:]...)
	l.ranges = append(l.ranges[:at+1], rest...)
	return added
}

// keyBetween reports whether a key of the sorted objects lies strictly between a and b.
func keyBetween(objects []listedObject, a, b string) bool {
	i, _ := slices.BinarySearchFunc(objects, a, func(o listedObject, k string) int { return strings.Compare(o.Key, k) })
	for ; i < len(objects); i++ {
		if k := objects[i].Key; k > a {
			return k < b
		}
	}
	return false
}

func commonPrefix(a, b string) string {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return a[:i]
		}
	}
	return a[:n]
}

// alphabet is the set of ASCII characters the listed keys use. Cut points are spread over
// it rather than over all 256 byte values, so that a cut between two keys made of digits
// and letters lands among digits and letters, where keys are, and not in the gap between
// "9" and "A" or past "z". Non-ASCII bytes are left out so that every cut is valid UTF-8,
// as S3 requires of StartAfter; a key that uses them still sorts correctly, it is only cut
// less finely.
type alphabet struct {
	seen  [128]bool
	chars []byte // sorted; rebuilt when seen changes
}

// alphabetDigits is how many characters past a common prefix positions are computed over:
// (95+1)^7 < 2^53, so a position is exact in a float64.
const alphabetDigits = 7

func (a *alphabet) add(s string) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 128 && !a.seen[c] {
			a.seen[c] = true
			a.chars = a.chars[:0]
		}
	}
}

func (a *alphabet) sorted() []byte {
	if len(a.chars) == 0 {
		for c := range a.seen {
			if a.seen[c] {
				a.chars = append(a.chars, byte(c))
			}
		}
	}
	return a.chars
}

// value maps s, which starts with base, to [0, 1) so that the order of values is the order
// of strings (to alphabetDigits characters past base): the characters are digits of a
// number in base len(alphabet)+1, where 0 stands for "the string has ended".
func (a *alphabet) value(s, base string) float64 {
	chars := a.sorted()
	radix := float64(len(chars) + 1)
	s = s[min(len(base), len(s)):]
	v, scale := 0.0, 1.0
	for i := 0; i < alphabetDigits && i < len(s); i++ {
		scale /= radix
		v += a.digit(chars, s[i]) * scale
	}
	return v
}

// digit is c's place among chars, counting from 1; a character that is not among them
// falls half-way between its neighbours.
func (a *alphabet) digit(chars []byte, c byte) float64 {
	lo, hi := 0, len(chars)
	for lo < hi {
		m := (lo + hi) / 2
		if chars[m] < c {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < len(chars) && chars[lo] == c {
		return float64(lo + 1)
	}
	return float64(lo) + 0.5
}

// between returns up to pieces-1 strictly increasing cut points strictly after from and,
// when bounded, strictly before to, spread evenly over the alphabet's positions.
func (a *alphabet) between(from, to string, bounded bool, pieces int) []string {
	chars := a.sorted()
	if len(chars) == 0 || pieces < 2 {
		return nil
	}
	base := ""
	if bounded {
		base = commonPrefix(from, to)
	}
	lo, hi := a.value(from, base), 1.0
	if bounded {
		hi = a.value(to, base)
	}
	radix := float64(len(chars) + 1)
	var cuts []string
	buf := []byte(base)
	for j := 1; j < pieces; j++ {
		v := lo + (hi-lo)*float64(j)/float64(pieces)
		b := buf[:len(base)]
		for range alphabetDigits {
			v *= radix
			d := int(v)
			v -= float64(d)
			if d == 0 {
				break
			}
			b = append(b, chars[min(d, len(chars))-1])
		}
		cut := string(b)
		if cut > from && (!bounded || cut < to) && (len(cuts) == 0 || cut > cuts[len(cuts)-1]) {
			cuts = append(cuts, cut)
		}
	}
	return cuts
}
