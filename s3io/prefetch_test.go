package s3io

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/spate-io/beam-s3/internal/faultproxy"
	"github.com/spate-io/beam-s3/internal/s3test"
)

// fetchFixture is a server holding objects of awkward sizes around the part size, and a
// client and config for fetchers over them.
type fetchFixture struct {
	srv     *s3test.Server
	client  *s3.Client
	cfg     Config
	members []Member
	data    [][]byte
}

func newFetchFixture(t *testing.T, partBytes, fetchBudget int64, inFlight int, sizes []int) *fetchFixture {
	t.Helper()
	srv := s3test.New(t)
	srv.CreateBucket(t, "fetch")
	cfg := Config{Bucket: "fetch", Endpoint: srv.URL, UsePathStyle: true, PartBytes: partBytes,
		ReadBufferBytes: decodeWindows + fetchBudget, MaxRequestsInFlight: inFlight}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	cfg = cfg.withDefaults()
	client, err := newClient(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	fx := &fetchFixture{srv: srv, client: client, cfg: cfg}
	rng := rand.New(rand.NewPCG(1, 2))
	for i, n := range sizes {
		b := make([]byte, n)
		for j := range b {
			b[j] = byte(rng.Uint32())
		}
		key := fmt.Sprintf("obj-%03d", i)
		etag := srv.Put(t, "fetch", key, b)
		fx.members = append(fx.members, Member{Key: key, Size: int64(n), ETag: etag})
		fx.data = append(fx.data, b)
	}
	return fx
}

// ownGoroutines counts the goroutines running this package's listing, fetching and framing code;
// the HTTP client's and the test server's connection goroutines are not ours to count.
func ownGoroutines() (int, string) {
	buf := make([]byte, 4<<20)
	dump := string(buf[:runtime.Stack(buf, true)])
	n := 0
	for _, g := range strings.Split(dump, "\n\n") {
		if strings.Contains(g, "s3io.(*fetcher)") || strings.Contains(g, "s3io.startFraming") || strings.Contains(g, "s3io.(*pinnedReader)") || strings.Contains(g, "s3io.(*listing)") {
			n++
		}
	}
	return n, dump
}

// settleGoroutines fails the test if goroutines of this package outlive their read.
func settleGoroutines(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		n, dump := ownGoroutines()
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d fetching goroutines remain after the read ended:\n%s", n, dump)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Every byte of every object arrives in order, however the parts interleave, while the
// fetched-but-unread bytes never exceed the budget and the requests in flight never exceed
// their cap; the reader is slow, so the budget, not the reader, is what stops the fetcher.
func TestFetcherOrderBudgetAndRequests(t *testing.T) {
	const part, budget, inFlight = 64 << 10, 300 << 10, 4
	sizes := []int{0, 1, part - 1, part, part + 1, 3*part + 17, 10, 0, 5 * part, 100, 2*part - 3}
	fx := newFetchFixture(t, part, budget, inFlight, sizes)

	f := newFetcher(context.Background(), fx.client, &fx.cfg, "fetch")
	var streams []*objectStream
	for _, m := range fx.members {
		streams = append(streams, f.add(m, 0, m.Size).stream())
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
				t.Fatalf("%s: %v", fx.members[i].Key, err)
			}
			time.Sleep(time.Millisecond / 4)
		}
		s.close()
		if !bytes.Equal(got.Bytes(), fx.data[i]) {
			t.Fatalf("%s: got %d bytes, want %d, or they differ", fx.members[i].Key, got.Len(), len(fx.data[i]))
		}
	}
	f.close()
	used, peak := f.raw.inUse()
	if used != 0 || peak > budget || peak < budget/2 {
		t.Errorf("budget: %d bytes still held, peak %d; want 0 held and a peak in [%d, %d]", used, peak, budget/2, budget)
	}
	if m := f.maxInFlight.Load(); m > inFlight || m < 2 {
		t.Errorf("at most %d requests were in flight; want 2..%d", m, inFlight)
	}
	// One GET per part, and an empty object still gets its pinned GET.
	var wantGets int64
	for _, n := range sizes {
		wantGets += max(int64(n)+part-1, part) / part
	}
	if g := f.gets.Load(); g != wantGets {
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
	fx := newFetchFixture(t, part, 1<<20, 8, []int{8 * part, 3 * part})
	fx.srv.SetFault("obj-000", fmt.Sprintf("bytes=%d-", 2*part), 1, faultproxy.Fault{Stall: 10 * time.Second})

	f := newFetcher(context.Background(), fx.client, &fx.cfg, "fetch")
	first := f.add(fx.members[0], 0, fx.members[0].Size).stream()
	second := f.add(fx.members[1], 0, fx.members[1].Size).stream()
	buf := make([]byte, 2*part)
	if _, err := io.ReadFull(first, buf); err != nil || !bytes.Equal(buf, fx.data[0][:2*part]) {
		t.Fatalf("first two parts: %v", err)
	}
	start := time.Now()
	first.close() // the third part is stalled on the server
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("dropping took %v: it waited for the stalled request", d)
	}
	got, err := io.ReadAll(second)
	if err != nil || !bytes.Equal(got, fx.data[1]) {
		t.Fatalf("second object after the drop: %d bytes, %v", len(got), err)
	}
	second.close()
	f.close()
	if used, _ := f.raw.inUse(); used != 0 {
		t.Errorf("%d bytes still held after close", used)
	}
	if f.cancelled.Load() < 1 {
		t.Errorf("cancelled = %d, want the stalled part counted", f.cancelled.Load())
	}
	settleGoroutines(t)
}

// A fetcher closed with objects never read (the restriction ended or failed) releases
// everything without any reader.
func TestFetcherCloseUnread(t *testing.T) {
	fx := newFetchFixture(t, 16<<10, 64<<10, 2, []int{100 << 10, 50 << 10, 1})
	f := newFetcher(context.Background(), fx.client, &fx.cfg, "fetch")
	var fetches []*objectFetch
	for _, m := range fx.members {
		fetches = append(fetches, f.add(m, 0, m.Size))
	}
	time.Sleep(50 * time.Millisecond)
	for _, of := range fetches {
		of.drop()
	}
	f.close()
	if used, _ := f.raw.inUse(); used != 0 {
		t.Errorf("%d bytes still held after close", used)
	}
	settleGoroutines(t)
}

// The budget admits what fits, makes the rest wait, and lets an oversized acquisition
// through only when nothing else is held.
func TestBudget(t *testing.T) {
	b := newBudget(100)
	ctx := context.Background()
	if !b.acquire(ctx, 60) || !b.acquire(ctx, 40) {
		t.Fatal("acquisitions within the limit must not wait")
	}
	got := make(chan bool)
	go func() { got <- b.acquire(ctx, 1) }()
	select {
	case <-got:
		t.Fatal("acquired beyond the limit")
	case <-time.After(50 * time.Millisecond):
	}
	b.release(60)
	if !<-got {
		t.Fatal("a release did not admit the waiter")
	}
	b.release(41)
	if !b.acquire(ctx, 500) {
		t.Fatal("an oversized acquisition must pass when nothing is held")
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if b.acquire(cctx, 1) {
		t.Fatal("acquired with a cancelled context while the budget was full")
	}
	if used, peak := b.inUse(); used != 500 || peak != 500 {
		t.Errorf("used %d peak %d, want 500 500", used, peak)
	}
}

// A checkpoint taken while later parts of the object are in flight hands the residual an
// exact resume point: its first GET starts on the byte after the last emitted record, and
// primary and residual together emit every record once.
func TestCheckpointWhilePartsInFlight(t *testing.T) {
	f := newResumeFixture(t, "parts.txt", 3000, identity, Config{PartBytes: 16 << 10, MaxRequestsInFlight: 8})
	const k = 1000
	var residual restriction
	primary := f.run(t, fullRestriction(f.desc), checkpointAfter(t, k, &residual))
	if len(primary) != k {
		t.Fatalf("primary emitted %d records after a checkpoint at %d", len(primary), k)
	}
	primaryGets := len(f.srv.Requests("parts.txt"))
	rest := f.run(t, residual, nil)
	if got := append(primary, rest...); !slices.Equal(got, f.recs) {
		t.Fatalf("primary+residual gave %d records, want the object's %d in order", len(got), len(f.recs))
	}
	// The residual's parts are aligned on its resume point, the primary's on byte 0: the
	// residual's first part starts exactly after the last record the primary emitted.
	reqs := f.srv.Requests("parts.txt")
	want := fmt.Sprintf("bytes=%d-%d", f.ends[k-1], f.ends[k-1]+16<<10-1)
	if !slices.ContainsFunc(reqs, func(r s3test.Request) bool { return r.Range == want }) {
		t.Errorf("no GET with Range %q among %+v", want, reqs)
	}
	// The primary fetched ahead of its checkpoint, but not the whole object.
	if primaryGets < 2 || primaryGets >= len(reqs) {
		t.Errorf("primary made %d of %d GETs", primaryGets, len(reqs))
	}
	settleGoroutines(t)
}

// An object overwritten between two of its parts fails on the part after the overwrite with
// 412: it is quarantined as overwritten, after exactly the records of the parts before, and
// nothing of the new version is emitted.
func TestPartAfterOverwriteIsQuarantined(t *testing.T) {
	const part = 16 << 10
	f := newResumeFixture(t, "over.txt", 2000, identity, Config{PartBytes: part, MaxRequestsInFlight: 1})
	f.srv.SetFault("over.txt", "bytes=0-", 1, faultproxy.Fault{StallAfter: 1, Stall: 2 * time.Second})
	go func() {
		for len(f.srv.Requests("over.txt")) == 0 {
			time.Sleep(5 * time.Millisecond)
		}
		f.srv.Put(t, "resume", "over.txt", []byte("new version\n"))
	}()
	rt := f.fn.CreateTracker(fullRestriction(f.desc))
	var got []string
	var failures []Failure
	err := f.fn.process(context.Background(), rt, f.desc, func(_ int, _ int64, rec []byte) { got = append(got, string(rec)) },
		func(fl Failure) { failures = append(failures, fl) })
	if err != nil {
		t.Fatal(err)
	}
	inFirst := 0
	for inFirst < len(f.ends) && f.ends[inFirst] <= part {
		inFirst++
	}
	if !slices.Equal(got, f.recs[:inFirst]) {
		t.Errorf("emitted %d records, want the %d that end in the first part", len(got), inFirst)
	}
	if len(failures) != 1 || failures[0].Reason != ReasonOverwritten || failures[0].Index != int64(inFirst) || failures[0].ETag != f.desc.Members[0].ETag {
		t.Fatalf("failures = %+v, want one %q at record %d pinned to %s", failures, ReasonOverwritten, inFirst, f.desc.Members[0].ETag)
	}
	settleGoroutines(t)
}

// With VerifyChecksums an object larger than a part is streamed with one whole-object GET,
// because S3 validates checksums of whole objects only; smaller ones are one part anyway.
func TestVerifyChecksumsReadsWholeObjects(t *testing.T) {
	fx := newFetchFixture(t, 16<<10, 64<<10, 4, []int{100 << 10, 5 << 10, 0})
	fx.cfg.VerifyChecksums = true
	f := newFetcher(context.Background(), fx.client, &fx.cfg, "fetch")
	for i, m := range fx.members {
		s := f.add(m, 0, m.Size).stream()
		got, err := io.ReadAll(s)
		s.close()
		if err != nil || !bytes.Equal(got, fx.data[i]) {
			t.Fatalf("%s: %d bytes, %v", m.Key, len(got), err)
		}
		if reqs := fx.srv.Requests(m.Key); len(reqs) != 1 || reqs[0].Range != "" {
			t.Errorf("%s: GETs %+v, want one whole-object GET", m.Key, reqs)
		}
	}
	f.close()
	settleGoroutines(t)
}
