// Package faultproxy is a fault-injecting reverse proxy for tests, placed between an S3 reader
// and a real S3 server: it answers chosen object GETs with errors, delays them, breaks or
// stalls their bodies, runs hooks before them, logs each with its Range, body bytes and the
// faults that took effect, and tracks how many were in flight at once. It can act as a server
// that ignores If-Match or Range (Proxy.IgnoreIfMatch, IgnoreRange). It also logs
// ListObjectsV2 requests and can rewrite their answers where the server cannot give what S3
// gives (listing.go), and present a bucket that changes from one listing to the next without
// waiting for the reader (States). It keeps the Host header, which SigV4 signs. Chaos builds a
// seeded random decider whose faults are all transient: bounded per key and per Range, so that
// a reader with enough attempts recovers.
package faultproxy

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// Fault is what a test server does to one object GET: the one vocabulary of faults of this
// module's tests, used by this proxy (Decide, DecideGet, Chaos) and by the in-process S3 of
// internal/s3test (Server.SetFault). The zero Fault serves the GET untouched.
type Fault struct {
	Status int    // answer with this HTTP status and S3 error Code instead of serving the body
	Code   string //
	// ResetAfter > 0 serves the body, then breaks the connection after this many bytes.
	ResetAfter int64
	// StallAfter and Stall pause the body for Stall after StallAfter bytes.
	StallAfter int64
	Stall      time.Duration
	// Delay > 0 holds the GET this long before it is answered: a latency spike.
	Delay time.Duration
	// ResetAt and StallAt, in (0, 1), place the reset or the stall at that fraction of the
	// body (its Content-Length), for deciders that do not know a response's size.
	// A reset lands at least one byte in and one byte short of the end; a body too short for
	// that is not broken. They override ResetAfter and StallAfter.
	ResetAt, StallAt float64
	// Flip inverts the low bit of the body's byte at FlipAt (counted from the body's
	// first byte): a body corrupted in transit, with its length and headers intact.
	Flip   bool
	FlipAt int64
}

// Sized returns f with ResetAt and StallAt turned into ResetAfter and StallAfter for a
// body of size bytes (-1 when its size is unknown).
func (f Fault) Sized(size int64) Fault {
	if f.ResetAt > 0 && f.ResetAt < 1 {
		f.ResetAfter = 0
		if size >= 2 {
			f.ResetAfter = min(max(int64(f.ResetAt*float64(size)), 1), size-1)
		}
	}
	if f.StallAt > 0 && f.StallAt < 1 {
		f.StallAfter = 0
		if size >= 1 {
			f.StallAfter = min(int64(f.StallAt*float64(size)), size-1)
		} else if size == 0 {
			f.Stall = 0
		}
	}
	return f
}

// Get is one object GET the proxy saw.
type Get struct {
	Key, Range string
	IfMatch    string // the If-Match header: the ETag the read is pinned to
	Status     int
	Bytes      int64
	// Start is when the proxy received the GET, End when it finished answering it (zero
	// while it is being answered).
	Start, End time.Time
	// What the proxy did to it: Injected when Status is the proxy's own answer; Delayed,
	// Reset and Stalled when the latency spike, the broken connection or the pause of the
	// body took place (a reset or a stall at or past the end of the body does not).
	Injected, Delayed, Reset, Stalled bool

	code string // the injected S3 error code
}

// Faults names the faults Get records, as Injected counts them: "<status> <code>" for an
// injected error answer, "delay", "reset" and "stall".
func (g Get) Faults() []string {
	var out []string
	if g.Injected {
		out = append(out, fmt.Sprintf("%d %s", g.Status, g.code))
	}
	if g.Delayed {
		out = append(out, "delay")
	}
	if g.Reset {
		out = append(out, "reset")
	}
	if g.Stalled {
		out = append(out, "stall")
	}
	return out
}

// Proxy sits between the reader and versitygw. Object GETs go through decide (n is
// the 1-based count of GETs of that key) and are logged; everything else is forwarded as is.
// The Host header is kept, because SigV4 signs it.
type Proxy struct {
	URL      string
	upstream *url.URL
	// Decide chooses what to do with the n-th GET of key (1-based); nil forwards all.
	Decide func(key string, n int) Fault
	// DecideGet, when set, is used instead of Decide and also sees the GET's Range header
	// ("" for a whole-object GET): concurrent ranged GETs of one key are told apart by it.
	DecideGet func(key, rng string, n int) Fault
	// Before runs before the n-th GET of key is decided and forwarded. Concurrent GETs run
	// it concurrently: to change an object before it is read, use BeforeFirstGet.
	Before func(key string, n int)
	// RewriteList, when set, rewrites the body of every successful ListObjectsV2 response,
	// and ListDelay holds every ListObjectsV2 request this long before it is forwarded, as
	// S3's latency would (see listing.go). ListObjectsV2 requests are logged either way.
	RewriteList Rewrite
	ListDelay   time.Duration
	// BeforeList runs before the n-th ListObjectsV2 request (1-based) is forwarded, and may
	// block it: a test holds a range's later pages until a delimiter probe has been
	// answered. (To change a watched bucket between listings, use States: holding a watch's
	// LIST on what the pipeline emits can deadlock it.)
	BeforeList func(n int)
	// StoredKey, when set, names the key an object GET of key pinned to ifMatch is forwarded
	// to (States.StoredKey); a GET sent to another key is signed again with Credentials.
	StoredKey func(key, ifMatch string) string
	// IgnoreIfMatch and IgnoreRange make the proxy act as a server (or an intermediary) that
	// ignores those headers: it drops them from object GETs before forwarding, so that the
	// current version, or the whole object with 200, is served. SigV4 signs both headers,
	// so such a GET is signed again with Credentials (the server's, known to the test) in
	// the region and for the headers the client signed.
	IgnoreIfMatch, IgnoreRange bool
	Credentials                aws.Credentials

	mu       sync.Mutex
	n        map[string]int
	log      []*Get
	inFlight int
	maxIn    int
	lists    listLog
}

// Configure runs set with the proxy's lock held, which its requests take to read the hooks
// and switches. Use it to set them while the proxy may serve, and whenever its requests
// come from another process (a job server's workers): a request over a socket carries no
// happens-before edge from the test's goroutine, so a plain assignment races with the
// request that reads it, however much earlier it ran.
func (p *Proxy) Configure(set func(p *Proxy)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	set(p)
}

// MaxInFlight returns the most object GETs that were being served at once.
func (p *Proxy) MaxInFlight() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.maxIn
}

// Reset forgets the per-key GET counts, so that Decide and Before see fresh ones.
func (p *Proxy) Reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n = map[string]int{}
}

// New starts a proxy to upstream for the test.
func New(t testing.TB, upstream string) *Proxy {
	u, err := url.Parse(upstream)
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{upstream: u, n: map[string]int{}}
	srv := httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(srv.Close)
	p.URL = srv.URL
	return p
}

func (p *Proxy) serve(w http.ResponseWriter, r *http.Request) {
	if isListObjectsV2(r) {
		p.serveList(w, r)
		return
	}
	// The key is decoded once, from the path as sent: r.URL.Path is already decoded, and
	// decoding it again would turn a key's "%41" into "A" (and drop one with "%zz").
	parts := strings.SplitN(strings.TrimPrefix(r.URL.EscapedPath(), "/"), "/", 2)
	isObjectGet := r.Method == http.MethodGet && len(parts) == 2 && parts[1] != ""
	var fault Fault
	var entry *Get
	var drop []string // headers the GET is forwarded without
	resign := false   // the request is signed again before it is forwarded
	if isObjectGet {
		key, _ := url.PathUnescape(parts[1])
		p.mu.Lock()
		p.n[key]++
		n := p.n[key]
		entry = &Get{Key: key, Range: r.Header.Get("Range"), IfMatch: r.Header.Get("If-Match"), Start: time.Now()}
		p.log = append(p.log, entry)
		p.inFlight++
		p.maxIn = max(p.maxIn, p.inFlight)
		decide, decideGet, before, storedKey := p.Decide, p.DecideGet, p.Before, p.StoredKey
		if p.IgnoreIfMatch {
			drop = append(drop, "If-Match")
		}
		if p.IgnoreRange {
			drop = append(drop, "Range")
		}
		p.mu.Unlock()
		if storedKey != nil {
			if to := storedKey(key, entry.IfMatch); to != key {
				r = r.Clone(r.Context())
				r.URL.Path, r.URL.RawPath = "/"+parts[0]+"/"+to, ""
				resign = true
			}
		}
		defer func() {
			p.mu.Lock()
			p.inFlight--
			entry.End = time.Now()
			p.mu.Unlock()
		}()
		if before != nil {
			before(key, n)
		}
		switch {
		case decideGet != nil:
			fault = decideGet(key, entry.Range, n)
		case decide != nil:
			fault = decide(key, n)
		}
		if fault.Delay > 0 {
			p.mu.Lock()
			entry.Delayed = true
			p.mu.Unlock()
			select {
			case <-time.After(fault.Delay):
			case <-r.Context().Done():
				return
			}
		}
		if fault.Status != 0 {
			p.mu.Lock()
			entry.Status, entry.Injected, entry.code = fault.Status, true, fault.Code
			p.mu.Unlock()
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(fault.Status)
			fmt.Fprintf(w, "<Error><Code>%s</Code><Message>injected by the fault proxy</Message></Error>", fault.Code)
			return
		}
	}
	resp, err := p.forward(r, resign, drop...)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	if entry == nil {
		io.Copy(w, resp.Body)
		return
	}
	p.mu.Lock()
	entry.Status = resp.StatusCode
	p.mu.Unlock()
	size := resp.ContentLength // -1 when unknown
	fault = fault.Sized(size)
	short := func(sent int64) bool { return size < 0 || sent < size } // the body is not all sent
	buf := make([]byte, 32<<10)
	var sent int64
	stalled := false
	for {
		limit := int64(len(buf))
		if fault.ResetAfter > 0 {
			limit = min(limit, fault.ResetAfter-sent)
		}
		if fault.Stall > 0 && !stalled {
			limit = min(limit, fault.StallAfter-sent)
		}
		if limit == 0 {
			w.(http.Flusher).Flush()
			if fault.Stall > 0 && !stalled {
				stalled = true
				if short(sent) {
					p.mu.Lock()
					entry.Stalled = true
					p.mu.Unlock()
				}
				select {
				case <-time.After(fault.Stall):
				case <-r.Context().Done():
					return
				}
				continue
			}
			if short(sent) {
				p.mu.Lock()
				entry.Reset = true
				p.mu.Unlock()
			}
			panic(http.ErrAbortHandler) // break the connection mid-body
		}
		k, rerr := resp.Body.Read(buf[:limit])
		if k > 0 {
			if fault.Flip && fault.FlipAt >= sent && fault.FlipAt < sent+int64(k) {
				buf[fault.FlipAt-sent] ^= 1
			}
			p.mu.Lock()
			entry.Bytes += int64(k)
			p.mu.Unlock()
			sent += int64(k)
			if _, werr := w.Write(buf[:k]); werr != nil {
				return
			}
		}
		if rerr != nil {
			return
		}
	}
}

// Log returns every logged object GET, in the order they arrived.
func (p *Proxy) Log() []Get {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]Get, len(p.log))
	for i, g := range p.log {
		out[i] = *g
	}
	return out
}

// Injected counts the faults that took effect on logged GETs, by the names Get.Faults gives
// them.
func (p *Proxy) Injected() map[string]int {
	out := map[string]int{}
	for _, g := range p.Log() {
		for _, f := range g.Faults() {
			out[f]++
		}
	}
	return out
}

// FormatCounts renders counts such as Injected's in key order, for logs.
func FormatCounts(c map[string]int) string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s: %d", k, c[k])
	}
	return b.String()
}

// Gets returns the logged GETs of key.
func (p *Proxy) Gets(key string) []Get {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []Get
	for _, g := range p.log {
		if g.Key == key {
			out = append(out, *g)
		}
	}
	return out
}

// forward sends r on to the upstream server, as it came (Host header included), or without
// the headers drop names, signed again; resign signs it again whatever it dropped.
func (p *Proxy) forward(r *http.Request, resign bool, drop ...string) (*http.Response, error) {
	out := r.Clone(r.Context())
	out.RequestURI = ""
	out.URL.Scheme, out.URL.Host = p.upstream.Scheme, p.upstream.Host
	out.Host = r.Host
	for _, h := range drop {
		if out.Header.Get(h) != "" {
			out.Header.Del(h)
			resign = true
		}
	}
	if resign {
		if err := p.resign(out); err != nil {
			return nil, err
		}
	}
	return http.DefaultTransport.RoundTrip(out)
}

// resign signs r again with p.Credentials, for the headers its SigV4 Authorization signed
// that it still has, in the region and with the payload hash the client used.
func (p *Proxy) resign(r *http.Request) error {
	auth := r.Header.Get("Authorization")
	scope, signed, ok := parseAuthorization(auth)
	if !ok {
		return fmt.Errorf("faultproxy: cannot sign again a request signed as %q", auth)
	}
	region := strings.Split(scope, "/")[2]
	tmp := r.Clone(r.Context())
	tmp.Header = http.Header{}
	for _, h := range signed {
		k := http.CanonicalHeaderKey(h)
		if v, ok := r.Header[k]; ok && k != "Host" {
			tmp.Header[k] = v
		}
	}
	err := v4.NewSigner().SignHTTP(r.Context(), p.Credentials, tmp, r.Header.Get("X-Amz-Content-Sha256"), "s3", region, time.Now(),
		func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true }) // as the SDK signs for S3
	if err != nil {
		return fmt.Errorf("faultproxy: sign again: %w", err)
	}
	r.Header.Set("Authorization", tmp.Header.Get("Authorization"))
	r.Header.Set("X-Amz-Date", tmp.Header.Get("X-Amz-Date"))
	return nil
}

// parseAuthorization returns the credential scope (access key/date/region/service/
// aws4_request) and the signed headers of a SigV4 Authorization header.
func parseAuthorization(auth string) (scope string, signed []string, ok bool) {
	rest, found := strings.CutPrefix(auth, "AWS4-HMAC-SHA256 ")
	if !found {
		return "", nil, false
	}
	for _, field := range strings.Split(rest, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(field), "=")
		switch k {
		case "Credential":
			scope = v
		case "SignedHeaders":
			signed = strings.Split(v, ";")
		}
	}
	if len(strings.Split(scope, "/")) != 5 || len(signed) == 0 {
		return "", nil, false
	}
	return scope, signed, true
}

// BeforeFirstGet returns a Before hook that runs change(key) once for each of keys, before
// the key's first GET is forwarded, and holds every other GET of the key until it has run.
// Counting on n == 1 is not enough: a reader may abandon a GET while the change runs (a
// fetch-ahead a split or a failure dropped) and send another, which would reach the server
// first and read the object as it was.
func BeforeFirstGet(keys []string, change func(key string)) func(key string, n int) {
	once := make(map[string]*sync.Once, len(keys))
	for _, k := range keys {
		once[k] = new(sync.Once)
	}
	return func(key string, _ int) {
		if o := once[key]; o != nil {
			o.Do(func() { change(key) })
		}
	}
}
