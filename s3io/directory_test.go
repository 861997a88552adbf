package s3io_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"

	"github.com/spate-io/beam-s3/internal/dirbucket"
	"github.com/spate-io/beam-s3/internal/s3test"
	"github.com/spate-io/beam-s3/s3io"
)

const dirBucket = "events--usw2-az1--x-s3"

// directoryLayout is a directory bucket's prefix ev/: folders of keys, each with a
// subfolder, a key named as the subfolder less its "/" and one sorting just after it, a
// key of odd bytes, and keys beside the folders at the top. It returns the keys, sorted,
// and how many folders (ev/ included) a listing of ev/ lists.
func directoryLayout(folders, perFolder, perSub int) (keys []string, listed int) {
	keys = []string{"ev/d05", "ev/d05-x", "ev/readme.txt"}
	for f := range folders {
		dir := fmt.Sprintf("ev/d%02d/", f)
		for i := range perFolder {
			keys = append(keys, fmt.Sprintf("%sk%04d.ndjson", dir, i))
		}
		for i := range perSub {
			keys = append(keys, fmt.Sprintf("%ssub/%04d.ndjson", dir, i))
		}
		keys = append(keys, dir+"sub", dir+"sub0", dir+"sub-", dir+"é %+\x01.txt")
	}
	slices.Sort(keys)
	return keys, 1 + 2*folders
}

// putLayout stores one NDJSON record naming each key in srv, and returns the records.
func putLayout(srv *dirbucket.Server, keys []string) []string {
	var recs []string
	for _, k := range keys {
		text, r := s3test.NDJSON(k, 1)
		srv.Put(k, []byte(text))
		recs = append(recs, r...)
	}
	return recs
}

// planIDs plans cfg and returns the descriptors' IDs, and their members' keys and byte
// ranges, in order.
func planIDs(t *testing.T, cfg s3io.Config) (ids, members []string, st s3io.PlanStats) {
	t.Helper()
	st, err := s3io.PlanDescriptors(context.Background(), cfg, func(d s3io.SplitDescriptor) error {
		ids = append(ids, d.ID)
		var m []string
		for _, x := range d.Members {
			m = append(m, fmt.Sprintf("%q[%d,%d)", x.Key, x.Start, x.End))
		}
		members = append(members, strings.Join(m, " "))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return ids, members, st
}

// TestDirectoryBucket: a directory bucket's prefix of 10,000+ keys in 121 folders, listed
// in a new order on every request and only with CreateSession's credentials, plans to the
// same descriptors in every run and at every ListParallelism; those descriptors hold the
// same members, cut at the same places, as a general-purpose bucket's with the same keys;
// a pipeline reads exactly its records.
func TestDirectoryBucket(t *testing.T) {
	s3test.SetAWSEnv(t, "ak", "sk")
	keys, folders := directoryLayout(60, 100, 70)
	if len(keys) < 10000 || folders < 50 {
		t.Fatalf("layout of %d keys in %d folders", len(keys), folders)
	}
	dir := dirbucket.New(t, dirBucket, "ak", "sk")
	want := putLayout(dir, keys)
	gen := dirbucket.NewGeneral(t, "events", "ak", "sk")
	putLayout(gen, keys)

	cfg := s3io.Config{Bucket: dirBucket, Prefix: "ev/", Endpoint: dir.URL, Region: "us-west-2", Compression: s3io.CompressionNone, SplitTargetBytes: 4 << 10}
	var firstIDs, firstMembers []string
	for run, par := range []int{16, 1, 4} {
		cfg.ListParallelism = par
		ids, members, st := planIDs(t, cfg)
		if st.Objects != int64(len(keys)) || st.ListRequests != int64(folders) {
			t.Fatalf("run %d: %d objects in %d LIST requests, want %d in %d (one per folder)", run, st.Objects, st.ListRequests, len(keys), folders)
		}
		if run == 0 {
			firstIDs, firstMembers = ids, members
			continue
		}
		if !slices.Equal(ids, firstIDs) {
			t.Fatalf("run %d (ListParallelism %d) planned other descriptor IDs: %d descriptors, %d the first run", run, par, len(ids), len(firstIDs))
		}
	}
	if len(firstIDs) < 20 {
		t.Fatalf("only %d descriptors: too few to tell", len(firstIDs))
	}
	c := dir.Counts()
	if c.CreateSession != 1 || c.Lists != 3*folders || c.Rejected != 0 {
		t.Errorf("server counts %+v, want one CreateSession (the clients of a worker process share its session), %d LISTs, none rejected", c, 3*folders)
	}

	// The same keys in a general-purpose bucket: the same members, cut into descriptors at
	// the same places (IDs differ: they digest the bucket and the ETags).
	gcfg := cfg
	gcfg.Bucket, gcfg.Endpoint, gcfg.UsePathStyle = "events", gen.URL, true
	_, genMembers, _ := planIDs(t, gcfg)
	if !slices.Equal(genMembers, firstMembers) {
		t.Fatalf("the general-purpose bucket's plan differs: %d descriptors, the directory bucket's %d", len(genMembers), len(firstMembers))
	}

	// Match prunes folders as it does in a general-purpose bucket: no sub/ is listed.
	mcfg := cfg
	mcfg.Match = "ev/*/k*.ndjson"
	before := dir.Counts()
	_, _, st := planIDs(t, mcfg)
	if lists := dir.Counts().Lists - before.Lists; st.FoldersSkipped != 60 || st.Objects != 60*100 || lists != 61 {
		t.Errorf("Match %q: %d objects, %d folders skipped, %d LISTs; want %d, 60 and 61", mcfg.Match, st.Objects, st.FoldersSkipped, lists, 60*100)
	}

	before = dir.Counts()
	cfg.ListParallelism = 0
	counters := runRead(t, cfg, want)
	after := dir.Counts()
	if counters["objects"] != int64(len(keys)) || after.Gets-before.Gets < len(keys) || after.Rejected != 0 || after.CreateSession != 1 {
		t.Errorf("read %d objects with %d GETs (%d refused, %d CreateSession in all), want %d and the plans' one session", counters["objects"], after.Gets-before.Gets, after.Rejected, after.CreateSession, len(keys))
	}
	t.Logf("read: %d CreateSession, %d LIST, %d GET requests", after.CreateSession-before.CreateSession, after.Lists-before.Lists, after.Gets-before.Gets)
}

// TestDirectoryBucketPins: a directory bucket's ETags are opaque, not MD5s; an object
// overwritten after planning fails its read, naming the object, as in any bucket.
func TestDirectoryBucketPins(t *testing.T) {
	s3test.SetAWSEnv(t, "ak", "sk")
	dir := dirbucket.New(t, dirBucket, "ak", "sk")
	dir.Put("p/a.txt", []byte("one\ntwo\n"))
	dir.Put("p/b/c.txt", []byte("three\n"))
	cfg := s3io.Config{Bucket: dirBucket, Prefix: "p/", Endpoint: dir.URL, Region: "us-west-2"}
	runRead(t, cfg, []string{"one", "two", "three"})

	var ds []s3io.SplitDescriptor
	if _, err := s3io.PlanDescriptors(context.Background(), cfg, func(d s3io.SplitDescriptor) error { ds = append(ds, d); return nil }); err != nil {
		t.Fatal(err)
	}
	dir.Put("p/a.txt", []byte("one\ntwo\n")) // the same bytes, a new ETag
	p, sc := beam.NewPipelineWithRoot()
	beam.ParDo(sc, s3test.RecordString, s3io.ReadSplits(sc, cfg, beam.CreateList(sc, ds)))
	err := ptest.Run(p)
	for _, w := range []string{"p/a.txt", "PreconditionFailed", "overwritten since planning"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("reading a plan made before p/a.txt was overwritten: err = %v, want it to say %q", err, w)
		}
	}
}

// TestDirectoryBucketSessionRefused: credentials CreateSession refuses fail the plan, and
// the error says it was CreateSession that refused them.
func TestDirectoryBucketSessionRefused(t *testing.T) {
	s3test.SetAWSEnv(t, "ak", "not-the-secret")
	dir := dirbucket.New(t, dirBucket, "ak", "sk")
	dir.Put("p/a.txt", []byte("one\n"))
	_, err := s3io.PlanDescriptors(context.Background(), s3io.Config{Bucket: dirBucket, Prefix: "p/", Endpoint: dir.URL, Region: "us-west-2"}, func(s3io.SplitDescriptor) error { return nil })
	t.Logf("%v", err)
	for _, w := range []string{dirBucket, "CreateSession", "AccessDenied"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("err = %v, want it to say %q", err, w)
		}
	}
}
