//go:build unix

package fakelist

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"syscall"
	"testing"
	"time"
)

// discard is a ResponseWriter that keeps nothing: the benchmark measures the server's own
// work for one page, without a network or a client.
type discard struct{ h http.Header }

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) Write(b []byte) (int, error) { return len(b), nil }
func (d *discard) WriteHeader(int)             {}

// BenchmarkPage is the server's CPU for one 1,000-key page out of a million keys: binary
// search, key synthesis and XML. net/http's share is measured by cmd/s3io-planbench.
func BenchmarkPage(b *testing.B) {
	const n = 1_000_000
	for _, bc := range []struct {
		name, query string
		key         func(int) string
	}{
		{"flat", "", FlatKeys("data/", n)},
		{"foldered", "", FolderedKeys("data/", n, 1000)},
		{"foldered-delimiter", "&delimiter=%2F", FolderedKeys("data/", n, 1000)},
		{"flat-url", "&encoding-type=url", FlatKeys("data/", n)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s := New(Options{Bucket: "b", N: n, Key: bc.key})
			defer s.Close()
			reqs := make([]*http.Request, 64)
			for i := range reqs {
				reqs[i] = httptest.NewRequest("GET", "/b?list-type=2&prefix=data%2F"+bc.query+"&start-after="+url.QueryEscape(bc.key(i*n/len(reqs))), nil)
			}
			w := &discard{h: http.Header{}}
			b.ReportAllocs()
			cpu := processCPU()
			for i := 0; b.Loop(); i++ {
				s.ServeHTTP(w, reqs[i%len(reqs)])
			}
			// CPU time, not wall time, is what the server takes from the planner: it
			// holds whatever else runs on the machine.
			b.ReportMetric(float64(processCPU()-cpu)/float64(b.N), "cpu-ns/op")
		})
	}
}

// BenchmarkPageHTTP is BenchmarkPage through net/http and loopback TCP, with a client that
// only drains the body: an upper bound of the server's CPU per page as a planner sees it.
func BenchmarkPageHTTP(b *testing.B) {
	const n = 1_000_000
	key := FlatKeys("data/", n)
	s := New(Options{Bucket: "b", N: n, Key: key})
	defer s.Close()
	c := &http.Client{}
	var bytes int64
	cpu := processCPU()
	for i := 0; b.Loop(); i++ {
		resp, err := c.Get(s.URL + "/b?list-type=2&prefix=data%2F&encoding-type=url&start-after=" + url.QueryEscape(key(i*997%n)))
		if err != nil {
			b.Fatal(err)
		}
		m, _ := io.Copy(io.Discard, resp.Body)
		bytes += m
		resp.Body.Close()
	}
	b.ReportMetric(float64(processCPU()-cpu)/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(bytes)/float64(b.N), "B/page")
}

// processCPU is the user and system CPU time of this process so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
