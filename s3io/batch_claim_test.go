package s3io

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/sdf"
)

// TestBatcherClaimsAgainstConcurrentSplits drives the batcher of ReadBatches through a
// LockRTracker while another goroutine splits the same tracker at random fractions, as a
// runner does, and reads every residual the same way. Every record must be emitted exactly
// once, in batches that name their first record and stay within the bounds and one
// member; every resume hint must point at the true start of its record; the primary's
// progress must always add up to its size.
func TestBatcherClaimsAgainstConcurrentSplits(t *testing.T) {
	splits, cut, hinted := 0, 0, 0
	for seed := uint64(0); seed < 400; seed++ {
		s, c, h := checkBatcherConcurrent(t, seed)
		splits, cut, hinted = splits+s, cut+c, hinted+h
	}
	if splits < 200 || cut < 50 || hinted < 50 {
		t.Fatalf("only %d splits, %d runs cut short by a split and %d hinted resumes: the test lost its teeth", splits, cut, hinted)
	}
	t.Logf("%d concurrent splits, %d runs cut short, %d hinted resumes", splits, cut, hinted)
}

func checkBatcherConcurrent(t *testing.T, seed uint64) (splits, cut, hinted int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 0xba7c))
	n := 1 + rng.IntN(4)
	d := SplitDescriptor{ID: fmt.Sprint("seed-", seed), Members: make([]Member, n)}
	offsets := make([][]int64, n)
	for m := range n {
		off := int64(0)
		for range rng.IntN(400) {
			offsets[m] = append(offsets[m], off)
			off += 1 + rng.Int64N(60)
		}
		offsets[m] = append(offsets[m], off)
		d.Members[m] = Member{Key: fmt.Sprint("k", m), Size: off}
	}
	count := func(m int) int64 { return int64(len(offsets[m]) - 1) }
	maxRecs, maxBytes := 1+rng.IntN(40), 1+rng.IntN(200)
	fn := &reader{Cfg: Config{BatchRecords: maxRecs, BatchBytes: maxBytes}, resumable: true}

	var mu sync.Mutex
	emitted := map[position]int{}
	emit := func(b RecordBatch) {
		if b.Len() == 0 || b.Len() > maxRecs {
			t.Fatalf("seed %d: batch of %d records, bound %d", seed, b.Len(), maxRecs)
		}
		size := 0
		for i := range b.Len() {
			r := b.Record(i)
			size += len(r)
			if want := fmt.Sprintf("%d:%d", b.Member, b.Index+int64(i)); string(r) != want {
				t.Fatalf("seed %d: batch %s/%d/%d record %d is %q, want %q", seed, b.SplitID, b.Member, b.Index, i, r, want)
			}
			mu.Lock()
			emitted[position{Member: b.Member, Index: b.Index + int64(i)}]++
			mu.Unlock()
		}
		if size > maxBytes && b.Len() > 1 {
			t.Fatalf("seed %d: batch of %d bytes in %d records, bound %d", seed, size, b.Len(), maxBytes)
		}
		if b.SplitID != d.ID || b.Key != d.Members[b.Member].Key {
			t.Fatalf("seed %d: batch names %s/%s", seed, b.SplitID, b.Key)
		}
	}

	queue := []restriction{fullRestriction(d)}
	budget := 60 // splits over the whole descriptor
	for len(queue) > 0 {
		rest := queue[0]
		queue = queue[1:]
		if err := rest.valid(n); err != nil {
			t.Fatalf("seed %d: %+v: %v", seed, rest, err)
		}
		rt := sdf.NewLockRTracker(newTracker(rest))
		stop, done := make(chan struct{}), make(chan struct{})
		var residuals []restriction
		splitRng := rand.New(rand.NewPCG(seed, uint64(len(queue))))
		go func() { // the runner
			defer close(done)
			for {
				select {
				case <-stop:
					return
				default:
				}
				runtime.Gosched()
				if budget <= 0 || splitRng.IntN(8) > 0 {
					continue
				}
				f := []float64{0, splitRng.Float64(), 0.5, 1}[splitRng.IntN(4)]
				p, r, err := rt.TrySplit(f)
				if err != nil {
					t.Errorf("seed %d: TrySplit(%v): %v", seed, f, err)
					return
				}
				if r != nil {
					budget--
					splits++
					residuals = append(residuals, r.(restriction))
					pr, rr := p.(restriction), r.(restriction)
					if pr.End != rr.Start {
						t.Errorf("seed %d: split %+v / %+v", seed, pr, rr)
					}
				}
				if done, rem := rt.GetProgress(); done < 0 || rem < 0 || done+rem != rt.GetRestriction().(restriction).size() {
					t.Errorf("seed %d: progress %v + %v for %+v", seed, done, rem, rt.GetRestriction())
				}
			}
		}()
		bt := fn.newBatcher(d, emit)
		bt.storedOffsets = true
		readRng := rand.New(rand.NewPCG(seed, uint64(len(queue))+1000))
	members:
		for m := rest.Start.Member; ; m++ {
			first := int64(0)
			idx := int64(0)
			if m == rest.Start.Member {
				first = rest.Start.Index
				if h := rest.Resume; h.Known() {
					hinted++
					if h.Index > count(m) || offsets[m][h.Index] != h.Offset || !h.StoredOffsets {
						t.Fatalf("seed %d: hint %+v for member %d, whose record %d starts at %d", seed, h, m, h.Index, offsets[m][min(h.Index, count(m))])
					}
					idx = h.Index
				}
			}
			if !rt.TryClaim(position{Member: m, Index: first}) {
				break
			}
			bt.open(m, first)
			for ; idx < count(m); idx++ {
				if idx < first {
					continue
				}
				runtime.Gosched() // let the runner in between records
				rec := []byte(fmt.Sprintf("%d:%d", m, idx))
				end := offsets[m][idx+1]
				stored := min(end+readRng.Int64N(100), d.Members[m].Size)
				if bt.add(rt, idx, "", rec, end, stored) {
					cut++
					break members
				}
				if readRng.IntN(16) == 0 && bt.flush(rt) { // the framer is not ready
					cut++
					break members
				}
			}
			if bt.flush(rt) {
				cut++
				break
			}
		}
		close(stop)
		<-done
		if err := rt.GetError(); err != nil {
			t.Fatalf("seed %d: tracker over %+v: %v", seed, rest, err)
		}
		if !rt.IsDone() {
			t.Fatalf("seed %d: tracker over %+v, now %+v, not done", seed, rest, rt.GetRestriction())
		}
		queue = append(queue, residuals...)
	}
	var got, want []string
	for m := range n {
		for r := range count(m) {
			want = append(want, fmt.Sprintf("%d:%d", m, r))
		}
	}
	for p, c := range emitted {
		for range c {
			got = append(got, fmt.Sprintf("%d:%d", p.Member, p.Index))
		}
	}
	sort.Strings(got)
	sort.Strings(want)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("seed %d: emitted %d records, want %d each once; first differences: %s", seed, len(got), len(want), firstDiff(got, want))
	}
	return splits, cut, hinted
}

func firstDiff(got, want []string) string {
	var b strings.Builder
	for i := 0; i < max(len(got), len(want)) && b.Len() < 200; i++ {
		var g, w string
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			fmt.Fprintf(&b, "[%d] got %q want %q; ", i, g, w)
		}
	}
	return b.String()
}

// A run claim grants exactly the records before the restriction's end, and leaves the
// resume hint and the bytes read of its last granted record.
func TestClaimRunGrantsThePrefixBeforeTheEnd(t *testing.T) {
	d := SplitDescriptor{Members: []Member{{Key: "a", Size: 1000}, {Key: "b", Size: 1000}}}
	tr := newTracker(fullRestriction(d))
	if !tr.TryClaim(position{Member: 0}) {
		t.Fatal("opening claim failed")
	}
	if got := tr.claimRun(&runClaim{Member: 0, From: 1, Ends: []int64{20, 30, 40}, Stored: []int64{100, 100, 100}, Hint: true, StoredOffsets: true}); got != 3 {
		t.Fatalf("claimRun granted %d, want 3", got)
	}
	// A checkpoint now lands after record 3, with the hint of record 3's end.
	_, res, _ := tr.TrySplit(0)
	r := res.(restriction)
	if r.Start != (position{Member: 0, Index: 4}) || r.Resume != (resumeHint{Index: 4, Offset: 40, StoredOffsets: true}) {
		t.Fatalf("residual %+v, want it to start at record 4 resuming at byte 40", r)
	}
	if got := tr.claimRun(&runClaim{Member: 0, From: 4, Ends: []int64{50}, Stored: []int64{100}, Hint: true}); got != 0 || !tr.IsDone() || tr.GetError() != nil {
		t.Fatalf("claimRun past the end granted %d, done %v, err %v", got, tr.IsDone(), tr.GetError())
	}

	// A split inside a run: only the records before it are granted, and the reader stops.
	tr = newTracker(fullRestriction(d))
	tr.rest.End = position{Member: 1, Index: 2}
	tr.rest.Sizes = []int64{1000, 500}
	tr.TryClaim(position{Member: 1})
	if got := tr.claimRun(&runClaim{Member: 1, From: 1, Ends: []int64{10, 20, 30}, Stored: []int64{5, 6, 7}, Hint: true}); got != 1 {
		t.Fatalf("claimRun across the end granted %d, want 1", got)
	}
	if tr.claimed != (position{Member: 1, Index: 1}) || tr.hint.Offset != 10 || tr.storedRead != 5 || !tr.IsDone() {
		t.Fatalf("after a cut run: claimed %v hint %+v stored %d done %v", tr.claimed, tr.hint, tr.storedRead, tr.IsDone())
	}
	if tr.claimRun(&runClaim{Member: 1, From: 2, Ends: []int64{1}, Stored: []int64{1}}) != 0 || tr.GetError() == nil {
		t.Fatal("a claim after a cut run must be refused as misuse")
	}
	// Claims must increase.
	tr = newTracker(fullRestriction(d))
	tr.TryClaim(position{Member: 0, Index: 5})
	if tr.claimRun(&runClaim{Member: 0, From: 5, Ends: []int64{1}, Stored: []int64{1}}) != 0 || tr.GetError() == nil {
		t.Fatal("a run over a claimed record must be refused as misuse")
	}
}

// A batch's records are Data cut at Ends: empty records included, each capped so that an
// append to one copies instead of writing over the next, and All yields them with their
// indexes among the object's records.
func TestRecordBatchLayout(t *testing.T) {
	recs := [][]byte{[]byte("ab"), {}, []byte("cde"), []byte("f")}
	b := copyBatch(SplitDescriptor{ID: "s", Members: []Member{{Key: "k"}}}, 0, 7, "", recs)
	if string(b.Data) != "abcdef" || b.Len() != 4 {
		t.Fatalf("batch Data %q with %d records, want \"abcdef\" and 4", b.Data, b.Len())
	}
	for i, want := range recs {
		if got := b.Record(i); string(got) != string(want) {
			t.Errorf("Record(%d) = %q, want %q", i, got, want)
		}
	}
	_ = append(b.Record(0), 'X')
	if string(b.Data) != "abcdef" {
		t.Errorf("appending to record 0 wrote over its neighbour: Data %q", b.Data)
	}
	i := 0
	for idx, r := range b.All() {
		if idx != 7+int64(i) || string(r) != string(recs[i]) {
			t.Errorf("All yielded %d %q at step %d, want %d %q", idx, r, i, 7+i, recs[i])
		}
		i++
		if i == 3 {
			break // All stops when its loop does
		}
	}
	if i != 3 {
		t.Errorf("All yielded %d records before the break, want 3", i)
	}
	recs[0][0] = 'Z'
	if b.Data[0] != 'a' {
		t.Errorf("the batch shares its records' memory: Data %q after the source changed", b.Data)
	}
}
