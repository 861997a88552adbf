package s3io

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/spate-io/beam-s3/internal/fakelist"
	"github.com/spate-io/beam-s3/internal/s3test"
)

// TestPackBounds: the rules that hold whatever the hashes say.
func TestPackBounds(t *testing.T) {
	seg := func(key string, size, start, end int64) Member {
		return Member{Key: key, Size: size, ETag: `"s"`, Start: start, End: end}
	}
	for _, tc := range []struct {
		name       string
		members    []Member
		target     int64
		maxMembers int
		want       [][]int // member indexes per descriptor
	}{
		{"empty", nil, 100, 10, nil},
		{"objects over the byte bound alone", sizedListing(10, 500, 10), 100, 10, [][]int{{0}, {1}, {2}}},
		{"segments alone", []Member{sizedListing(1)[0], seg("k/big", 300, 0, 100), seg("k/big", 300, 100, 200), seg("k/big", 300, 200, 300)}, 100, 10, [][]int{{0}, {1}, {2}, {3}}},
		{"member cap", sizedListing(0, 0, 0, 0, 0), 1 << 40, 1, [][]int{{0}, {1}, {2}, {3}, {4}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := packMembers("b", tc.members, tc.target, tc.maxMembers)
			if len(got) != len(tc.want) {
				t.Fatalf("got %d descriptors, want %d: %+v", len(got), len(tc.want), got)
			}
			for i, d := range got {
				want := make([]Member, len(tc.want[i]))
				for j, k := range tc.want[i] {
					want[j] = tc.members[k]
				}
				if !slices.Equal(d.Members, want) {
					t.Errorf("descriptor %d = %+v, want %+v", i, d.Members, want)
				}
				if d.ID != splitID("b", d.Members) || d.Bucket != "b" {
					t.Errorf("descriptor %d: ID %s bucket %s, want %s and b", i, d.ID, d.Bucket, splitID("b", d.Members))
				}
			}
		})
	}
}

// sizeLayouts are object-size distributions a prefix may hold, in units of a target of
// 1 MiB: many tiny objects, objects around a hundredth of the target, a heavy-tailed mix,
// and objects near a third of it.
func sizeLayouts() map[string]func(*rand.Rand) int64 {
	const mib = 1 << 20
	return map[string]func(*rand.Rand) int64{
		"tiny":      func(r *rand.Rand) int64 { return r.Int64N(200) },
		"hundredth": func(r *rand.Rand) int64 { return mib/200 + r.Int64N(mib/100) },
		"lognormal": func(r *rand.Rand) int64 { return int64(math.Exp(r.NormFloat64()*1.5 + math.Log(mib/50))) },
		"third":     func(r *rand.Rand) int64 { return mib/6 + r.Int64N(mib/3) },
	}
}

func randomListing(rng *rand.Rand, n int, size func(*rand.Rand) int64) []Member {
	out := make([]Member, n)
	for i := range out {
		out[i] = Member{Key: fmt.Sprintf("logs/%08x/part-%d.json", rng.Uint32(), i), Size: size(rng), ETag: fmt.Sprintf(`"%x"`, rng.Uint64())}
	}
	slices.SortFunc(out, func(a, b Member) int { return cmpKey(a.Key, b.Key) })
	return out
}

func cmpKey(a, b string) int {
	if a < b {
		return -1
	}
	if a > b {
		return 1
	}
	return 0
}

// TestPackingDistribution measures descriptor sizes for several object-size layouts and
// checks the documented bounds: no descriptor of several members over 2×target bytes or
// MaxSplitMembers, and a mean near the target. Run with -v for the distribution.
func TestPackingDistribution(t *testing.T) {
	const target, maxMembers = 1 << 20, 1024
	for name, size := range sizeLayouts() {
		rng := rand.New(rand.NewPCG(7, 11))
		ms := randomListing(rng, 200_000, size)
		ds := packMembers("b", ms, target, maxMembers)
		var sizes []float64
		var members []int
		for i, d := range ds {
			if len(d.Members) > 1 && (d.Size() > 4*target || len(d.Members) > maxMembers) {
				t.Errorf("%s: descriptor %d holds %d members and %d bytes, over the bounds", name, i, len(d.Members), d.Size())
			}
			if i < len(ds)-1 { // the last one ends with the listing
				sizes = append(sizes, float64(d.Size())/target)
				members = append(members, len(d.Members))
			}
		}
		slices.Sort(sizes)
		slices.Sort(members)
		var sum float64
		for _, s := range sizes {
			sum += s
		}
		q := func(p float64) float64 { return sizes[int(p*float64(len(sizes)-1))] }
		t.Logf("%-9s %6d descriptors: size/target mean %.2f p1 %.2f p10 %.2f p50 %.2f p90 %.2f p99 %.2f max %.2f; members p50 %d max %d",
			name, len(ds), sum/float64(len(sizes)), q(0.01), q(0.10), q(0.5), q(0.9), q(0.99), sizes[len(sizes)-1], members[len(members)/2], members[len(members)-1])
	}
}

// idDiff returns how many IDs of a are not in b and how many of b are not in a.
func idDiff(a, b []SplitDescriptor) (gone, added int) {
	ids := func(ds []SplitDescriptor) map[string]bool {
		m := map[string]bool{}
		for _, d := range ds {
			m[d.ID] = true
		}
		return m
	}
	ia, ib := ids(a), ids(b)
	for id := range ia {
		if !ib[id] {
			gone++
		}
	}
	for id := range ib {
		if !ia[id] {
			added++
		}
	}
	return gone, added
}

// TestPackingEditsAreLocal: one object added, removed or overwritten (new ETag and size)
// changes the IDs of the descriptor that holds it and at most one neighbour. Run with -v
// for how often an edit touched one, two or more descriptors.
func TestPackingEditsAreLocal(t *testing.T) {
	const target, maxMembers = 1 << 20, 1024
	for name, size := range sizeLayouts() {
		rng := rand.New(rand.NewPCG(3, 5))
		ms := randomListing(rng, 10_000, size)
		before := packMembers("b", ms, target, maxMembers)
		hist := map[int]int{}
		for range 200 {
			edited := slices.Clone(ms)
			i := rng.IntN(len(ms))
			var what string
			switch rng.IntN(3) {
			case 0:
				what = "add"
				m := Member{Key: ms[i].Key + "-new", Size: size(rng), ETag: `"new"`}
				edited = slices.Insert(edited, i+1, m)
			case 1:
				what = "remove"
				edited = slices.Delete(edited, i, i+1)
			default:
				what = "overwrite"
				edited[i].Size, edited[i].ETag = size(rng), `"changed"`
			}
			gone, added := idDiff(before, packMembers("b", edited, target, maxMembers))
			hist[max(gone, added)]++
			if gone > 2 || added > 2 {
				t.Errorf("%s: %s of %s changed %d IDs and added %d", name, what, ms[i].Key, gone, added)
			}
		}
		t.Logf("%-9s descriptors touched per edit: %v", name, hist)
	}
}

// TestReplanChangesFewIDs: the planner, listing a prefix of 2,000 objects in pages of 100
// (in parallel, and one page at a time), then the same prefix with one object added in the
// middle, one removed and one overwritten: at most 6 IDs differ between the plans, 2 per
// edit, and both plans are the same whatever the parallelism.
func TestReplanChangesFewIDs(t *testing.T) {
	s3test.SetAWSEnv(t, "test", "test")
	rng := rand.New(rand.NewPCG(21, 4))
	type object struct {
		key, etag string
		size      int64
	}
	var objects []object
	for i := range 2000 {
		objects = append(objects, object{fmt.Sprintf("events/%04d/%06x.json", i/100, rng.Uint32()), fmt.Sprintf(`"%032x"`, i), 4<<10 + rng.Int64N(60<<10)})
	}
	slices.SortFunc(objects, func(a, b object) int { return cmpKey(a.key, b.key) })
	plan := func(objects []object, parallelism int) []SplitDescriptor {
		srv := fakelist.New(fakelist.Options{Bucket: "replan", N: len(objects), MaxKeysCap: 100,
			Key:  func(i int) string { return objects[i].key },
			Size: func(i int) int64 { return objects[i].size },
			ETag: func(i int) string { return objects[i].etag }})
		defer srv.Close()
		cfg := Config{Bucket: "replan", Prefix: "events/", Endpoint: srv.URL, UsePathStyle: true, Region: "us-east-1",
			SplitTargetBytes: 1 << 20, ListParallelism: parallelism, Compression: CompressionNone}
		var ds []SplitDescriptor
		if _, err := PlanDescriptors(context.Background(), cfg, func(d SplitDescriptor) error {
			ds = append(ds, d)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return ds
	}
	edited := slices.Clone(objects)
	edited = slices.Insert(edited, 1000, object{objects[999].key + "-late", `"added"`, 30 << 10}) // sorts between 999 and 1000
	edited = slices.Delete(edited, 400, 401)
	edited[1500].etag, edited[1500].size = `"overwritten"`, 50<<10

	var plans [2][]SplitDescriptor
	for _, p := range []int{1, defaultListParallelism} {
		before, after := plan(objects, p), plan(edited, p)
		for _, ds := range [][]SplitDescriptor{before, after} {
			for _, d := range ds {
				if len(d.Members) > 1 && (d.Size() > maxTargetMultiple<<20 || len(d.Members) > defaultMaxSplitMembers) {
					t.Errorf("descriptor %s: %d members, %d bytes: over the bounds", d.ID, len(d.Members), d.Size())
				}
			}
		}
		gone, added := idDiff(before, after)
		t.Logf("parallelism %d: %d descriptors before, %d after; %d IDs gone, %d new", p, len(before), len(after), gone, added)
		if gone > 6 || added > 6 {
			t.Errorf("parallelism %d: three edits changed %d IDs and added %d, want at most 6 each", p, gone, added)
		}
		if plans[0] == nil {
			plans = [2][]SplitDescriptor{before, after}
			continue
		}
		for i, ds := range [][]SplitDescriptor{before, after} {
			if g, a := idDiff(plans[i], ds); g+a != 0 || len(ds) != len(plans[i]) {
				t.Errorf("plan %d differs between parallelism 1 and %d: %d IDs gone, %d new", i, p, g, a)
			}
		}
	}
}

// BenchmarkPacker measures the packer's cost per member (the anchor hash dominates).
func BenchmarkPacker(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	ms := randomListing(rng, 100_000, sizeLayouts()["hundredth"])
	b.ResetTimer()
	for b.Loop() {
		p := &packer{bucket: "b", target: 1 << 20, maxMembers: 1024, emit: func(SplitDescriptor) error { return nil }}
		for _, m := range ms {
			_ = p.add(m)
		}
		_ = p.flush()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(ms)), "ns/member")
}

// packMembers packs a whole sorted listing, as the planner's packSink streams it.
func packMembers(bucket string, objects []Member, target int64, maxMembers int) []SplitDescriptor {
	var out []SplitDescriptor
	p := &packer{bucket: bucket, target: target, maxMembers: maxMembers, emit: func(d SplitDescriptor) error {
		out = append(out, d)
		return nil
	}}
	for _, o := range objects {
		_ = p.add(o)
	}
	_ = p.flush()
	return out
}

// A whole object of the target size or more is always an anchor that cuts: it ends the
// descriptor it joins, whatever smaller objects came before it in that descriptor.
func TestLargeObjectEndsItsDescriptor(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	joined := 0
	for round := 0; round < 200; round++ {
		sizes := make([]int64, 40)
		for i := range sizes {
			sizes[i] = 1 + r.Int64N(30)
			if r.IntN(6) == 0 {
				sizes[i] = 100 + r.Int64N(300)
			}
		}
		for i, d := range packMembers("b", sizedListing(sizes...), 100, 10) {
			for j, m := range d.Members {
				if m.Size >= 100 && j != len(d.Members)-1 {
					t.Fatalf("round %d: descriptor %d holds a %d-byte object (target 100) at %d of %d members: it must end its descriptor", round, i, m.Size, j, len(d.Members))
				}
				if m.Size >= 100 && j > 0 {
					joined++
				}
			}
		}
	}
	if joined == 0 {
		t.Fatalf("no large object joined a descriptor after smaller ones: the test shows nothing")
	}
}
