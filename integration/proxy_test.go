package integration

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

// action is what the fault proxy does with one object GET.
type action struct {
	Status int    // answer with this HTTP status and S3 error Code instead of forwarding
	Code   string //
	// ResetAfter > 0 forwards, then breaks the connection after this many body bytes.
	ResetAfter int64
	// StallAfter and Stall pause the forwarded body.
	StallAfter int64
	Stall      time.Duration
}

// getLog is one object GET the proxy saw.
type getLog struct {
	Key, Range string
	Status     int
	Bytes      int64
}

// faultProxy sits between the reader and versitygw. Object GETs go through decide (n is
// the 1-based count of GETs of that key) and are logged; everything else is forwarded as is.
// The Host header is kept, because SigV4 signs it.
type faultProxy struct {
	URL      string
	upstream *url.URL
	decide   func(key string, n int) action
	before   func(key string, n int) // runs before a GET is forwarded

	mu  sync.Mutex
	n   map[string]int
	log []*getLog
}

func newFaultProxy(t *testing.T, upstream string) *faultProxy {
	u, err := url.Parse(upstream)
	if err != nil {
		t.Fatal(err)
	}
	p := &faultProxy{upstream: u, n: map[string]int{}}
	srv := httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(srv.Close)
	p.URL = srv.URL
	return p
}

func (p *faultProxy) serve(w http.ResponseWriter, r *http.Request) {
	parts := strings.SplitN(strings.TrimPrefix(r.URL.Path, "/"), "/", 2)
	isObjectGet := r.Method == http.MethodGet && len(parts) == 2 && parts[1] != ""
	var act action
	var entry *getLog
	if isObjectGet {
		key, _ := url.PathUnescape(parts[1])
		p.mu.Lock()
		p.n[key]++
		n := p.n[key]
		entry = &getLog{Key: key, Range: r.Header.Get("Range")}
		p.log = append(p.log, entry)
		decide, before := p.decide, p.before
		p.mu.Unlock()
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

// gets returns the logged GETs of key.
func (p *faultProxy) gets(key string) []getLog {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []getLog
	for _, g := range p.log {
		if g.Key == key {
			out = append(out, *g)
		}
	}
	return out
}
