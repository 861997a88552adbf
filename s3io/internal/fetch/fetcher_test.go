package fetch

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/spate-io/beam-s3/internal/faultproxy"
	"github.com/spate-io/beam-s3/internal/s3test"
)

// fixture is a server holding objects of awkward sizes around the part size, and pinned
// reads of them through a transport that counts the GETs in flight.
type fixture struct {
	srv     *s3test.Server
	gets    *Gets
	set     Settings
	budget  int64
	objects []Object
	data    [][]byte
	reqs    *inFlight
}

func newFixture(t *testing.T, partBytes, budget int64, maxInFlight int, sizes []int) *fixture {
	t.Helper()
	srv := s3test.New(t)
	srv.CreateBucket(t, "fetch")
	fx := &fixture{srv: srv, budget: budget, reqs: &inFlight{base: http.DefaultTransport},
		set: Settings{ReadTimeout: time.Minute, MaxAttempts: 8, PartBytes: partBytes, MaxRequestsInFlight: maxInFlight}}
	rng := rand.New(rand.NewPCG(1, 2))
	for i, n := range sizes {
		b := make([]byte, n)
		for j := range b {
			b[j] = byte(rng.Uint32())
		}
		key := fmt.Sprintf("obj-%03d", i)
		etag := srv.Put(t, "fetch", key, b)
		fx.objects = append(fx.objects, Object{Key: key, Size: int64(n), ETag: etag})
		fx.data = append(fx.data, b)
	}
	fx.newGets()
	return fx
}

// newGets makes fx.gets follow fx.set.
func (fx *fixture) newGets() {
	client := s3.New(s3.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(fx.srv.URL),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider("test-access-key", "test-secret-key", ""),
		HTTPClient:   &http.Client{Transport: fx.reqs},
	})
	fx.gets = NewGets(client, "fetch", fx.set)
}

// newFetcher returns a fetcher over fx's objects and the pool it holds its parts in, which
// records the most bytes it held at once in peak.
func (fx *fixture) newFetcher(peak *atomic.Int64) (*Fetcher, *Pool) {
	pool := NewPool(fx.budget)
	pool.observe = func(held int64) {
		for m := peak.Load(); held > m && !peak.CompareAndSwap(m, held); m = peak.Load() {
		}
	}
	return NewFetcher(context.Background(), fx.set, pool, NewBudget(pool, fx.budget, fx.budget, fx.budget)), pool
}

// inFlight is an http.RoundTripper that counts the GETs whose bodies are open.
type inFlight struct {
	base      http.RoundTripper
	now, most atomic.Int64
}

func (t *inFlight) RoundTrip(r *http.Request) (*http.Response, error) {
	n := t.now.Add(1)
	for m := t.most.Load(); n > m && !t.most.CompareAndSwap(m, n); m = t.most.Load() {
	}
	resp, err := t.base.RoundTrip(r)
	if err != nil {
		t.now.Add(-1)
		return nil, err
	}
	resp.Body = &countedBody{ReadCloser: resp.Body, done: func() { t.now.Add(-1) }}
	return resp, nil
}

type countedBody struct {
	io.ReadCloser
	once sync.Once
	done func()
}

func (b *countedBody) Close() error {
	b.once.Do(b.done)
	return b.ReadCloser.Close()
}

// held returns the bytes of the buffers pool has handed out and not taken back.
func held(p *Pool) int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.room.used
}

// settleGoroutines fails the test if goroutines of this package outlive their read; the
// HTTP client's and the test server's are not counted.
func settleGoroutines(t *testing.T) {
	t.Helper()
	s3test.SettleGoroutines(t, "internal/fetch.(*Fetcher)", "internal/fetch.(*PinnedReader)")
}

// Every byte of every object arrives in order, however the parts interleave, while the
// fetched-but-unread bytes never exceed the budget and the requests in flight never exceed
// their cap; the reader is slow, so the budget, not the reader, is what stops the fetcher.
func TestFetcherOrderBudgetAndRequests(t *testing.T) {
	const part, budget, inFlight = 64 << 10, 300 << 10, 4
	sizes := []int{0, 1, part - 1, part, part + 1, 3*part + 17, 10, 0, 5 * part, 100, 2*part - 3}
	fx := newFixture(t, part, budget, inFlight, sizes)

	var peak atomic.Int64
	f, pool := fx.newFetcher(&peak)
	var streams []*Stream
	for _, m := range fx.objects {
		streams = append(streams, f.Add(fx.gets, m, Range{PlanEnd: m.Size}).Stream())
	}
	time.Sleep(100 * time.Millisecond) // let the fetcher run up against its budget
	for i, s := range streams {
		var got bytes.Buffer
		buf := make([]byte, 7<<10)
		for {
			n, err := s.Read(buf)
			got.Write(buf[:n])
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", fx.objects[i].Key, err)
			}
			time.Sleep(time.Millisecond / 4)
		}
		s.Close()
		if !bytes.Equal(got.Bytes(), fx.data[i]) {
			t.Fatalf("%s: got %d bytes, want %d, or they differ", fx.objects[i].Key, got.Len(), len(fx.data[i]))
		}
	}
	f.Close()
	used, most := held(pool), peak.Load()
	if used != 0 || most > budget || most < budget/2 {
		t.Errorf("budget: %d bytes still held, peak %d; want 0 held and a peak in [%d, %d]", used, most, budget/2, budget)
	}
	if m := fx.reqs.most.Load(); m > inFlight || m < 2 {
		t.Errorf("at most %d requests were in flight; want 2..%d", m, inFlight)
	}
	// One GET per part, and an empty object still gets its pinned GET.
	var wantGets int64
	for _, n := range sizes {
		wantGets += max(int64(n)+part-1, part) / part
	}
	if g := f.Stats().Gets; g != wantGets {
		t.Errorf("gets = %d, want %d (one per part)", g, wantGets)
	}
	if u := fx.srv.Unpinned(); len(u) > 0 {
		t.Errorf("GETs without If-Match: %v", u)
	}
	for _, r := range fx.srv.Requests("obj-004") {
		if r.Range == "" {
			t.Errorf("obj-004 (%d bytes) was fetched whole, want ranged parts", part+1)
		}
	}
	settleGoroutines(t)
}

// Dropping an object while its parts are in flight (a split took it, or it failed) ends its
// requests at once, returns its bytes to the budget and leaves no goroutine behind; the
// objects after it are still read whole.
func TestFetcherDropWhileInFlight(t *testing.T) {
	const part = 32 << 10
	fx := newFixture(t, part, 1<<20, 8, []int{8 * part, 3 * part})
	fx.srv.SetFault("obj-000", fmt.Sprintf("bytes=%d-", 2*part), 1, faultproxy.Fault{Stall: 10 * time.Second})

	var peak atomic.Int64
	f, pool := fx.newFetcher(&peak)
	first := f.Add(fx.gets, fx.objects[0], Range{PlanEnd: fx.objects[0].Size}).Stream()
	second := f.Add(fx.gets, fx.objects[1], Range{PlanEnd: fx.objects[1].Size}).Stream()
	buf := make([]byte, 2*part)
	if _, err := io.ReadFull(first, buf); err != nil || !bytes.Equal(buf, fx.data[0][:2*part]) {
		t.Fatalf("first two parts: %v", err)
	}
	start := time.Now()
	first.Close() // the third part is stalled on the server
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("dropping took %v: it waited for the stalled request", d)
	}
	got, err := io.ReadAll(second)
	if err != nil || !bytes.Equal(got, fx.data[1]) {
		t.Fatalf("second object after the drop: %d bytes, %v", len(got), err)
	}
	second.Close()
	f.Close()
	if used := held(pool); used != 0 {
		t.Errorf("%d bytes still held after close", used)
	}
	if c := f.Stats().Cancelled; c < 1 {
		t.Errorf("cancelled = %d, want the stalled part counted", c)
	}
	settleGoroutines(t)
}

// A fetcher closed with objects never read (the restriction ended or failed) releases
// everything without any reader.
func TestFetcherCloseUnread(t *testing.T) {
	fx := newFixture(t, 16<<10, 64<<10, 2, []int{100 << 10, 50 << 10, 1})
	var peak atomic.Int64
	f, pool := fx.newFetcher(&peak)
	var fetches []*ObjectFetch
	for _, m := range fx.objects {
		fetches = append(fetches, f.Add(fx.gets, m, Range{PlanEnd: m.Size}))
	}
	time.Sleep(50 * time.Millisecond)
	for _, of := range fetches {
		of.Drop()
	}
	f.Close()
	if used := held(pool); used != 0 {
		t.Errorf("%d bytes still held after close", used)
	}
	settleGoroutines(t)
}

// With VerifyChecksums objects are still read in ranged parts. The in-process server
// stores no checksum and serves no GetObjectAttributes: the lookup falls back to a
// HeadObject, and each object is read whole and counted as missing its checksum.
func TestVerifyChecksumsWithoutStoredChecksums(t *testing.T) {
	fx := newFixture(t, 16<<10, 64<<10, 4, []int{100 << 10, 5 << 10, 0})
	fx.set.VerifyChecksums = true
	fx.newGets()
	var peak atomic.Int64
	f, _ := fx.newFetcher(&peak)
	for i, m := range fx.objects {
		s := f.Add(fx.gets, m, Range{PlanEnd: m.Size}).Stream()
		got, err := io.ReadAll(s)
		if err == nil {
			err = s.End()
		}
		s.Close()
		if err != nil || !bytes.Equal(got, fx.data[i]) {
			t.Fatalf("%s: %d bytes, %v", m.Key, len(got), err)
		}
		// The server answers GetObjectAttributes (GET ?attributes) as a GET of the object.
		if reqs, want := fx.srv.Requests(m.Key), max((m.Size+16<<10-1)/(16<<10), 1)+1; int64(len(reqs)) != want {
			t.Errorf("%s: GETs %+v, want the lookup and %d parts", m.Key, reqs, want-1)
		}
	}
	f.Close()
	if st := f.Stats(); st.ChecksumsMissing != 3 || st.ChecksumsVerified != 0 || st.ChecksumLookups != 6 {
		t.Errorf("stats %+v: want 3 objects missing a checksum, after 2 lookups each", st)
	}
	settleGoroutines(t)
}

// With VerifyChecksums only a read that framed every record it wanted (Stream.End) is
// counted. A read dropped partway (a decoding ahead, or a handover, that no restriction
// took) vouches for nothing: the read that takes the object again counts it, and counting
// the dropped one too reported objects read and verified whole as unchecked. A read of a
// range that starts inside the object cannot be checked, and is counted as such once it
// ends.
func TestVerifyChecksumsCountsEndedReads(t *testing.T) {
	const part = 16 << 10
	fx := newFixture(t, part, 256<<10, 4, []int{100 << 10})
	fx.set.VerifyChecksums = true
	fx.newGets()
	var peak atomic.Int64
	f, _ := fx.newFetcher(&peak)
	m := fx.objects[0]

	dropped := f.Add(fx.gets, m, Range{PlanEnd: m.Size}).Stream()
	if _, err := io.ReadFull(dropped, make([]byte, part+1)); err != nil {
		t.Fatal(err)
	}
	dropped.Close()
	if st := f.Stats(); st.ChecksumsMissing != 0 || st.ChecksumsUnchecked != 0 {
		t.Errorf("after a read dropped partway: stats %+v, want nothing counted", st)
	}

	// The same object read whole, and ended: missing its checksum, once.
	whole := f.Add(fx.gets, m, Range{PlanEnd: m.Size}).Stream()
	if got, err := io.ReadAll(whole); err != nil || !bytes.Equal(got, fx.data[0]) {
		t.Fatalf("whole read: %d bytes, %v", len(got), err)
	}
	if err := whole.End(); err != nil {
		t.Fatal(err)
	}
	whole.Close()

	// A read from inside the object, ended before the object's end (a segment's framing
	// stops at its end): unchecked.
	inside := f.Add(fx.gets, m, Range{From: 10 << 10, PlanEnd: 60 << 10, TailWindow: part}).Stream()
	buf := make([]byte, 50<<10)
	if _, err := io.ReadFull(inside, buf); err != nil || !bytes.Equal(buf, fx.data[0][10<<10:60<<10]) {
		t.Fatalf("read inside: %v", err)
	}
	if err := inside.End(); err != nil {
		t.Fatal(err)
	}
	inside.Close()
	f.Close()
	if st := f.Stats(); st.ChecksumsMissing != 1 || st.ChecksumsUnchecked != 1 || st.ChecksumsVerified != 0 {
		t.Errorf("stats %+v: want 1 read missing its checksum and 1 unchecked", st)
	}
	settleGoroutines(t)
}

// A part takes its room in the budget when its answer arrives, not when it is requested:
// on a network that answers each request late, more parts are requested at once than the
// budget holds, while the buffers held never exceed it, and every byte still arrives in
// order.
func TestPartsTakeRoomFromTheirAnswer(t *testing.T) {
	const partBytes = 64 << 10
	const budget = 4 * partBytes
	sizes := []int{12 * partBytes, 3*partBytes + 5, 9 * partBytes}
	fx := newFixture(t, partBytes, budget, 32, sizes)
	fx.reqs.base = slowNetwork{base: http.DefaultTransport, delay: 50 * time.Millisecond}

	var peak atomic.Int64
	f, pool := fx.newFetcher(&peak)
	var streams []*Stream
	for _, m := range fx.objects {
		streams = append(streams, f.Add(fx.gets, m, Range{PlanEnd: m.Size}).Stream())
	}
	for i, s := range streams {
		got, err := io.ReadAll(s)
		s.Close()
		if err != nil || !bytes.Equal(got, fx.data[i]) {
			t.Fatalf("%s: %d bytes, %v", fx.objects[i].Key, len(got), err)
		}
	}
	f.Close()
	if m := fx.reqs.most.Load(); m <= budget/partBytes {
		t.Errorf("at most %d requests were in flight; want more than the %d parts the budget holds", m, budget/partBytes)
	}
	if m := fx.reqs.most.Load(); m > 2*budget/partBytes {
		t.Errorf("at most %d requests were in flight; want no more than the %d parts twice the budget holds", m, 2*budget/partBytes)
	}
	if most := peak.Load(); most > budget {
		t.Errorf("the pool held %d bytes at once, over the budget's %d", most, budget)
	}
	if used := held(pool); used != 0 {
		t.Errorf("%d bytes still held after close", used)
	}
	settleGoroutines(t)
}

// Two readers whose budgets each could fill the worker's pool, on a network that answers
// late: each reader's parts get their buffers in the order it reads them, so neither can
// hold the buffer the other, or itself, waits for, and both read every byte.
func TestReadersSharingAPoolTakeBuffersInOrder(t *testing.T) {
	// Parts of two size classes: an object's last part is small, and fits where the
	// full part before it does not.
	const partBytes = 256 << 10
	const poolBytes = 3 * partBytes
	var sizes []int
	for i := range 48 {
		sizes = append(sizes, (1+i%3)*partBytes+1000*(i+1))
	}
	fx := newFixture(t, partBytes, poolBytes, 32, sizes)
	fx.reqs.base = slowNetwork{base: http.DefaultTransport, delay: 5 * time.Millisecond}
	pool := NewPool(poolBytes)
	done := make(chan error, 2)
	var fetchers []*Fetcher
	for r := range 2 {
		f := NewFetcher(context.Background(), fx.set, pool, NewBudget(pool, poolBytes, poolBytes, poolBytes))
		fetchers = append(fetchers, f)
		var streams []*Stream
		for i := r; i < len(fx.objects); i += 2 {
			streams = append(streams, f.Add(fx.gets, fx.objects[i], Range{PlanEnd: fx.objects[i].Size}).Stream())
		}
		go func() {
			for j, s := range streams {
				got, err := io.ReadAll(s)
				s.Close()
				if i := r + 2*j; err != nil || !bytes.Equal(got, fx.data[i]) {
					done <- fmt.Errorf("%s: %d bytes, %v", fx.objects[i].Key, len(got), err)
					return
				}
				time.Sleep(time.Millisecond)
			}
			done <- nil
		}()
	}
	timeout := time.After(30 * time.Second)
	for range 2 {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-timeout:
			t.Fatal("the readers were still waiting for their parts after 30 s: a later part took a buffer an earlier one needed")
		}
	}
	for _, f := range fetchers {
		f.Close()
	}
	if used := held(pool); used != 0 {
		t.Errorf("%d bytes still held after close", used)
	}
	settleGoroutines(t)
}
