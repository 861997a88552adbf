package integration

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/spate-io/beam-s3/internal/minio"
	"github.com/spate-io/beam-s3/internal/s3test"
	"github.com/spate-io/beam-s3/internal/versitygw"
	"github.com/spate-io/beam-s3/s3io"
)

// versionedServer is a real S3 server that keeps object versions.
type versionedServer struct {
	endpoint string
	client   *s3.Client
	// timesBroken says why the server's version LastModified times are wrong, if they are:
	// a plan as of a time cannot be exact there.
	timesBroken string
}

// startVersitygw starts versitygw with a versioning directory, without which it refuses
// PutBucketVersioning.
func startVersitygw(t *testing.T) versionedServer {
	g := versitygw.StartVersioned(t)
	return versionedServer{endpoint: g.URL, client: g.Client,
		timesBroken: "versitygw v1.8.0 lists a noncurrent version's LastModified as the time it was overwritten, and a delete marker's as an older time (versity/versitygw#2311, fixed after v1.8.0)"}
}

func startMinIO(t testing.TB) versionedServer {
	m := minio.Start(t)
	return versionedServer{endpoint: m.URL, client: m.Client}
}

func (v versionedServer) bucket(t testing.TB, name string, status types.BucketVersioningStatus) {
	t.Helper()
	ctx := context.Background()
	if _, err := v.client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
		t.Fatalf("create bucket %s: %v", name, err)
	}
	if status != "" {
		v.setVersioning(t, name, status)
	}
}

func (v versionedServer) setVersioning(t testing.TB, bucket string, status types.BucketVersioningStatus) {
	t.Helper()
	if _, err := v.client.PutBucketVersioning(context.Background(), &s3.PutBucketVersioningInput{Bucket: aws.String(bucket),
		VersioningConfiguration: &types.VersioningConfiguration{Status: status}}); err != nil {
		t.Fatalf("versioning %s of %s: %v", status, bucket, err)
	}
}

// put writes key and returns its version ID.
func (v versionedServer) put(t testing.TB, bucket, key string, data []byte) string {
	t.Helper()
	out, err := v.client.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(data)})
	if err != nil {
		t.Fatalf("put %s: %v", key, err)
	}
	return aws.ToString(out.VersionId)
}

// del deletes key (a delete marker on a versioned bucket), or the version vid of it
// for good when vid is set.
func (v versionedServer) del(t testing.TB, bucket, key, vid string) {
	t.Helper()
	in := &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)}
	if vid != "" {
		in.VersionId = aws.String(vid)
	}
	if _, err := v.client.DeleteObject(context.Background(), in); err != nil {
		t.Fatalf("delete %s %s: %v", key, vid, err)
	}
}

func (v versionedServer) cfg(bucket string, versions s3io.Versions) s3io.Config {
	return s3io.Config{Bucket: bucket, Prefix: "v/", Endpoint: v.endpoint, UsePathStyle: true, Versions: versions, ListParallelism: 4}
}

// plan plans cfg outside a pipeline and returns its descriptors.
func plan(t *testing.T, cfg s3io.Config) []s3io.SplitDescriptor {
	t.Helper()
	var ds []s3io.SplitDescriptor
	if _, err := s3io.PlanDescriptors(context.Background(), cfg, func(d s3io.SplitDescriptor) error {
		ds = append(ds, d)
		return nil
	}); err != nil {
		t.Fatalf("plan: %v", err)
	}
	return ds
}

// planned returns key@version of every member of ds.
func planned(ds []s3io.SplitDescriptor) []string {
	var got []string
	for _, d := range ds {
		for _, m := range d.Members {
			got = append(got, m.Key+"@"+m.VersionID)
		}
	}
	slices.Sort(got)
	return got
}

func planIDs(ds []s3io.SplitDescriptor) []string {
	var got []string
	for _, d := range ds {
		got = append(got, d.ID)
	}
	return got
}

// readPlanned reads ds in a prism pipeline and checks the records and failures exactly.
func readPlanned(t *testing.T, cfg s3io.Config, ds []s3io.SplitDescriptor, want, wantFailures []string) {
	t.Helper()
	pl, s := beam.NewPipelineWithRoot()
	elems := make([]any, len(ds))
	for i, d := range ds {
		elems[i] = d
	}
	records, fails := s3io.ReadSplitsWithFailures(s, cfg, beam.Create(s, elems...))
	passert.EqualsList(s, beam.ParDo(s, s3test.RecordString, records), want)
	passert.EqualsList(s, beam.ParDo(s, failureRow, fails), wantFailures)
	if err := ptest.Run(pl); err != nil {
		t.Fatal(err)
	}
}

// versionedObjects are the objects of the version tests: plain, gzip and zstd NDJSON.
func versionedObject(name string, gen int) (key string, data []byte, recs []string) {
	text, recs := s3test.NDJSON(fmt.Sprintf("%s-gen%d", name, gen), 50+gen)
	switch {
	case strings.HasSuffix(name, ".gz"):
		return "v/" + name, s3test.Gzip(text), recs
	case strings.HasSuffix(name, ".zst"):
		return "v/" + name, s3test.Zstd(text), recs
	}
	return "v/" + name, []byte(text), recs
}

func TestVersionedBucket(t *testing.T) {
	for name, start := range map[string]func(*testing.T) versionedServer{"versitygw": startVersitygw, "minio": func(t *testing.T) versionedServer { return startMinIO(t) }} {
		t.Run(name, func(t *testing.T) {
			srv := start(t)
			t.Run("pinned", func(t *testing.T) { pinnedVersions(t, srv) })
			t.Run("as of a time", func(t *testing.T) {
				if srv.timesBroken != "" {
					t.Skip(srv.timesBroken)
				}
				versionsAsOf(t, srv)
			})
			t.Run("paged", func(t *testing.T) { pagedVersions(t, srv) })
			t.Run("unversioned", func(t *testing.T) { unversioned(t, srv) })
			t.Run("suspended", func(t *testing.T) { suspended(t, srv) })
		})
	}
}

// pinnedVersions: a plan of the latest versions reads them after one object is overwritten
// and another deleted, with no Failure; only a planned version deleted permanently fails,
// as deleted.
func pinnedVersions(t *testing.T, srv versionedServer) {
	const bucket = "pinned"
	srv.bucket(t, bucket, types.BucketVersioningStatusEnabled)
	vids := map[string]string{}
	var want []string
	for _, n := range []string{"a.ndjson", "b.ndjson.gz", "c.ndjson.zst", "d.ndjson", "e.ndjson"} {
		key, data, _ := versionedObject(n, 0)
		srv.put(t, bucket, key, data) // a noncurrent version under each key
		key, data, recs := versionedObject(n, 1)
		vids[key] = srv.put(t, bucket, key, data)
		if n != "e.ndjson" {
			want = append(want, recs...)
		}
	}
	key, data, _ := versionedObject("gone.ndjson", 0)
	srv.put(t, bucket, key, data)
	srv.del(t, bucket, key, "") // its latest is a delete marker: not planned

	cfg := srv.cfg(bucket, s3io.Versions{Pinned: true})
	ds := plan(t, cfg)
	var wantPlan []string
	for k, v := range vids {
		wantPlan = append(wantPlan, k+"@"+v)
	}
	slices.Sort(wantPlan)
	if got := planned(ds); !slices.Equal(got, wantPlan) {
		t.Fatalf("planned %v, want %v", got, wantPlan)
	}

	key, data, _ = versionedObject("b.ndjson.gz", 2)
	srv.put(t, bucket, key, data)                        // overwritten after planning
	srv.del(t, bucket, "v/c.ndjson.zst", "")             // deleted after planning
	srv.del(t, bucket, "v/e.ndjson", vids["v/e.ndjson"]) // the planned version, for good
	readPlanned(t, cfg, ds, want, []string{bucket + "|v/e.ndjson|deleted|emitted=0|etag-set=true"})
	// Checksums are looked up, and checked, for the planned versions too.
	verified := cfg
	verified.VerifyChecksums = true
	readPlanned(t, verified, ds, want, []string{bucket + "|v/e.ndjson|deleted|emitted=0|etag-set=true"})

	// Without Versions, the same changes fail both objects.
	plain := srv.cfg(bucket, s3io.Versions{})
	if got := planned(plan(t, plain)); len(got) != 4 {
		t.Fatalf("a plan of current objects: %v", got)
	}
}

// versionsAsOf: a plan as of a time made after several overwrites, deletes and new keys
// reads exactly the versions current then, twice, with equal descriptor IDs.
func versionsAsOf(t *testing.T, srv versionedServer) {
	const bucket = "asof"
	srv.bucket(t, bucket, types.BucketVersioningStatusEnabled)
	names := []string{"a.ndjson", "b.ndjson.gz", "c.ndjson.zst", "d.ndjson", "e.ndjson", "f.ndjson"}
	var want []string
	for _, n := range names[:5] {
		key, data, recs := versionedObject(n, 0)
		srv.put(t, bucket, key, data)
		want = append(want, recs...)
	}
	// Listings give LastModified to the second: the instant lies a second clear of both
	// sides.
	time.Sleep(1100 * time.Millisecond)
	asOf := time.Now()
	time.Sleep(1100 * time.Millisecond)
	for gen := 1; gen <= 3; gen++ {
		for _, n := range names[:2] {
			key, data, _ := versionedObject(n, gen)
			srv.put(t, bucket, key, data)
		}
	}
	srv.del(t, bucket, "v/c.ndjson.zst", "")
	key, data, _ := versionedObject("f.ndjson", 0) // created after the instant: not planned
	srv.put(t, bucket, key, data)

	cfg := srv.cfg(bucket, s3io.Versions{AsOf: asOf})
	first := plan(t, cfg)
	cfg1 := cfg
	cfg1.ListParallelism = 1
	second := plan(t, cfg1)
	if !slices.Equal(planIDs(first), planIDs(second)) || len(planned(first)) != 5 {
		t.Fatalf("plans as of %v: %v and %v, members %v", asOf, planIDs(first), planIDs(second), planned(first))
	}
	// More changes after the second plan change nothing of it.
	key, data, _ = versionedObject("d.ndjson", 1)
	srv.put(t, bucket, key, data)
	if third := plan(t, cfg); !slices.Equal(planIDs(first), planIDs(third)) {
		t.Fatalf("a third plan as of the same time: %v, want %v", planIDs(third), planIDs(first))
	}
	readPlanned(t, cfg, first, want, nil)
	readPlanned(t, cfg, second, want, nil)
}

// pagedVersions: a version listing of more versions than a page, with parallel ranges,
// plans every key's latest version once.
func pagedVersions(t *testing.T, srv versionedServer) {
	const bucket = "paged"
	srv.bucket(t, bucket, types.BucketVersioningStatusEnabled)
	var want []string
	for i := range 700 {
		key := fmt.Sprintf("v/%02d/obj-%04d.txt", i%23, i)
		srv.put(t, bucket, key, []byte("old\n"))
		want = append(want, key+"@"+srv.put(t, bucket, key, []byte(fmt.Sprintf("line %d\n", i))))
	}
	slices.Sort(want)
	for _, p := range []int{1, 8} {
		cfg := srv.cfg(bucket, s3io.Versions{Pinned: true})
		cfg.ListParallelism = p
		var ds []s3io.SplitDescriptor
		st, err := s3io.PlanDescriptors(context.Background(), cfg, func(d s3io.SplitDescriptor) error {
			ds = append(ds, d)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if got := planned(ds); !slices.Equal(got, want) {
			t.Fatalf("parallelism %d: %d members, want %d", p, len(got), len(want))
		}
		// Where parallel ranges meet, a page past a range's end is decoded and left to the next.
		if st.KeysListed != int64(len(want)) || st.VersionsListed < 2*int64(len(want)) || p == 1 && st.VersionsListed != 2*int64(len(want)) {
			t.Errorf("parallelism %d: %d versions listed, %d keys; want %d and %d", p, st.VersionsListed, st.KeysListed, 2*len(want), len(want))
		}
	}
}

// unversioned: a bucket that never had versioning fails planning in both modes, saying
// what to enable.
func unversioned(t *testing.T, srv versionedServer) {
	const bucket = "unversioned"
	srv.bucket(t, bucket, "")
	key, data, _ := versionedObject("a.ndjson", 0)
	srv.put(t, bucket, key, data)
	for _, v := range []s3io.Versions{{Pinned: true}, {AsOf: time.Now().Add(-time.Minute)}} {
		_, err := s3io.PlanDescriptors(context.Background(), srv.cfg(bucket, v), func(s3io.SplitDescriptor) error { return nil })
		if err == nil || !strings.Contains(err.Error(), "put-bucket-versioning") || !strings.Contains(err.Error(), "never been enabled") {
			t.Errorf("%+v: %v", v, err)
		}
	}
}

// suspended: with versioning suspended, a null version is pinned by its ETag only (an
// overwrite replaces it in place), while versions written before are read as planned.
func suspended(t *testing.T, srv versionedServer) {
	const bucket = "suspended"
	srv.bucket(t, bucket, types.BucketVersioningStatusEnabled)
	keyA, data, recsA := versionedObject("a.ndjson", 0)
	srv.put(t, bucket, keyA, data)
	srv.setVersioning(t, bucket, types.BucketVersioningStatusSuspended)
	keyB, data, recsB := versionedObject("b.ndjson", 0)
	srv.put(t, bucket, keyB, data)

	cfg := srv.cfg(bucket, s3io.Versions{Pinned: true})
	ds := plan(t, cfg)
	got := planned(ds)
	if len(got) != 2 || !strings.HasSuffix(got[1], "@null") || strings.HasSuffix(got[0], "@null") {
		t.Fatalf("planned %v: want a's version and b's null version", got)
	}
	// Overwrites while suspended write null versions: a's planned version stays, b's
	// null version is replaced.
	_, data, _ = versionedObject("a.ndjson", 1)
	srv.put(t, bucket, keyA, data)
	_, data, _ = versionedObject("b.ndjson", 1)
	srv.put(t, bucket, keyB, data)
	_ = recsB
	readPlanned(t, cfg, ds, recsA, []string{bucket + "|v/b.ndjson|overwritten|emitted=0|etag-set=true"})
}
