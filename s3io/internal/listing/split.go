package listing

import (
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// split cuts the remainder of the earliest range worth cutting into pieces for idle
// workers, or starts a delimiter probe to find where to cut it. Called with l.mu held.
func (l *Listing) split() (task, bool) {
	idle := l.opts.Parallelism - l.inFlight
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
func (l *Listing) remaining(r *keyRange) (float64, bool) {
	if r.listed == 0 {
		return 0, false
	}
	if !r.bounded {
		return float64(l.opts.Parallelism) * l.page(), true
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
func (l *Listing) probe(r *keyRange) task {
	in := l.input()
	folder := l.opts.Prefix
	if r.only != "" {
		folder = r.only
	} else if r.bounded {
		c := commonPrefix(r.after, r.hi)
		if i := strings.LastIndexByte(c, '/'); i >= len(l.opts.Prefix) {
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
func (l *Listing) splitAtFolders(r *keyRange, p *Page) {
	for _, o := range p.Objects {
		l.alphabet.add(strings.TrimPrefix(o.Key, l.opts.Prefix))
	}
	if r.done {
		// Its pages came back while the probe was out (and the consumer may have dropped
		// it): nothing is left to cut, whatever a prefix that changed meanwhile shows.
		return
	}
	var cuts []string
	var from []int // the folder each cut was made for
	for i, f := range p.Folders {
		cut := f[:len(f)-1]
		if cut > r.after && (!r.bounded || cut < r.hi) && (len(cuts) == 0 || cut > cuts[len(cuts)-1]) {
			cuts, from = append(cuts, cut), append(from, i)
		}
	}
	// Folders of a key or two each would cost a request apiece: keep no more cuts than
	// the range's estimated pages, spread evenly over the folders found — unless some of
	// them can be skipped whole, which needs a cut at each.
	prune := l.opts.SkipFolder != nil && slices.ContainsFunc(p.Folders, l.opts.SkipFolder)
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
		if j+1 < len(cuts) && from[j+1] == i+1 && (i == 0 || p.Folders[i-1] < cuts[j]) && !keyBetween(p.Objects, cuts[j], p.Folders[i+1]) {
			only[j] = p.Folders[i]
		}
	}
	if len(cuts) == 0 {
		r.flat = true
		return
	}
	for j, nr := range l.insertCuts(r, cuts, only) {
		if prune && only[j] != "" && l.opts.SkipFolder(only[j]) {
			nr.done = true // no key under this folder can be selected: never listed
			l.stats.SkippedFolders++
		}
	}
}

// cutRange cuts the remainder of ranges[i] into pieces at points spread evenly over the
// keys' alphabet between where it has listed to and its end. It reports whether it cut.
func (l *Listing) cutRange(i, pieces int) bool {
	r := l.ranges[i]
	hi := ""
	if r.bounded {
		hi = r.hi
	}
	cuts := l.alphabet.between(strings.TrimPrefix(r.after, l.opts.Prefix), strings.TrimPrefix(hi, l.opts.Prefix), r.bounded, pieces)
	if len(cuts) == 0 {
		return false
	}
	only := make([]string, len(cuts))
	for j := range cuts {
		cuts[j] = l.opts.Prefix + cuts[j]
		only[j] = r.only
	}
	l.insertCuts(r, cuts, only)
	return true
}

// insertCuts ends r at cuts[0] and adds the ranges (cuts[j], cuts[j+1]], the last ending
// where r ended, each holding only keys under only[j] when that is set. cuts are strictly
// increasing, after r.after and before r's end.
func (l *Listing) insertCuts(r *keyRange, cuts, only []string) []*keyRange {
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
