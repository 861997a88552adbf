package main

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spate-io/beam-s3/s3io"
)

// results is what the two passes did, as their files and counters say, beside what the
// program wrote to the bucket.
type results struct {
	seeded, now map[string]object // the bucket before pass 1 and before pass 2
	edits       edits
	failing     string // the key whose GETs failed during pass 1
	failedGets  int64
	c1, c2      map[string]int64 // s3io's counters of each pass
	elapsed1    time.Duration
	elapsed2    time.Duration

	plan1, plan2, read2  []planLine
	failures1, failures2 []s3io.Failure

	mismatches []string
}

func (r *results) check(ok bool, format string, args ...any) {
	if !ok {
		r.mismatches = append(r.mismatches, fmt.Sprintf(format, args...))
	}
}

// short names a key without the seeded prefix, to keep the summary's lines short.
func short(key string) string { return strings.TrimPrefix(key, embeddedPrefix) }

// report prints what each pass read, checks it against what was seeded and edited, and
// returns errMismatch if anything differs.
func (r *results) report() error {
	r.reportPass1()
	r.reportPass2()
	if len(r.mismatches) > 0 {
		for _, m := range r.mismatches {
			fmt.Printf("MISMATCH: %s\n", m)
		}
		return errMismatch
	}
	fmt.Println("OK: pass 1 read every readable object; pass 2 read every added, overwritten, fixed and failed object, the records of exactly the descriptors it read, and nothing deleted")
	return nil
}

func (r *results) reportPass1() {
	corrupt := objectKey(corruptIndex, "gzip")
	var readable int64
	for _, o := range r.seeded {
		readable += o.Records
	}
	want := readable - r.seeded[r.failing].Records

	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "\npass 1: Plan, write the plan, ReadSplitsWithFailures, write the failures (%v)\n", r.elapsed1.Round(time.Millisecond))
	fmt.Fprintf(w, "  descriptors\t%d\t(SplitTargetBytes %d KiB; the plan file)\n", len(r.plan1), splitTargetBytes>>10)
	fmt.Fprintf(w, "  records\t%d\t(%d in the readable objects, less %d in %s, whose %d GETs failed)\n",
		r.c1["records"], readable, r.seeded[r.failing].Records, short(r.failing), r.failedGets)
	fmt.Fprintf(w, "  failures\t%d\t(the failures file)\n", len(r.failures1))
	w.Flush()
	w = tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	for _, f := range r.failures1 {
		fmt.Fprintf(w, "    %s\t%s\tsplit %s, %d records emitted\n", short(f.Key), f.Reason, f.SplitID, f.Index)
	}
	w.Flush()

	r.check(r.c1["records"] == want, "pass 1 read %d records, want %d", r.c1["records"], want)
	r.check(int64(len(r.plan1)) == r.c1["splits_planned"], "pass 1's plan file has %d descriptors, its splits_planned counter %d", len(r.plan1), r.c1["splits_planned"])
	r.check(r.failedGets > 0, "the server failed no GET of %s in pass 1", short(r.failing))
	r.checkCovers("pass 1's plan", r.plan1, r.seeded)
	wantFailures := map[string]s3io.Reason{corrupt: s3io.ReasonCorrupt, r.failing: s3io.ReasonUnreadable}
	r.check(len(r.failures1) == len(wantFailures), "pass 1 has %d failures, want %d (%s corrupt, %s unreadable)",
		len(r.failures1), len(wantFailures), short(corrupt), short(r.failing))
	for _, f := range r.failures1 {
		r.check(wantFailures[f.Key] == f.Reason, "pass 1 failed %s as %q, want %q", short(f.Key), f.Reason, wantFailures[f.Key])
		r.check(f.Index == 0, "pass 1 emitted %d records of %s before it failed, want 0", f.Index, short(f.Key))
	}
}

// checkCovers checks that a plan holds every object of the bucket once, with the ETag it
// had, and nothing else.
func (r *results) checkCovers(name string, plan []planLine, objs map[string]object) {
	seen := map[string]int{}
	for _, d := range plan {
		for _, m := range d.Members {
			seen[m.Key]++
			o, ok := objs[m.Key]
			r.check(ok, "%s holds %s, which the bucket did not hold", name, short(m.Key))
			r.check(!ok || o.ETag == m.ETag, "%s holds %s with ETag %s, the bucket had %s", name, short(m.Key), m.ETag, o.ETag)
		}
	}
	for k := range objs {
		r.check(seen[k] == 1, "%s holds %s %d times, want once", name, short(k), seen[k])
	}
}

func (r *results) reportPass2() {
	ed := r.edits
	// What pass 2 computed in Beam, recomputed here from the files.
	failed1 := map[string]bool{}
	for _, f := range r.failures1 {
		failed1[f.SplitID] = true
	}
	planned1 := map[string]bool{}
	type was struct{ etag, id string }
	in1 := map[string]was{}
	for _, d := range r.plan1 {
		planned1[d.ID] = true
		for _, m := range d.Members {
			in1[m.Key] = was{m.ETag, d.ID}
		}
	}
	wantRead := map[string]bool{}
	kept := 0
	var deletedIn []string
	for _, d := range r.plan2 {
		if planned1[d.ID] {
			kept++
		}
		if !planned1[d.ID] || failed1[d.ID] {
			wantRead[d.ID] = true
		}
		for _, m := range d.Members {
			if slices.Contains(ed.Deleted, m.Key) {
				deletedIn = append(deletedIn, d.ID)
			}
		}
	}

	// The members of the descriptors pass 2 read, by why they were read.
	var added, overwritten, retried, neighbours, members int
	var wantRecords int64
	readKeys := map[string]string{} // key → the ID of the descriptor pass 2 read it in
	for _, d := range r.read2 {
		r.check(wantRead[d.ID], "pass 2 read descriptor %s, which pass 1 had read", d.ID)
		delete(wantRead, d.ID)
		for _, m := range d.Members {
			members++
			readKeys[m.Key] = d.ID
			wantRecords += r.now[m.Key].Records
			before, ok := in1[m.Key]
			switch {
			case !ok:
				added++
			case before.etag != m.ETag:
				overwritten++
			case failed1[before.id]:
				retried++
			default:
				neighbours++
			}
		}
	}
	for id := range wantRead {
		r.check(false, "pass 2 did not read descriptor %s, which pass 1 did not finish", id)
	}
	failedDescriptors := len(failed1)
	bound := 2 * (ed.count() + failedDescriptors)

	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "\nbetween the passes: added %d objects, overwrote %d, deleted %d, replaced the corrupt one with valid gzip; %s's GETs work again\n",
		len(ed.Added), len(ed.Overwritten), len(ed.Deleted), short(r.failing))
	fmt.Fprintf(w, "\npass 2: done = pass 1's plan less its failures' splits, Except(Plan, done), ReadSplitsWithFailures (%v)\n", r.elapsed2.Round(time.Millisecond))
	fmt.Fprintf(w, "  descriptors planned\t%d\t(%d with an ID pass 1 planned too)\n", len(r.plan2), kept)
	fmt.Fprintf(w, "  already read (skipped)\t%d\t(their ID is in done)\n", r.c2["splits_already_read"])
	fmt.Fprintf(w, "  read\t%d\t(at most 2 × (%d edits + %d failed descriptors) = %d)\n", len(r.read2), ed.count(), failedDescriptors, bound)
	fmt.Fprintf(w, "  objects in those\t%d\t(of %d planned)\n", members, len(r.now))
	fmt.Fprintf(w, "    added\t%d\t(key not in pass 1's plan)\n", added)
	fmt.Fprintf(w, "    overwritten\t%d\t(another ETag than in pass 1's plan; one is the corrupt object, fixed)\n", overwritten)
	fmt.Fprintf(w, "    retried\t%d\t(unchanged, in a descriptor that failed in pass 1)\n", retried)
	fmt.Fprintf(w, "    unchanged neighbours\t%d\t(unchanged, in a descriptor pass 1 read)\n", neighbours)
	fmt.Fprintf(w, "  records\t%d\t(the objects in those hold %d)\n", r.c2["records"], wantRecords)
	fmt.Fprintf(w, "  failures\t%d\t(none expected: the corrupt object is fixed, the failing GETs work again)\n", len(r.failures2))
	w.Flush()

	r.checkCovers("pass 2's plan", r.plan2, r.now)
	r.check(r.c2["splits_left"] == int64(len(r.read2)), "Except's splits_left counter is %d, pass 2 read %d descriptors", r.c2["splits_left"], len(r.read2))
	r.check(r.c2["splits_already_read"] == int64(len(r.plan2)-len(r.read2)), "Except's splits_already_read counter is %d, want %d planned less %d read",
		r.c2["splits_already_read"], len(r.plan2), len(r.read2))
	for _, k := range append(append(slices.Clone(ed.Added), ed.Overwritten...), ed.Fixed, r.failing) {
		_, ok := readKeys[k]
		r.check(ok, "pass 2 did not read %s", short(k))
	}
	// The failed object did not change, so neither did its split's ID (unless an edit next
	// to it moved a boundary): it is read again only because the failures file names it.
	if id, ok := readKeys[r.failing]; ok {
		r.check(planned1[id], "%s's descriptor got a new ID in pass 2, so the failures file was not what brought it back; move failingIndex away from the edits", short(r.failing))
	}
	r.check(r.c2["records"] == wantRecords, "pass 2 read %d records, the descriptors it read hold %d", r.c2["records"], wantRecords)
	r.check(len(r.read2) <= bound, "pass 2 read %d descriptors, more than 2 × (%d edits + %d failed descriptors) = %d", len(r.read2), ed.count(), failedDescriptors, bound)
	r.check(len(deletedIn) == 0, "the deleted object is in pass 2's descriptors %v", deletedIn)
	r.check(len(r.failures2) == 0 && r.c2["objects_failed"] == 0, "pass 2 has %d failures (objects_failed %d), want none", len(r.failures2), r.c2["objects_failed"])
}
