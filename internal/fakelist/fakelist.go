// Package fakelist is an in-process S3 server that answers ListObjectsV2 over a synthetic,
// sorted key set of any size, computed from the key's index instead of stored.
//
// It exists to measure the planner on 1,000,000 keys with a real per-request latency
// without storing a million objects: versitygw's POSIX backend would need a million files,
// and gofakes3 keeps every object in memory and sorts on every listing. Here a key is
// Options.Key(i); a page is found by binary search over i and written by hand, so the
// server's own CPU (which shares the machine's cores with the planner being measured)
// stays small. Listing semantics follow S3: Prefix, StartAfter, ContinuationToken,
// MaxKeys, Delimiter with CommonPrefixes, EncodingType=url. Objects have no bodies: GET and
// HEAD of a listed key answer 501 NotImplemented, of any other key 404 NoSuchKey. Requests
// are not authenticated. Standard library only.
package fakelist

import (
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Options describes the synthetic bucket. N, Key and Bucket are required.
type Options struct {
	Bucket string
	// N is the number of keys: Key(0) ... Key(N-1).
	N int
	// Key returns the i-th key. It must be strictly increasing in byte order (the server
	// binary-searches it) and valid UTF-8, as every S3 key is.
	Key func(i int) string
	// Size, ETag, LastModified and StorageClass describe key i. Defaults: sizes between 64
	// KiB and 192 KiB, a quoted 32-hex-digit ETag derived from i and Generation, one second
	// apart from 2024-01-01, and STANDARD.
	Size         func(i int) int64
	ETag         func(i int) string
	LastModified func(i int) time.Time
	StorageClass func(i int) string
	// Generation changes every default ETag, as if every object had been rewritten.
	Generation int
	// Latency is slept before answering each request, concurrently for concurrent
	// requests: S3 takes about 30 ms or more per LIST page.
	Latency time.Duration
	// MaxKeysCap is the most entries a page holds, and the default MaxKeys (S3: 1000).
	MaxKeysCap int
	// LogLimit keeps the first LogLimit list requests in Stats.Log (0: none).
	LogLimit int
}

// Request is one list request, as Stats.Log records it.
type Request struct {
	Prefix, StartAfter, Delimiter string
	Continued                     bool // it carried a continuation token
	MaxKeys                       int  // the effective MaxKeys
	Entries                       int  // keys and common prefixes returned
	Truncated                     bool
}

// Stats counts what the server answered since it started or ResetStats.
type Stats struct {
	Requests    int64 // every request
	Lists       int64 // ListObjectsV2 requests answered with a page
	Delimited   int64 // lists with a delimiter
	Undelimited int64 // lists without one
	Probes      int64 // lists with MaxKeys below the cap (either kind)
	Entries     int64 // keys and common prefixes returned by all lists
	Other       int64 // requests that were not ListObjectsV2 (HEAD bucket, GETs, errors)
	MaxInFlight int64 // most requests being answered at once, latency included
	Log         []Request
}

// Server is a running fake. Close it when done.
type Server struct {
	URL string

	opts Options
	hs   *httptest.Server

	requests, lists, delimited, undelimited, probes, entries, other atomic.Int64
	inFlight, maxInFlight                                           atomic.Int64

	mu  sync.Mutex
	log []Request
}

// New starts a server for opts on a loopback port. Clients address it path-style.
func New(opts Options) *Server {
	if opts.MaxKeysCap <= 0 {
		opts.MaxKeysCap = 1000
	}
	if opts.Key == nil || opts.Bucket == "" {
		panic("fakelist: Options.Key and Options.Bucket are required")
	}
	s := &Server{opts: opts}
	s.hs = httptest.NewServer(s)
	s.URL = s.hs.URL
	return s
}

// Close stops the server.
func (s *Server) Close() { s.hs.Close() }

// Stats returns the counts so far.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	log := append([]Request(nil), s.log...)
	s.mu.Unlock()
	return Stats{
		Requests: s.requests.Load(), Lists: s.lists.Load(), Delimited: s.delimited.Load(),
		Undelimited: s.undelimited.Load(), Probes: s.probes.Load(), Entries: s.entries.Load(),
		Other: s.other.Load(), MaxInFlight: s.maxInFlight.Load(), Log: log,
	}
}

// ResetStats zeroes the counts, between measured runs. Requests in flight keep counting.
func (s *Server) ResetStats() {
	for _, c := range []*atomic.Int64{&s.requests, &s.lists, &s.delimited, &s.undelimited, &s.probes, &s.entries, &s.other} {
		c.Store(0)
	}
	s.maxInFlight.Store(s.inFlight.Load())
	s.mu.Lock()
	s.log = nil
	s.mu.Unlock()
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.requests.Add(1)
	n := s.inFlight.Add(1)
	defer s.inFlight.Add(-1)
	for m := s.maxInFlight.Load(); n > m && !s.maxInFlight.CompareAndSwap(m, n); m = s.maxInFlight.Load() {
	}
	if d := s.opts.Latency; d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return
		}
	}
	bucket, key, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		s.fail(w, r, http.StatusBadRequest, "InvalidArgument", "The query string is malformed.", bucket, key)
		return
	}
	switch {
	case bucket == "":
		s.fail(w, r, http.StatusNotImplemented, "NotImplemented", "fakelist answers ListObjectsV2 on one bucket only.", "", "")
	case bucket != s.opts.Bucket:
		s.fail(w, r, http.StatusNotFound, "NoSuchBucket", "The specified bucket does not exist", bucket, "")
	case key == "" && r.Method == http.MethodGet && q.Get("list-type") == "2":
		s.list(w, r, q)
	case key == "" && r.Method == http.MethodHead:
		s.other.Add(1)
		w.Header().Set("x-amz-bucket-region", "us-east-1")
		w.WriteHeader(http.StatusOK)
	case key != "" && (r.Method == http.MethodGet || r.Method == http.MethodHead) && s.exists(key):
		s.fail(w, r, http.StatusNotImplemented, "NotImplemented", "fakelist synthesizes listings only; its objects have no bodies.", bucket, key)
	case key != "" && (r.Method == http.MethodGet || r.Method == http.MethodHead):
		s.fail(w, r, http.StatusNotFound, "NoSuchKey", "The specified key does not exist.", bucket, key)
	default:
		s.fail(w, r, http.StatusNotImplemented, "NotImplemented", "fakelist answers ListObjectsV2 (list-type=2) only.", bucket, key)
	}
}

// exists reports whether key is one of the synthetic keys.
func (s *Server) exists(key string) bool {
	i := sort.Search(s.opts.N, func(i int) bool { return s.opts.Key(i) >= key })
	return i < s.opts.N && s.opts.Key(i) == key
}

// fail writes an S3 error document (no body for HEAD, as S3 does).
func (s *Server) fail(w http.ResponseWriter, r *http.Request, status int, code, msg, bucket, key string) {
	s.other.Add(1)
	id := strconv.FormatInt(s.requests.Load(), 16)
	h := w.Header()
	h.Set("x-amz-request-id", id)
	h.Set("x-amz-id-2", id)
	if r.Method == http.MethodHead {
		w.WriteHeader(status)
		return
	}
	b := append(make([]byte, 0, 512), xmlHeader...)
	b = append(b, "<Error><Code>"...)
	b = append(b, code...)
	b = append(b, "</Code><Message>"...)
	b = appendEscaped(b, msg)
	b = append(b, "</Message>"...)
	if bucket != "" {
		b = element(b, "BucketName", bucket, false)
	}
	if key != "" {
		b = element(b, "Key", key, false)
	}
	b = element(b, "Resource", r.URL.Path, false)
	b = append(b, "<RequestId>"...)
	b = append(b, id...)
	b = append(b, "</RequestId><HostId>"...)
	b = append(b, id...)
	b = append(b, "</HostId></Error>"...)
	h.Set("Content-Type", "application/xml")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	w.Write(b)
}

const xmlHeader = `<?xml version="1.0" encoding="UTF-8"?>` + "\n"

// tokenMagic starts every continuation token, so that a token from elsewhere is refused.
const tokenMagic = "fakelist1:"

var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 256<<10); return &b }}

// list answers one ListObjectsV2 request.
//
// S3 lists entries (keys, and common prefixes when there is a delimiter) in byte order, and
// returns those strictly greater than the start point: the continuation token's, else
// StartAfter. A common prefix is one entry, so a start point inside it (or equal to it)
// skips all of its keys: that is how a page that ended on a common prefix continues past
// it, the token being the last entry returned.
func (s *Server) list(w http.ResponseWriter, r *http.Request, q url.Values) {
	prefix, delim, startAfter := q.Get("prefix"), q.Get("delimiter"), q.Get("start-after")
	token, continued := q.Get("continuation-token"), q.Has("continuation-token")
	encode := false
	switch et := q.Get("encoding-type"); et {
	case "":
	case "url":
		encode = true
	default:
		s.fail(w, r, http.StatusBadRequest, "InvalidArgument", "Invalid Encoding Method specified in Request", s.opts.Bucket, "")
		return
	}
	maxKeys := s.opts.MaxKeysCap
	if v := q.Get("max-keys"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			s.fail(w, r, http.StatusBadRequest, "InvalidArgument", "Provided max-keys not an integer or within integer range", s.opts.Bucket, "")
			return
		}
		maxKeys = min(n, s.opts.MaxKeysCap)
	}
	marker := startAfter
	if continued {
		raw, err := base64.StdEncoding.DecodeString(token)
		if err != nil || !strings.HasPrefix(string(raw), tokenMagic) {
			s.fail(w, r, http.StatusBadRequest, "InvalidArgument", "The continuation token provided is incorrect", s.opts.Bucket, "")
			return
		}
		marker = string(raw[len(tokenMagic):])
	}

	key := s.opts.Key
	n := s.opts.N
	// [i, end) are the keys under prefix after marker.
	i := sort.Search(n, func(i int) bool { return key(i) > marker })
	if prefix > marker {
		i = sort.Search(n, func(i int) bool { return key(i) >= prefix })
	}
	end := n
	if prefix != "" {
		end = i + sort.Search(n-i, func(j int) bool { k := key(i + j); return !strings.HasPrefix(k, prefix) })
	}

	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	b := (*bp)[:0]
	b = append(b, xmlHeader...)
	b = append(b, `<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">`...)
	b = element(b, "Name", s.opts.Bucket, false)
	b = element(b, "Prefix", prefix, encode)
	if continued {
		b = element(b, "ContinuationToken", token, false)
	}
	// KeyCount, IsTruncated and NextContinuationToken are known only after the entries:
	// they are appended after them and rotated into place here, at head.
	head := len(b)

	var prefixes []string
	var last string
	entries := 0
	for i < end && entries < maxKeys {
		k := key(i)
		if delim != "" {
			if j := strings.Index(k[len(prefix):], delim); j >= 0 {
				cp := k[:len(prefix)+j+len(delim)]
				// Skip the keys of cp by binary search: from i on, keys start with cp
				// up to the first that does not.
				i += sort.Search(end-i, func(j int) bool { return !strings.HasPrefix(key(i+j), cp) })
				if cp <= marker { // the start point is inside cp: S3 skips all of it
					continue
				}
				prefixes = append(prefixes, cp)
				last = cp
				entries++
				continue
			}
		}
		b = s.appendContents(b, i, k, encode)
		last = k
		entries++
		i++
	}
	for _, cp := range prefixes {
		b = append(b, "<CommonPrefixes>"...)
		b = element(b, "Prefix", cp, encode)
		b = append(b, "</CommonPrefixes>"...)
	}
	b = append(b, "</ListBucketResult>"...)
	// Every key left under prefix is (or starts) another entry. MaxKeys=0 answers an empty,
	// untruncated page, as S3 does.
	truncated := maxKeys > 0 && i < end

	var meta []byte
	if truncated {
		meta = element(meta, "NextContinuationToken", base64.StdEncoding.EncodeToString([]byte(tokenMagic+last)), false)
	}
	meta = append(meta, "<KeyCount>"...)
	meta = strconv.AppendInt(meta, int64(entries), 10)
	meta = append(meta, "</KeyCount><MaxKeys>"...)
	meta = strconv.AppendInt(meta, int64(maxKeys), 10)
	meta = append(meta, "</MaxKeys>"...)
	if delim != "" {
		meta = element(meta, "Delimiter", delim, encode)
	}
	if encode {
		meta = append(meta, "<EncodingType>url</EncodingType>"...)
	}
	meta = append(meta, "<IsTruncated>"...)
	meta = strconv.AppendBool(meta, truncated)
	meta = append(meta, "</IsTruncated>"...)
	if startAfter != "" {
		meta = element(meta, "StartAfter", startAfter, encode)
	}
	b = append(b, meta...)
	copy(b[head+len(meta):], b[head:len(b)-len(meta)])
	copy(b[head:], meta)
	*bp = b

	s.lists.Add(1)
	if delim != "" {
		s.delimited.Add(1)
	} else {
		s.undelimited.Add(1)
	}
	if maxKeys < s.opts.MaxKeysCap {
		s.probes.Add(1)
	}
	s.entries.Add(int64(entries))
	if s.opts.LogLimit > 0 {
		s.mu.Lock()
		if len(s.log) < s.opts.LogLimit {
			s.log = append(s.log, Request{Prefix: prefix, StartAfter: startAfter, Delimiter: delim, Continued: continued, MaxKeys: maxKeys, Entries: entries, Truncated: truncated})
		}
		s.mu.Unlock()
	}

	h := w.Header()
	h.Set("Content-Type", "application/xml")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	h.Set("x-amz-request-id", strconv.FormatInt(s.requests.Load(), 16))
	w.WriteHeader(http.StatusOK)
	w.Write(b)
}

// appendContents writes the <Contents> element of key i.
func (s *Server) appendContents(b []byte, i int, k string, encode bool) []byte {
	o := &s.opts
	b = append(b, "<Contents>"...)
	b = element(b, "Key", k, encode)
	b = append(b, "<LastModified>"...)
	if o.LastModified != nil {
		b = appendTime(b, o.LastModified(i))
	} else {
		b = appendTime(b, defaultModified.Add(time.Duration(i)*time.Second))
	}
	b = append(b, "</LastModified>"...)
	if o.ETag != nil {
		b = element(b, "ETag", o.ETag(i), false)
	} else {
		b = append(b, "<ETag>&quot;"...)
		b = appendHex(b, mix(uint64(i)^uint64(o.Generation)<<40), 16)
		b = appendHex(b, mix(uint64(i)+uint64(o.Generation)*0x9e3779b97f4a7c15+1), 16)
		b = append(b, "&quot;</ETag>"...)
	}
	b = append(b, "<Size>"...)
	if o.Size != nil {
		b = strconv.AppendInt(b, o.Size(i), 10)
	} else {
		b = strconv.AppendInt(b, DefaultSize(i), 10)
	}
	b = append(b, "</Size>"...)
	if o.StorageClass != nil {
		b = element(b, "StorageClass", o.StorageClass(i), false)
	} else {
		b = append(b, "<StorageClass>STANDARD</StorageClass>"...)
	}
	return append(b, "</Contents>"...)
}

var defaultModified = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// appendTime writes t as S3 does, 2024-01-01T00:00:00.000Z: a third of the cost of
// time.AppendFormat, which was the largest part of a page.
func appendTime(b []byte, t time.Time) []byte {
	t = t.UTC()
	y, mo, d := t.Date()
	h, mi, s := t.Clock()
	b = appendPadded(b, y, 4)
	b = append(b, '-')
	b = appendPadded(b, int(mo), 2)
	b = append(b, '-')
	b = appendPadded(b, d, 2)
	b = append(b, 'T')
	b = appendPadded(b, h, 2)
	b = append(b, ':')
	b = appendPadded(b, mi, 2)
	b = append(b, ':')
	b = appendPadded(b, s, 2)
	b = append(b, '.')
	b = appendPadded(b, t.Nanosecond()/1e6, 3)
	return append(b, 'Z')
}

// DefaultSize is the size of key i when Options.Size is nil: 64 KiB to 192 KiB.
func DefaultSize(i int) int64 { return 64<<10 + int64(mix(uint64(i))%(128<<10)) }

// element writes <name>v</name>, v percent-encoded when encode, else XML-escaped.
func element(b []byte, name, v string, encode bool) []byte {
	b = append(b, '<')
	b = append(b, name...)
	b = append(b, '>')
	if encode {
		b = appendURLEncoded(b, v)
	} else {
		b = appendEscaped(b, v)
	}
	b = append(b, "</"...)
	b = append(b, name...)
	return append(b, '>')
}

// appendEscaped XML-escapes s as S3 does: the five predefined entities, and a character
// reference for every byte below 0x20. XML 1.0 forbids most of those even as references, so
// a key holding one breaks XML parsers (Go's included) unless the client asks for
// encoding-type=url, exactly as with S3; tab, newline and carriage return are escaped too,
// so that XML's end-of-line normalization cannot change them.
func appendEscaped(b []byte, s string) []byte {
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		var esc string
		switch c {
		case '&':
			esc = "&amp;"
		case '<':
			esc = "&lt;"
		case '>':
			esc = "&gt;"
		case '"':
			esc = "&quot;"
		case '\'':
			esc = "&apos;"
		default:
			if c >= 0x20 {
				continue
			}
		}
		b = append(b, s[start:i]...)
		if esc != "" {
			b = append(b, esc...)
		} else {
			b = append(b, "&#x"...)
			b = strconv.AppendUint(b, uint64(c), 16)
			b = append(b, ';')
		}
		start = i + 1
	}
	return append(b, s[start:]...)
}

// appendURLEncoded percent-encodes s for encoding-type=url: every byte except the
// unreserved characters of RFC 3986 and '/', so a space is %20 and '+' is %2B (as the
// s3-tests suite expects of S3: "quux ab/" -> "quux%20ab/", "asdf+b" -> "asdf%2Bb").
// url.PathUnescape and url.QueryUnescape both decode it.
func appendURLEncoded(b []byte, s string) []byte {
	const hex = "0123456789ABCDEF"
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~' || c == '/' {
			b = append(b, c)
		} else {
			b = append(b, '%', hex[c>>4], hex[c&15])
		}
	}
	return b
}

// mix is splitmix64's finalizer: a cheap, well-spread hash of an index.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// appendHex writes the low n hex digits of x.
func appendHex(b []byte, x uint64, n int) []byte {
	const hex = "0123456789abcdef"
	for sh := 4 * (n - 1); sh >= 0; sh -= 4 {
		b = append(b, hex[x>>uint(sh)&15])
	}
	return b
}

// FlatKeys is one flat folder of n keys: prefix + "part-0000042-1f2e3d4c.ndjson.gz", the
// number zero-padded to at least 7 digits (more when n needs them, so the keys stay
// strictly increasing) and followed by a hash of it, as writers that add a random suffix
// do.
func FlatKeys(prefix string, n int) func(i int) string {
	w := max(7, digits(n-1))
	return func(i int) string {
		b := make([]byte, 0, len(prefix)+w+25)
		b = append(b, prefix...)
		b = append(b, "part-"...)
		b = appendPadded(b, i, w)
		b = append(b, '-')
		b = appendHex(b, mix(uint64(i)), 8)
		b = append(b, ".ndjson.gz"...)
		return string(b)
	}
}

// FolderedKeys puts n keys in folders of perFolder, as date-partitioned writers do:
// prefix + "dt=2024-042/part-00017.ndjson.gz", both numbers zero-padded (wider when n or
// perFolder need it) so the keys stay strictly increasing.
func FolderedKeys(prefix string, n, perFolder int) func(i int) string {
	perFolder = max(perFolder, 1)
	fw := max(3, digits((n-1)/perFolder))
	pw := max(5, digits(perFolder-1))
	return func(i int) string {
		b := make([]byte, 0, len(prefix)+fw+pw+26)
		b = append(b, prefix...)
		b = append(b, "dt=2024-"...)
		b = appendPadded(b, i/perFolder, fw)
		b = append(b, "/part-"...)
		b = appendPadded(b, i%perFolder, pw)
		b = append(b, ".ndjson.gz"...)
		return string(b)
	}
}

func digits(n int) int {
	d := 1
	for ; n >= 10; n /= 10 {
		d++
	}
	return d
}

// appendPadded writes v >= 0 in decimal, zero-padded to width digits.
func appendPadded(b []byte, v, width int) []byte {
	width = max(width, digits(v))
	n := len(b)
	b = slices.Grow(b, width)[:n+width]
	for j := n + width - 1; j >= n; j-- {
		b[j] = byte('0' + v%10)
		v /= 10
	}
	return b
}
