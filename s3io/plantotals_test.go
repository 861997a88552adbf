package s3io

import (
	"context"
	"fmt"
	"testing"

	"github.com/spate-io/beam-s3/internal/fakelist"
	"github.com/spate-io/beam-s3/internal/s3test"
)

// planTotalsFixture plans n listed objects of about 100 KiB (more with extra, an object of
// 1 MiB whose key sorts last), in descriptors of about 1 MiB.
func planTotalsFixture(t *testing.T, n int, extra bool) ([]SplitDescriptor, PlanStats) {
	t.Helper()
	s3test.SetAWSEnv(t, "test", "test")
	keys := n
	if extra {
		keys++
	}
	srv := fakelist.New(fakelist.Options{Bucket: "totals", N: keys, MaxKeysCap: 100,
		Key: func(i int) string {
			if i == n {
				return "events/zz-late.json"
			}
			return fmt.Sprintf("events/%05d.json", i)
		},
		Size: func(i int) int64 {
			if i == n {
				return 1 << 20 // the target: a descriptor of its own, not cut
			}
			return 64<<10 + int64(i%7)<<13
		}})
	t.Cleanup(srv.Close)
	cfg := Config{Bucket: "totals", Prefix: "events/", Endpoint: srv.URL, UsePathStyle: true, Region: "us-east-1",
		SplitTargetBytes: 1 << 20, Compression: CompressionNone}
	var ds []SplitDescriptor
	st, err := PlanDescriptors(context.Background(), cfg, func(d SplitDescriptor) error {
		ds = append(ds, d)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return ds, st
}

// Every descriptor of a plan carries the plan's totals, which add up to what its descriptors
// hold; they are not part of the descriptor's ID, so the same objects keep their
// descriptor's ID in a plan whose totals changed.
func TestPlanTotalsTravelWithDescriptors(t *testing.T) {
	ds, st := planTotalsFixture(t, 600, false)
	var objects, bytes int64
	for _, d := range ds {
		if d.PlanObjects != st.Objects || d.PlanBytes != st.Bytes {
			t.Fatalf("descriptor %s carries totals %d objects, %d bytes; the plan has %d, %d", d.ID, d.PlanObjects, d.PlanBytes, st.Objects, st.Bytes)
		}
		if id := splitID(d.Bucket, d.Members); id != d.ID {
			t.Fatalf("descriptor %s: its members digest to %s", d.ID, id)
		}
		objects += int64(len(d.Members))
		bytes += d.Size()
	}
	if len(ds) < 20 || objects != st.Objects || bytes != st.Bytes {
		t.Fatalf("%d descriptors of %d objects and %d bytes; the plan has %d, %d", len(ds), objects, bytes, st.Objects, st.Bytes)
	}

	// One more object, after every other key: the totals of every descriptor change, and
	// the IDs of all but the last (which may take the object in) do not.
	grown, gst := planTotalsFixture(t, 600, true)
	if gst.Objects != st.Objects+1 || gst.Bytes != st.Bytes+1<<20 {
		t.Fatalf("grown plan: %d objects, %d bytes; want %d, %d", gst.Objects, gst.Bytes, st.Objects+1, st.Bytes+1<<20)
	}
	for i, g := range grown {
		if g.PlanObjects != gst.Objects || g.PlanBytes != gst.Bytes {
			t.Fatalf("descriptor %d of the grown plan carries %d objects, %d bytes; want %d, %d", i, g.PlanObjects, g.PlanBytes, gst.Objects, gst.Bytes)
		}
	}
	for i, d := range ds[:len(ds)-1] {
		if g := grown[i]; g.ID != d.ID || len(g.Members) != len(d.Members) {
			t.Fatalf("descriptor %d: ID %s of %d members, in the grown plan %s of %d", i, d.ID, len(d.Members), g.ID, len(g.Members))
		}
	}
}

// A plan too large to hold is sent as it is packed: the same descriptors and IDs, without
// the totals the planner did not know yet, and with them on those packed after its listing
// ended.
func TestPlanTotalsOfASpilledPlan(t *testing.T) {
	held, st := planTotalsFixture(t, 600, false)
	defer func(b int64) { maxHeldPlanBytes = b }(maxHeldPlanBytes)
	maxHeldPlanBytes = 4 << 10
	spilled, sst := planTotalsFixture(t, 600, false)
	if sst.Objects != st.Objects || len(spilled) != len(held) {
		t.Fatalf("spilled plan: %d descriptors of %d objects; held: %d of %d", len(spilled), sst.Objects, len(held), st.Objects)
	}
	without := 0
	for i, d := range spilled {
		if d.ID != held[i].ID {
			t.Fatalf("descriptor %d: ID %s, held plan's %s", i, d.ID, held[i].ID)
		}
		switch {
		case d.PlanObjects == 0 && d.PlanBytes == 0:
			without++
		case d.PlanObjects != st.Objects || d.PlanBytes != st.Bytes:
			t.Fatalf("descriptor %d carries %d objects, %d bytes; the plan has %d, %d", i, d.PlanObjects, d.PlanBytes, st.Objects, st.Bytes)
		}
	}
	if last := spilled[len(spilled)-1]; without == 0 || last.PlanObjects != st.Objects {
		t.Fatalf("%d of %d descriptors without totals, the last carrying %d objects: want the first without, the last with", without, len(spilled), last.PlanObjects)
	}
}
