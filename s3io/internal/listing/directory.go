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

// Lister is what the planner reads a listing through: Run starts it, Next hands the keys
// on in key order a page at a time (nil at the end), Stats says what it cost.
type Lister interface {
	Run(ctx context.Context)
	Next() ([]Object, error)
	Stats() Stats
}

// Open returns the lister of opts.Bucket: a Directory for an S3 Express directory bucket,
// whose listings come in no order, else a Listing.
func Open(opts Options) Lister {
	if IsDirectoryBucket(opts.Bucket) {
		return NewDirectory(opts, DirectoryFolderKeys)
	}
	return New(opts)
}

// IsDirectoryBucket reports whether bucket is named as S3 Express directory buckets
// ("base--zone-id--x-s3") and their access points ("--xa-s3") are: the suffixes by which
// the SDK's endpoint rules send a request to S3 Express, with session authentication.
func IsDirectoryBucket(bucket string) bool {
	return strings.HasSuffix(bucket, "--x-s3") || strings.HasSuffix(bucket, "--xa-s3")
}

// DirectoryFolderKeys is the most keys and subfolders one folder of a directory bucket
// may hold for Open's Directory: a folder is listed whole and sorted before any of its keys
// is handed on, so it is held in memory whole (about 150 bytes a key).
const DirectoryFolderKeys = 1_000_000

// FolderTooLargeError is a Directory's error for a folder with more entries (keys and
// subfolders) than its bound: the folder cannot be put in key order within the memory the
// bound allows.
type FolderTooLargeError struct {
	Bucket, Folder string
	Limit          int
}

func (e *FolderTooLargeError) Error() string {
	return fmt.Sprintf("s3io: s3://%s/%s holds more than %d keys and folders directly: a directory bucket lists a folder in no order, so s3io sorts each folder in memory and plans only folders up to that size; list a deeper prefix, or spread the keys over subfolders", e.Bucket, e.Folder, e.Limit)
}

// Directory lists an S3 Express directory bucket and hands its keys on in key order, as a
// Listing does a general-purpose bucket's, so that the packer cuts the same descriptors
// for the same keys whichever kind of bucket holds them.
//
// A directory bucket lists in no order, pages by continuation token only (no StartAfter),
// and takes only "/" as a delimiter and prefixes that end in "/". So it is listed folder by
// folder: each folder with delimiter "/", page after page, up to Parallelism folders at
// once. A folder is sorted once it is listed whole: its keys, and its subfolders, which
// become folders to list. Key order is then a walk of the tree: within a folder, a key
// comes before a subfolder's keys exactly when it sorts before the subfolder's name ("a/b"
// < "a/b/" < "a/b0"), and folders sort in the order the walk reaches them, so the next
// folder the consumer needs is always the first one not yet reached.
//
// Memory: the folders the consumer is inside are held until it has handed their keys on
// (each at most folderKeys entries, else FolderTooLargeError); folders listed ahead of it
// only while they hold fewer than 8 pages × Parallelism entries in all, as a Listing's
// pages are bounded.
type Directory struct {
	opts       Options
	root       string // the folder the listing starts from: Prefix up to its last "/"
	folderKeys int
	budget     int // entries folders ahead of the consumer may hold

	mu       sync.Mutex
	cond     sync.Cond
	ahead    []*folder // known folders the consumer has not reached, in key order
	aheadN   int       // entries they hold
	path     []*cursor // the folders the consumer is inside, innermost last
	started  bool
	inFlight int
	err      error
	stop     context.CancelFunc
	stats    Stats
}

// folder is one folder of a directory bucket, being listed or listed.
type folder struct {
	name    string
	token   string // where the next page starts
	listing bool   // a page is in flight
	done    bool   // listed whole and sorted
	keys    []Object
	subs    []string // the subfolders to walk, sorted
}

func (f *folder) entries() int { return len(f.keys) + len(f.subs) }

// cursor is where the consumer is in a folder: its next key and next subfolder.
type cursor struct {
	f    *folder
	i, j int
}

// NewDirectory prepares a directory bucket's listing with at most folderKeys entries per
// folder; Run starts it.
func NewDirectory(opts Options, folderKeys int) *Directory {
	opts.Parallelism = max(opts.Parallelism, 1)
	root := opts.Prefix[:strings.LastIndexByte(opts.Prefix, '/')+1]
	d := &Directory{opts: opts, root: root, folderKeys: folderKeys}
	d.budget = opts.Parallelism * bufferPagesPerRequest * d.pageKeys()
	d.cond.L = &d.mu
	d.ahead = []*folder{{name: root}}
	return d
}

// Stats returns what the listing did so far; final once Next has returned the end.
func (d *Directory) Stats() Stats {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.stats
}

// Run lists until every folder is listed or ctx ends; the consumer reads with Next.
func (d *Directory) Run(ctx context.Context) {
	ctx, d.stop = context.WithCancel(ctx)
	for range d.opts.Parallelism {
		go d.work(ctx)
	}
	go func() {
		<-ctx.Done()
		d.fail(ctx.Err())
	}()
}

func (d *Directory) fail(err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.err == nil && (len(d.ahead) > 0 || len(d.path) > 0) {
		d.err = err
	}
	d.cond.Broadcast()
}

// pageKeys is how many keys Next hands on at most at once.
func (d *Directory) pageKeys() int {
	if d.opts.PageKeys > 0 {
		return int(d.opts.PageKeys)
	}
	return s3PageKeys
}

// Next returns the next keys in key order, or nil at the end of the listing.
func (d *Directory) Next() ([]Object, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for {
		if d.err != nil {
			d.stop()
			return nil, d.err
		}
		if len(d.path) == 0 {
			if d.started {
				d.stop()
				for d.inFlight > 0 {
					d.cond.Wait()
				}
				return nil, nil
			}
			if !d.enter() {
				d.cond.Wait()
			}
			continue
		}
		c := d.path[len(d.path)-1]
		// The folder's keys up to its next subfolder: every one sorts before that
		// subfolder's keys.
		end := len(c.f.keys)
		if c.j < len(c.f.subs) {
			sub := c.f.subs[c.j]
			end = c.i + sortedBefore(c.f.keys[c.i:], sub)
		}
		if end > c.i {
			n := min(end-c.i, d.pageKeys())
			page := c.f.keys[c.i : c.i+n : c.i+n]
			c.i += n
			d.stats.Keys += int64(n)
			return page, nil
		}
		if c.j < len(c.f.subs) {
			if !d.enter() {
				d.cond.Wait()
			}
			continue
		}
		d.path[len(d.path)-1] = nil
		d.path = d.path[:len(d.path)-1]
	}
}

// sortedBefore returns how many of the sorted keys sort before s.
func sortedBefore(keys []Object, s string) int {
	n, _ := slices.BinarySearchFunc(keys, s, func(o Object, s string) int { return strings.Compare(o.Key, s) })
	return n
}

// enter moves the consumer into the next folder, the first one ahead, once it is listed;
// it reports whether it did. Called with d.mu held.
func (d *Directory) enter() bool {
	if len(d.ahead) == 0 {
		d.err = fmt.Errorf("s3io: listing s3://%s/%s: the walk ran out of folders before its end", d.opts.Bucket, d.opts.Prefix)
		return true
	}
	f := d.ahead[0]
	if !f.done {
		return false
	}
	if len(d.path) > 0 {
		c := d.path[len(d.path)-1]
		if c.f.subs[c.j] != f.name {
			d.err = fmt.Errorf("s3io: listing s3://%s/%s: the walk reached %q where it expected %q", d.opts.Bucket, d.opts.Prefix, f.name, c.f.subs[c.j])
			return true
		}
		c.j++
	}
	d.started = true
	d.ahead[0] = nil
	d.ahead = d.ahead[1:]
	d.aheadN -= f.entries()
	d.path = append(d.path, &cursor{f: f})
	d.cond.Broadcast()
	return true
}

func (d *Directory) work(ctx context.Context) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for {
		if d.err != nil || d.started && len(d.path) == 0 {
			return
		}
		f, idle := d.nextFolder()
		if f == nil {
			if idle {
				return // every folder is listed: no new one can appear
			}
			d.cond.Wait()
			continue
		}
		f.listing = true
		d.inFlight++
		in := d.input(f)
		d.mu.Unlock()
		p, err := d.send(ctx, f, &in)
		d.mu.Lock()
		d.inFlight--
		f.listing = false
		if err == nil {
			d.stats.Requests++
			err = d.addPage(f, p)
		}
		if err != nil {
			if d.err == nil {
				d.err = err
			}
			d.cond.Broadcast()
			return
		}
		d.cond.Broadcast()
	}
}

// nextFolder returns the first folder ahead that may list its next page: the consumer's
// next folder always may, any other while the folders ahead hold less than the budget. It
// reports idle when no folder is left to list. Called with d.mu held.
func (d *Directory) nextFolder() (f *folder, idle bool) {
	idle = true
	for i, f := range d.ahead {
		if f.done {
			continue
		}
		idle = false
		if f.listing {
			continue
		}
		if i > 0 && d.aheadN >= d.budget {
			break
		}
		return f, false
	}
	return nil, idle
}

func (d *Directory) input(f *folder) s3.ListObjectsV2Input {
	// No StartAfter and no OptionalObjectAttributes: directory buckets refuse both.
	in := s3.ListObjectsV2Input{Bucket: aws.String(d.opts.Bucket), Delimiter: aws.String("/"), EncodingType: types.EncodingTypeUrl}
	if f.name != "" {
		in.Prefix = aws.String(f.name)
	}
	if f.token != "" {
		in.ContinuationToken = aws.String(f.token)
	}
	if d.opts.PageKeys > 0 {
		in.MaxKeys = aws.Int32(d.opts.PageKeys)
	}
	return in
}

func (d *Directory) send(ctx context.Context, f *folder, in *s3.ListObjectsV2Input) (*Page, error) {
	p, err := fetchPage(ctx, d.opts.Client, in, d.opts.Warnf)
	if err != nil {
		return nil, &Error{Bucket: d.opts.Bucket, Prefix: f.name, Err: err}
	}
	if err := p.unescape(d.opts.Bucket); err != nil {
		return nil, err
	}
	return p, nil
}

// addPage files a page of f's listing, keeping the keys and subfolders the listing
// selects, and sorts f once its last page is in. Called with d.mu held.
func (d *Directory) addPage(f *folder, p *Page) error {
	had := f.entries()
	for _, o := range p.Objects {
		rest, ok := strings.CutPrefix(o.Key, f.name)
		if !ok || strings.Contains(rest, "/") {
			return d.unexpected(f, "key", o.Key)
		}
		if d.keep(o.Key) {
			f.keys = append(f.keys, o)
		}
	}
	for _, s := range p.Folders {
		rest, ok := strings.CutPrefix(s, f.name)
		if !ok || rest == "" || strings.IndexByte(rest, '/') != len(rest)-1 {
			return d.unexpected(f, "folder", s)
		}
		if !d.walks(s) {
			continue
		}
		if d.opts.SkipFolder != nil && d.opts.SkipFolder(s) {
			d.stats.SkippedFolders++
			continue
		}
		f.subs = append(f.subs, s)
	}
	d.aheadN += f.entries() - had
	if f.entries() > d.folderKeys {
		return &FolderTooLargeError{Bucket: d.opts.Bucket, Folder: f.name, Limit: d.folderKeys}
	}
	if p.Truncated && p.NextContinuationToken == "" {
		return &Error{Bucket: d.opts.Bucket, Prefix: f.name, Err: fmt.Errorf("a truncated page without a continuation token")}
	}
	f.token = p.NextContinuationToken
	if p.Truncated {
		return nil
	}
	slices.SortFunc(f.keys, func(a, b Object) int { return strings.Compare(a.Key, b.Key) })
	slices.Sort(f.subs)
	for i := 1; i < len(f.keys); i++ {
		if f.keys[i].Key == f.keys[i-1].Key {
			return d.unexpected(f, "key listed twice", f.keys[i].Key)
		}
	}
	for i := 1; i < len(f.subs); i++ {
		if f.subs[i] == f.subs[i-1] {
			return d.unexpected(f, "folder listed twice", f.subs[i])
		}
	}
	f.done, f.token = true, ""
	// The subfolders sort after f and before every folder ahead that is not under f.
	at := slices.Index(d.ahead, f) + 1
	subs := make([]*folder, len(f.subs))
	for i, s := range f.subs {
		subs[i] = &folder{name: s}
	}
	d.ahead = slices.Insert(d.ahead, at, subs...)
	return nil
}

// keep reports whether the listing hands key on: under Prefix and after StartAfter.
func (d *Directory) keep(key string) bool {
	return strings.HasPrefix(key, d.opts.Prefix) && key > d.opts.StartAfter
}

// walks reports whether a subfolder may hold a key the listing hands on: it lies under
// Prefix (or Prefix lies in it), and not all of its keys sort before StartAfter.
func (d *Directory) walks(sub string) bool {
	if !strings.HasPrefix(sub, d.opts.Prefix) && !strings.HasPrefix(d.opts.Prefix, sub) {
		return false
	}
	return sub > d.opts.StartAfter || strings.HasPrefix(d.opts.StartAfter, sub)
}

func (d *Directory) unexpected(f *folder, what, name string) error {
	return fmt.Errorf("s3io: the listing of folder s3://%s/%s with delimiter \"/\" returned a %s it should not have: %q", d.opts.Bucket, f.name, what, name)
}
