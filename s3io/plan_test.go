package s3io

import (
	"fmt"
	"testing"
)

func listing(sizes ...int64) []Member {
	out := make([]Member, len(sizes))
	for i, s := range sizes {
		out[i] = Member{Key: fmt.Sprintf("k/%03d", i), Size: s, ETag: fmt.Sprintf(`"etag-%d"`, i)}
	}
	return out
}

func TestPackMembers(t *testing.T) {
	for _, tc := range []struct {
		name       string
		sizes      []int64
		target     int64
		maxMembers int
		want       [][]int // member indexes per descriptor
	}{
		{"empty", nil, 100, 10, nil},
		{"fits one", []int64{10, 20, 30}, 100, 10, [][]int{{0, 1, 2}}},
		{"target respected", []int64{40, 40, 40, 40}, 100, 10, [][]int{{0, 1}, {2, 3}}},
		{"exact target closes the split", []int64{50, 50, 1}, 100, 10, [][]int{{0, 1}, {2}}},
		{"large object alone", []int64{10, 500, 10}, 100, 10, [][]int{{0}, {1}, {2}}},
		{"member cap", []int64{1, 1, 1, 1, 1}, 100, 2, [][]int{{0, 1}, {2, 3}, {4}}},
		{"zero-byte objects are members", []int64{0, 0, 0}, 100, 10, [][]int{{0, 1, 2}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := listing(tc.sizes...)
			got := packMembers("b", objs, tc.target, tc.maxMembers)
			if len(got) != len(tc.want) {
				t.Fatalf("got %d descriptors, want %d: %+v", len(got), len(tc.want), got)
			}
			for i, d := range got {
				if len(d.Members) != len(tc.want[i]) {
					t.Fatalf("descriptor %d has %d members, want %v", i, len(d.Members), tc.want[i])
				}
				for j, m := range d.Members {
					if m != objs[tc.want[i][j]] {
						t.Errorf("descriptor %d member %d = %+v, want %+v", i, j, m, objs[tc.want[i][j]])
					}
				}
				if d.Size() > tc.target && len(d.Members) > 1 {
					t.Errorf("descriptor %d holds %d bytes in %d members, over the target %d", i, d.Size(), len(d.Members), tc.target)
				}
				if d.ID != SplitID("b", d.Members) || d.Bucket != "b" {
					t.Errorf("descriptor %d: ID %s bucket %s, want %s and b", i, d.ID, d.Bucket, SplitID("b", d.Members))
				}
			}
		})
	}
}

func TestSplitIDs(t *testing.T) {
	objs := listing(60, 60, 60, 60, 60, 60)
	first := packMembers("b", objs, 100, 10)
	again := packMembers("b", listing(60, 60, 60, 60, 60, 60), 100, 10)
	for i := range first {
		if first[i].ID != again[i].ID {
			t.Fatalf("replan changed split %d's ID: %s -> %s", i, first[i].ID, again[i].ID)
		}
	}
	seen := map[string]bool{}
	for _, d := range first {
		if seen[d.ID] {
			t.Fatalf("two splits share ID %s", d.ID)
		}
		seen[d.ID] = true
	}

	// An overwritten object (new ETag) changes its own split's ID and no other.
	changed := listing(60, 60, 60, 60, 60, 60)
	changed[3].ETag = `"etag-new"`
	after := packMembers("b", changed, 100, 10)
	for i := range first {
		if (first[i].ID != after[i].ID) != (i == 3) {
			t.Errorf("split %d: ID %s -> %s; only split 3 should change", i, first[i].ID, after[i].ID)
		}
	}

	// Length-prefixing keeps concatenations apart, and the bucket and version count.
	a := SplitID("b", []Member{{Key: "ab", ETag: "c"}})
	b := SplitID("b", []Member{{Key: "a", ETag: "bc"}})
	c := SplitID("other", []Member{{Key: "ab", ETag: "c"}})
	if a == b || a == c {
		t.Errorf("distinct splits share an ID: %s %s %s", a, b, c)
	}
	if len(a) != 32 {
		t.Errorf("ID %q is not 32 hex digits", a)
	}
}
