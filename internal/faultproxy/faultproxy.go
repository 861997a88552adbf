// Package faultproxy is a fault-injecting reverse proxy for tests, placed between an S3
// reader and a real S3 server: it answers chosen object GETs with errors, breaks or stalls
// their bodies, runs hooks before them, logs each with its Range and body bytes, and tracks
// how many were in flight at once. It keeps the Host header, which SigV4 signs.
package faultproxy

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// Action is what the fault proxy does with one object GET.
type Action struct {
	Status int    // answer with this HTTP status and S3 error Code instead of forwarding
	Code   string //
	// ResetAfter > 0 forwards, then breaks the connection after this many body bytes.
	ResetAfter int64
	// StallAfter and Stall pause the forwarded body.
	StallAfter int64
	Stall      time.Duration
}

// Get is one object GET the proxy saw.
type Get struct {
	Key, Range string
	Status     int
	Bytes      int64
}

// Proxy sits between the reader and versitygw. Object GETs go through decide (n is
// the 1-based count of GETs of that key) and are logged; everything else is forwarded as is.
// The Host header is kept, because SigV4 signs it.
type Proxy struct {
	URL      string
	upstream *url.URL
	// Decide chooses what to do with the n-th GET of key (1-based); nil forwards all.
	Decide func(key string, n int) Action
	// Before runs before the n-th GET of key is decided and forwarded.
	Before func(key string, n int)

	mu       sync.Mutex
	n        map[string]int
	log      []*Get
	inFlight int
	maxIn    int
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
	parts := strings.SplitN(strings.TrimPrefix(r.URL.Path, "/"), "/", 2)
	isObjectGet := r.Method == http.MethodGet && len(parts) == 2 && parts[1] != ""
	var act Action
	var entry *Get
	if isObjectGet {
		key, _ := url.PathUnescape(parts[1])
		p.mu.Lock()
		p.n[key]++
		n := p.n[key]
		entry = &Get{Key: key, Range: r.Header.Get("Range")}
		p.log = append(p.log, entry)
		p.inFlight++
		p.maxIn = max(p.maxIn, p.inFlight)
		decide, before := p.Decide, p.Before
		p.mu.Unlock()
		defer func() {
			p.mu.Lock()
			p.inFlight--
			p.mu.Unlock()
		}()
		if before != nil {
			before(key, n)
		}
		if decide != nil {
			act = decide(key, n)
		}
		if act.Status != 0 {
			p.mu.Lock()
			entry.Status = act.Status
			p.mu.Unlock()
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(act.Status)
			fmt.Fprintf(w, "<Error><Code>%s</Code><Message>injected by the fault proxy</Message></Error>", act.Code)
			return
		}
	}
	out := r.Clone(r.Context())
	out.RequestURI = ""
	out.URL.Scheme, out.URL.Host = p.upstream.Scheme, p.upstream.Host
	out.Host = r.Host
	resp, err := http.DefaultTransport.RoundTrip(out)
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
	buf := make([]byte, 32<<10)
	var sent int64
	stalled := false
	for {
		limit := int64(len(buf))
		if act.ResetAfter > 0 {
			limit = min(limit, act.ResetAfter-sent)
		}
		if act.Stall > 0 && !stalled {
			limit = min(limit, act.StallAfter-sent)
		}
		if limit == 0 {
			w.(http.Flusher).Flush()
			if act.Stall > 0 && !stalled {
				stalled = true
				select {
				case <-time.After(act.Stall):
				case <-r.Context().Done():
					return
				}
				continue
			}
			panic(http.ErrAbortHandler) // break the connection mid-body
		}
		k, rerr := resp.Body.Read(buf[:limit])
		if k > 0 {
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
