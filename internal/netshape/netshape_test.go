package netshape

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"
)

// Timings are asserted from below only: a loaded machine makes requests slower, never
// faster, so a lower bound cannot flake.

const bodySize = 4 << 20

func body() []byte {
	b := make([]byte, bodySize)
	for i := range b {
		b[i] = byte(i * 7)
	}
	return b
}

// upstream serves body() for every object GET, "<list/>" for anything else, and records the
// Host headers it saw. A non-nil hold makes object GETs wait for it to be closed, after
// reporting on arrived.
func upstream(t *testing.T, hold chan struct{}, arrived chan<- struct{}) (*httptest.Server, *[]string) {
	data := body()
	var mu sync.Mutex
	var hosts []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hosts = append(hosts, r.Host)
		mu.Unlock()
		if r.URL.Path == "/bucket" {
			io.WriteString(w, "<list/>")
			return
		}
		if hold != nil {
			arrived <- struct{}{}
			<-hold
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(data)))
		w.Write(data)
	}))
	t.Cleanup(srv.Close)
	return srv, &hosts
}

func newProxy(t *testing.T, up string, shape Shape) *Proxy {
	p, err := New(up, shape)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// get fetches path through the proxy with a Host header of its own and returns the body and
// how long it took. It may run on any goroutine, so it reports failures with Errorf.
func get(t *testing.T, ctx context.Context, p *Proxy, path string) ([]byte, time.Duration) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.URL+path, nil)
	req.Host = "signed.example:9000"
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Errorf("GET %s: %v", path, err)
		return nil, 0
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Errorf("GET %s: %v", path, err)
	}
	return b, time.Since(start)
}

func TestShaping(t *testing.T) {
	up, hosts := upstream(t, nil, nil)
	const latency, rate = 50 * time.Millisecond, 40e6
	p := newProxy(t, up.URL, Shape{Latency: latency, BytesPerSecond: rate})

	if b, took := get(t, context.Background(), p, "/bucket"); string(b) != "<list/>" || took < latency {
		t.Errorf("list: got %q in %v, want <list/> after at least the latency %v", b, took, latency)
	}
	b, took := get(t, context.Background(), p, "/bucket/some/key")
	if !bytes.Equal(b, body()) {
		t.Fatalf("object body: %d bytes, not the upstream's %d", len(b), bodySize)
	}
	want := latency + time.Duration(float64(bodySize)/rate*float64(time.Second))
	if took < want*7/10 {
		t.Errorf("a %d-byte body at %.0f B/s took %v, want at least 70%% of %v", bodySize, rate, took, want)
	}
	t.Logf("%d bytes in %v (%.1f MB/s; expected %v)", bodySize, took, float64(bodySize)/took.Seconds()/1e6, want)
	for _, h := range *hosts {
		if h != "signed.example:9000" {
			t.Errorf("upstream saw Host %q, want the client's", h)
		}
	}
	if p.Requests() != 2 || p.Gets() != 1 {
		t.Errorf("Requests %d, Gets %d; want 2 and 1", p.Requests(), p.Gets())
	}
}

func TestPassThrough(t *testing.T) {
	up, _ := upstream(t, nil, nil)
	// Shaped, this would take 10 s before the first byte and over 100 s per body.
	p := newProxy(t, up.URL, Shape{Latency: 10 * time.Second, BytesPerSecond: 40e3})
	p.SetShaping(false)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if b, _ := get(t, ctx, p, "/bucket/key"); !bytes.Equal(b, body()) {
		t.Fatalf("object body: %d bytes, not the upstream's %d", len(b), bodySize)
	}
}

func TestMaxInFlight(t *testing.T) {
	hold, arrived := make(chan struct{}), make(chan struct{})
	up, _ := upstream(t, hold, arrived)
	p := newProxy(t, up.URL, Shape{Latency: -1, BytesPerSecond: -1})

	const n = 3
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { get(t, context.Background(), p, "/bucket/key-"+strconv.Itoa(i)) })
	}
	for range n {
		<-arrived // all n GETs are upstream at once
	}
	close(hold)
	wg.Wait()
	get(t, context.Background(), p, "/bucket") // a list: a request, not an object GET
	if p.MaxInFlight() != n || p.Gets() != n || p.Requests() != n+1 {
		t.Errorf("MaxInFlight %d, Gets %d, Requests %d; want %d, %d, %d", p.MaxInFlight(), p.Gets(), p.Requests(), n, n, n+1)
	}
	// The clients have their bodies; the handlers that sent them may not have returned yet.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := p.WaitIdle(ctx); err != nil {
		t.Fatalf("the proxy still serves a GET a minute after its clients had their answers: %v", err)
	}
	p.Reset()
	if p.MaxInFlight() != 0 || p.Gets() != 0 || p.Requests() != 0 {
		t.Errorf("after Reset: MaxInFlight %d, Gets %d, Requests %d; want zeros", p.MaxInFlight(), p.Gets(), p.Requests())
	}
}
