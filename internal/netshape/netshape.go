// Package netshape is a reverse proxy that makes a loopback S3 server look like a network
// one: it waits before forwarding each request (S3's first-byte latency) and paces each
// response body to a per-connection bandwidth. Shaping can be switched off between runs, so
// the proxy's own cost can be measured apart from the shaping. It counts requests and object
// GETs, and tracks the most object GETs in flight at once. It keeps the Host header, which
// SigV4 signs. Standard library only.
package netshape

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The defaults model one S3 connection: about 30 ms before the first byte of each request,
// and about 90 MB/s per connection.
const (
	DefaultLatency        = 30 * time.Millisecond
	DefaultBytesPerSecond = 90e6
)

// Pacing granularity: bodies are read from upstream into buffers of copyBuffer bytes and
// written in chunks of step's worth of bytes (at least 4 KiB), each when the rate allows, so
// that the proxy wakes about once per step per body however fast the rate. A body that fell
// behind its schedule (a slow reader, a late wake-up) catches up by at most maxBehind's worth.
const (
	copyBuffer = 256 << 10
	step       = 2 * time.Millisecond
	maxBehind  = 10 * time.Millisecond
)

// Shape is what the proxy adds while shaping is on. Zero fields take the defaults; a
// negative field turns that part off.
type Shape struct {
	Latency        time.Duration // waited before forwarding each request
	BytesPerSecond float64       // the pace of each response body
}

// Proxy forwards to one upstream server. Start it with New and stop it with Close.
type Proxy struct {
	// URL is the proxy's address, http://127.0.0.1:PORT.
	URL string

	upstream  *url.URL
	shape     Shape
	shaping   atomic.Bool
	transport *http.Transport
	srv       *http.Server
	bufs      sync.Pool

	requests atomic.Int64
	mu       sync.Mutex
	gets     int64
	inFlight int
	maxIn    int
	drained  chan struct{} // closed when inFlight falls to 0; replaced when it leaves 0
}

// New starts a proxy to upstream (http://host:port) on a free loopback port, shaping on.
func New(upstream string, shape Shape) (*Proxy, error) {
	u, err := url.Parse(upstream)
	if err != nil {
		return nil, err
	}
	if shape.Latency == 0 {
		shape.Latency = DefaultLatency
	}
	if shape.BytesPerSecond == 0 {
		shape.BytesPerSecond = DefaultBytesPerSecond
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{
		URL:      "http://" + ln.Addr().String(),
		upstream: u,
		shape:    shape,
		// Enough idle connections that the proxy never serializes a client's concurrent
		// GETs; no transparent gzip, which would change the bodies; no environment proxy.
		transport: &http.Transport{
			DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConns:        256,
			MaxIdleConnsPerHost: 256,
			IdleConnTimeout:     90 * time.Second,
			DisableCompression:  true,
		},
		bufs: sync.Pool{New: func() any { b := make([]byte, copyBuffer); return &b }},
	}
	p.shaping.Store(true)
	p.srv = &http.Server{Handler: p}
	go p.srv.Serve(ln)
	return p, nil
}

// Close stops the proxy and closes its connections.
func (p *Proxy) Close() error {
	err := p.srv.Close()
	p.transport.CloseIdleConnections()
	return err
}

// SetShaping turns shaping on or off; off, the proxy only forwards.
func (p *Proxy) SetShaping(on bool) { p.shaping.Store(on) }

// Requests returns the requests received since the last Reset.
func (p *Proxy) Requests() int64 { return p.requests.Load() }

// Gets returns the object GETs (GETs of /bucket/key) received since the last Reset.
func (p *Proxy) Gets() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.gets
}

// MaxInFlight returns the most object GETs served at once since the last Reset, counted
// from their arrival (the latency wait included) to the end of their bodies.
func (p *Proxy) MaxInFlight() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.maxIn
}

// WaitIdle returns once no object GET is being served, or ctx's error when it ends first.
// A client has a body whole before the handler that sent it returns, so counters read (or
// Reset) right after the client's last GET may still see that GET in flight.
func (p *Proxy) WaitIdle(ctx context.Context) error {
	p.mu.Lock()
	if p.inFlight == 0 {
		p.mu.Unlock()
		return nil
	}
	drained := p.drained
	p.mu.Unlock()
	select {
	case <-drained:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Reset zeroes the counters, between runs; a GET still in flight stays counted in
// MaxInFlight (WaitIdle first for zeros).
func (p *Proxy) Reset() {
	p.requests.Store(0)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.gets, p.maxIn = 0, p.inFlight
}

// ServeHTTP forwards one request.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.requests.Add(1)
	if bucket, key, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/"); r.Method == http.MethodGet && bucket != "" && key != "" {
		p.mu.Lock()
		p.gets++
		if p.inFlight == 0 {
			p.drained = make(chan struct{})
		}
		p.inFlight++
		p.maxIn = max(p.maxIn, p.inFlight)
		p.mu.Unlock()
		defer func() {
			p.mu.Lock()
			if p.inFlight--; p.inFlight == 0 {
				close(p.drained)
			}
			p.mu.Unlock()
		}()
	}
	shaped := p.shaping.Load()
	if shaped && p.shape.Latency > 0 {
		if sleep(r.Context(), p.shape.Latency) != nil {
			return
		}
	}
	out := r.Clone(r.Context())
	out.RequestURI = ""
	out.URL.Scheme, out.URL.Host = p.upstream.Scheme, p.upstream.Host
	out.Host = r.Host
	resp, err := p.transport.RoundTrip(out)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	buf := p.bufs.Get().(*[]byte)
	defer p.bufs.Put(buf)
	if !shaped || p.shape.BytesPerSecond < 0 {
		// Hide the ResponseWriter's ReadFrom, which would copy through a 32 KiB buffer.
		io.CopyBuffer(struct{ io.Writer }{w}, resp.Body, *buf)
		return
	}
	p.pace(r.Context(), w, resp.Body, *buf)
}

// pace copies body to w at the configured rate: each chunk is written when the bytes up to
// its end are due, on an absolute schedule, so that oversleeping one chunk does not slow
// the average.
func (p *Proxy) pace(ctx context.Context, w io.Writer, body io.Reader, buf []byte) {
	perByte := float64(time.Second) / p.shape.BytesPerSecond
	chunk := min(len(buf), max(4<<10, int(float64(step)/perByte)))
	due := time.Now()
	for {
		n, rerr := io.ReadAtLeast(body, buf, chunk)
		for off := 0; off < n; off += chunk {
			c := buf[off:min(off+chunk, n)]
			due = due.Add(time.Duration(float64(len(c)) * perByte))
			now := time.Now()
			if d := due.Sub(now); d > 0 {
				if sleep(ctx, d) != nil {
					return
				}
			} else if -d > maxBehind {
				due = now.Add(-maxBehind) // a slow reader: no unbounded catch-up burst
			}
			if _, err := w.Write(c); err != nil {
				return
			}
		}
		if rerr != nil { // io.EOF, or io.ErrUnexpectedEOF for a last short read
			return
		}
	}
}

// sleep waits for d, or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
