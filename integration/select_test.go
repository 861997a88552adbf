package integration

// Selection (Config.Match, StartAfter, ModifiedAfter/Before), archived objects, ReadAll,
// keys with control characters and parallel listing, on versitygw through the fault proxy.
//
// What versitygw v1.8.0 does, found by asking it directly (raw HTTP and the AWS SDK), and
// why some tests need the proxy's listing hooks (internal/faultproxy/listing.go):
//
//  1. PutObject with StorageClass GLACIER (or DEEP_ARCHIVE) succeeds, but the object is
//     stored as STANDARD: ListObjectsV2 and HeadObject report <StorageClass>STANDARD, a GET
//     returns its bytes, and RestoreObject answers 501 NotImplemented. There is no archive
//     tier, so no GET is ever answered 403 InvalidObjectState. The proxy lists chosen keys
//     in an archive class (SetStorageClass) and answers their GETs as S3 would
//     (InvalidObjectState).
//  2. It ignores "x-amz-optional-object-attributes: RestoreStatus": no <RestoreStatus> is
//     ever listed. The proxy adds it (SetRestoreStatus) when the request asks, as S3 does.
//  3. It stores keys with control characters ("ctl/a\x01b.txt", "ctl/tab\tkey",
//     "ctl/nl\nkey", "ctl/cr\rkey", "ctl/x\x1f.txt") as files of those names and serves
//     their GETs, but its listing is written by encoding/xml: a character XML 1.0 cannot
//     carry (U+0001, U+001F) is listed as U+FFFD ("ctl/a\uFFFDb.txt", which a GET answers
//     NoSuchKey), while tab, newline and carriage return survive as &#x9;, &#xA;, &#xD;.
//     It ignores encoding-type=url: with or without it the keys are raw
//     ("ctl/pct%41+plus.txt" stays so) and the answer holds an empty
//     <EncodingType></EncodingType>. The proxy answers encoding-type=url as S3 does
//     (URLEncodeKeys), restoring the keys versitygw lost from what the test stored
//     (StoredKeys); without the proxy, versitygw's raw answer is what checks that s3io
//     does not decode keys the server did not encode.
//
// Also: LastModified is the object file's mtime, listed to the second, so os.Chtimes on the
// gateway's directory sets it (TestSelectModifiedWindow); a key "d" cannot be stored
// beside keys under "d/" (409 ExistingObjectIsDirectory), so the buckets below never need
// one. On this 2-core machine it stores some 200 to 650 small objects a second, and
// removing a test's directory of thousands of objects afterwards takes about as long, which
// is what bounds the sizes of TestSelectParallelList.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/textio"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/spate-io/beam-s3/internal/faultproxy"
	"github.com/spate-io/beam-s3/internal/s3test"
	"github.com/spate-io/beam-s3/internal/versitygw"
	"github.com/spate-io/beam-s3/s3io"
)

// selectObject is an object a test stores, with the records s3io must read from it.
type selectObject struct {
	key  string
	data []byte
	recs []string
}

// ndjsonObject is an object at key holding n NDJSON records that name the key, gzip- or
// zstd-compressed when its extension says so.
func ndjsonObject(key string, n int) selectObject {
	text, recs := s3test.NDJSON(key, n)
	data := []byte(text)
	switch {
	case strings.HasSuffix(key, ".gz"):
		data = s3test.Gzip(text)
	case strings.HasSuffix(key, ".zst"):
		data = s3test.Zstd(text)
	}
	return selectObject{key: key, data: data, recs: recs}
}

// putObjects stores objs in bucket, a few at a time, and returns their records by key.
func putObjects(t *testing.T, g *versitygw.Gateway, bucket string, objs []selectObject) map[string][]string {
	t.Helper()
	recs := map[string][]string{}
	chaos := make([]chaosObject, len(objs))
	for i, o := range objs {
		chaos[i] = chaosObject{key: o.key, data: o.data}
		recs[o.key] = o.recs
	}
	putAll(t, g, bucket, chaos)
	return recs
}

// recordsOf returns the records of keys.
func recordsOf(recs map[string][]string, keys ...string) []string {
	var out []string
	for _, k := range keys {
		out = append(out, recs[k]...)
	}
	return out
}

// checkListPrefixes checks that the proxy saw LIST requests for bucket and that every one
// asked for a prefix starting with want: the selection was pushed down to S3.
func checkListPrefixes(t *testing.T, lists []faultproxy.ListRequest, bucket, want string) {
	t.Helper()
	if len(lists) == 0 {
		t.Errorf("no LIST request reached the proxy")
	}
	for _, l := range lists {
		if l.Bucket != bucket || !strings.HasPrefix(l.Prefix, want) {
			t.Errorf("LIST of bucket %q with prefix %q (start-after %q, delimiter %q): want every LIST of %q under %q",
				l.Bucket, l.Prefix, l.StartAfter, l.Delimiter, bucket, want)
		}
	}
}

// runRead reads cfg with s3io.Read on prism, asserting the exact multiset want, and returns
// the s3io counters.
func runRead(t *testing.T, cfg s3io.Config, want []string) map[string]int64 {
	t.Helper()
	pl, s := beam.NewPipelineWithRoot()
	recs := beam.ParDo(s, s3test.RecordString, s3io.Read(s, cfg))
	if len(want) == 0 {
		passert.Empty(s, recs)
	} else {
		passert.EqualsList(s, recs, want)
	}
	pr, err := ptest.RunWithMetrics(pl)
	if err != nil {
		t.Fatalf("pipeline failed: %v", err)
	}
	return s3test.Counters(pr, s3io.MetricsNamespace)
}

// TestSelectGlob reads a foldered bucket with Config.Match patterns of every kind and
// checks the exact records each selects and that every LIST asked only for the pattern's
// literal prefix (or Config.Prefix, when that is longer).
func TestSelectGlob(t *testing.T) {
	g := versitygw.Start(t)
	p := faultproxy.New(t, g.URL)
	const bucket = "globs"
	g.CreateBucket(t, bucket)
	recs := putObjects(t, g, bucket, []selectObject{
		ndjsonObject("logs/2024-01-01/a.ndjson", 3),
		ndjsonObject("logs/2024-01-01/sub/d.ndjson", 2),
		ndjsonObject("logs/2024-01-01.ndjson", 1), // a file beside the folder of that name
		ndjsonObject("logs/2024-01-02/b.gz", 4),
		ndjsonObject("logs/2024-01-0?/q.ndjson", 2), // a literal '?' in the key
		ndjsonObject("logs/2024-01-0a/e.ndjson", 2),
		ndjsonObject("logs/2024-02-01/c.ndjson", 3),
		ndjsonObject("other/x.ndjson", 2),
	})
	for _, tc := range []struct {
		name, prefix, match string
		want                []string
		listPrefix          string // what every LIST must ask for
	}{
		{"star", "", "logs/2024-01-*/*.ndjson",
			[]string{"logs/2024-01-01/a.ndjson", "logs/2024-01-0?/q.ndjson", "logs/2024-01-0a/e.ndjson"}, "logs/2024-01-"},
		{"double star", "", "logs/**.ndjson",
			[]string{"logs/2024-01-01/a.ndjson", "logs/2024-01-01/sub/d.ndjson", "logs/2024-01-01.ndjson", "logs/2024-01-0?/q.ndjson", "logs/2024-01-0a/e.ndjson", "logs/2024-02-01/c.ndjson"}, "logs/"},
		{"question mark", "", "logs/2024-0?-01/*",
			[]string{"logs/2024-01-01/a.ndjson", "logs/2024-02-01/c.ndjson"}, "logs/2024-0"},
		{"class range", "", "logs/2024-01-0[0-9]/**",
			[]string{"logs/2024-01-01/a.ndjson", "logs/2024-01-01/sub/d.ndjson", "logs/2024-01-02/b.gz"}, "logs/2024-01-0"},
		{"negated class caret", "", "logs/2024-01-0[^a]/*",
			[]string{"logs/2024-01-01/a.ndjson", "logs/2024-01-02/b.gz", "logs/2024-01-0?/q.ndjson"}, "logs/2024-01-0"},
		{"negated class bang", "", "logs/2024-01-0[!a0-9]/*",
			[]string{"logs/2024-01-0?/q.ndjson"}, "logs/2024-01-0"},
		{"escaped question mark", "", `logs/2024-01-0\?/*`,
			[]string{"logs/2024-01-0?/q.ndjson"}, "logs/2024-01-0?/"},
		{"literal", "", "logs/2024-01-01/a.ndjson",
			[]string{"logs/2024-01-01/a.ndjson"}, "logs/2024-01-01/a.ndjson"},
		{"prefix longer than the literal prefix", "other/", "**/x.ndjson",
			[]string{"other/x.ndjson"}, "other/"},
		{"literal prefix longer than the prefix", "logs/", "logs/2024-02-*/**",
			[]string{"logs/2024-02-01/c.ndjson"}, "logs/2024-02-"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p.ResetLists()
			cfg := s3io.Config{Bucket: bucket, Prefix: tc.prefix, Match: tc.match, Endpoint: p.URL, UsePathStyle: true}
			c := runRead(t, cfg, recordsOf(recs, tc.want...))
			checkListPrefixes(t, p.Lists(), bucket, tc.listPrefix)
			// Every key listed is either planned or left out by the pattern.
			if c["objects_planned"] != int64(len(tc.want)) || c["objects_skipped"] != c["keys_listed"]-c["objects_planned"] {
				t.Errorf("counters %v: want %d objects planned and the other keys listed skipped", c, len(tc.want))
			}
		})
	}
	t.Run("pattern outside the prefix", func(t *testing.T) {
		err := s3io.Config{Bucket: bucket, Prefix: "other/", Match: "logs/**"}.Validate()
		if err == nil || !strings.Contains(err.Error(), "Config.Match") {
			t.Errorf("Validate: %v, want an error naming Config.Match", err)
		}
	})
}

// TestSelectStartAfter reads exactly the keys after StartAfter, which every LIST carries on.
func TestSelectStartAfter(t *testing.T) {
	g := versitygw.Start(t)
	p := faultproxy.New(t, g.URL)
	const bucket = "after"
	g.CreateBucket(t, bucket)
	var objs []selectObject
	var keys []string
	for i := range 10 {
		o := ndjsonObject(fmt.Sprintf("s/%02d.ndjson", i), 2)
		objs, keys = append(objs, o), append(keys, o.key)
	}
	recs := putObjects(t, g, bucket, objs)
	for _, tc := range []struct {
		name, startAfter string
		want             []string
	}{
		{"an existing key, excluded", "s/04.ndjson", keys[5:]},
		{"between keys", "s/06", keys[6:]},
		{"before the prefix", "a", keys},
		{"after the prefix", "t", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p.ResetLists()
			cfg := s3io.Config{Bucket: bucket, Prefix: "s/", StartAfter: tc.startAfter, Endpoint: p.URL, UsePathStyle: true}
			c := runRead(t, cfg, recordsOf(recs, tc.want...))
			if c["objects_planned"] != int64(len(tc.want)) {
				t.Errorf("objects_planned = %d, want %d", c["objects_planned"], len(tc.want))
			}
			lists := p.Lists()
			checkListPrefixes(t, lists, bucket, "s/")
			for _, l := range lists {
				// Under the prefix, nothing before StartAfter is asked for; a StartAfter
				// before the prefix may be left out (every key under it sorts after).
				if tc.startAfter > "s/" && l.StartAfter < tc.startAfter {
					t.Errorf("LIST with start-after %q, want every LIST at or after %q", l.StartAfter, tc.startAfter)
				}
			}
		})
	}
}

// TestSelectModifiedWindow reads exactly the objects whose LastModified is in
// [ModifiedAfter, ModifiedBefore). versitygw lists a file's mtime (to the second) as
// LastModified, so the test dates the objects by setting their files' mtimes instead of
// sleeping between PUTs.
func TestSelectModifiedWindow(t *testing.T) {
	g := versitygw.Start(t)
	const bucket = "window"
	g.CreateBucket(t, bucket)
	t1 := time.Date(2024, 3, 1, 10, 0, 0, 0, time.UTC)
	t4 := t1.Add(3 * time.Hour)
	dated := []struct {
		key string
		at  time.Time
	}{
		{"w/a-before.ndjson", t1.Add(-time.Second)},
		{"w/b-at-after.ndjson", t1},
		{"w/c-inside.ndjson.gz", t1.Add(time.Hour)},
		{"w/d-just-before-before.ndjson", t4.Add(-time.Second)},
		{"w/e-at-before.ndjson", t4},
		{"w/f-later.ndjson.zst", t4.Add(time.Hour)},
	}
	var objs []selectObject
	for _, d := range dated {
		objs = append(objs, ndjsonObject(d.key, 3))
	}
	recs := putObjects(t, g, bucket, objs)
	for _, d := range dated {
		if err := os.Chtimes(filepath.Join(g.Dir, bucket, filepath.FromSlash(d.key)), d.at, d.at); err != nil {
			t.Fatalf("date %s: %v", d.key, err)
		}
	}
	// The test's premise: the listing reports the mtimes.
	out, err := g.Client.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
	if err != nil {
		t.Fatal(err)
	}
	for i, o := range out.Contents {
		if i >= len(dated) || aws.ToString(o.Key) != dated[i].key || !aws.ToTime(o.LastModified).Equal(dated[i].at) {
			t.Fatalf("versitygw lists %s modified %v; the test expects the mtimes it set: %+v", aws.ToString(o.Key), aws.ToTime(o.LastModified), dated)
		}
	}
	keys := func(idx ...int) []string {
		var out []string
		for _, i := range idx {
			out = append(out, dated[i].key)
		}
		return out
	}
	for _, tc := range []struct {
		name          string
		after, before time.Time
		want          []string
	}{
		{"after and before", t1, t4, keys(1, 2, 3)},
		{"after only", t1, time.Time{}, keys(1, 2, 3, 4, 5)},
		{"before only", time.Time{}, t4, keys(0, 1, 2, 3)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := s3io.Config{Bucket: bucket, Prefix: "w/", ModifiedAfter: tc.after, ModifiedBefore: tc.before, Endpoint: g.URL, UsePathStyle: true}
			c := runRead(t, cfg, recordsOf(recs, tc.want...))
			if c["objects_planned"] != int64(len(tc.want)) || c["objects_skipped"] != int64(len(dated)-len(tc.want)) {
				t.Errorf("counters %v: want %d planned, %d skipped", c, len(tc.want), len(dated)-len(tc.want))
			}
		})
	}
}

// TestSelectArchived reads prefixes with archived objects. Under a/ the proxy lists
// a/glacier in GLACIER (not restored), a/deep in DEEP_ARCHIVE with a restore in progress,
// and a/restored in GLACIER with a completed restore, and answers GETs of the first two
// 403 InvalidObjectState, as S3 would. Under b/ every object is listed STANDARD, but
// b/frozen's GET is answered InvalidObjectState: archived after planning.
func TestSelectArchived(t *testing.T) {
	g := versitygw.Start(t)
	const bucket = "cold"
	g.CreateBucket(t, bucket)
	objs := []selectObject{
		ndjsonObject("a/std-0.ndjson", 3),
		ndjsonObject("a/std-1.ndjson.gz", 4),
		ndjsonObject("a/glacier.ndjson", 5),
		ndjsonObject("a/deep.ndjson", 2),
		ndjsonObject("a/restored.ndjson", 3),
		ndjsonObject("b/ok-0.ndjson", 3),
		ndjsonObject("b/frozen.ndjson", 4),
		ndjsonObject("b/ok-1.ndjson.zst", 2),
	}
	recs := putObjects(t, g, bucket, objs)
	stored := map[string][]byte{}
	for _, o := range objs {
		stored[o.key] = o.data
	}
	archived := map[string]bool{"a/glacier.ndjson": true, "a/deep.ndjson": true, "b/frozen.ndjson": true}
	// proxy starts a proxy for one subtest, so that its GET log is that pipeline's alone.
	proxy := func(t *testing.T) *faultproxy.Proxy {
		p := faultproxy.New(t, g.URL)
		p.RewriteList = faultproxy.Chain(
			faultproxy.SetStorageClass(map[string]string{"a/glacier.ndjson": "GLACIER", "a/deep.ndjson": "DEEP_ARCHIVE", "a/restored.ndjson": "GLACIER"}),
			faultproxy.SetRestoreStatus(map[string]faultproxy.RestoreStatus{
				"a/deep.ndjson":     {InProgress: true},
				"a/restored.ndjson": {ExpiryDate: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)},
			}),
		)
		p.Decide = func(key string, _ int) faultproxy.Fault {
			if archived[key] {
				return faultproxy.InvalidObjectState
			}
			return faultproxy.Fault{}
		}
		return p
	}
	readable := recordsOf(recs, "a/std-0.ndjson", "a/std-1.ndjson.gz", "a/restored.ndjson")
	listedFailures := []string{bucket + "|a/deep.ndjson|archived|emitted=0|etag-set=true", bucket + "|a/glacier.ndjson|archived|emitted=0|etag-set=true"}
	cfg := func(p *faultproxy.Proxy, prefix string) s3io.Config {
		return s3io.Config{Bucket: bucket, Prefix: prefix, Endpoint: p.URL, UsePathStyle: true}
	}

	// noGets checks that the listed-archived objects were never requested: reading them
	// could only fail (on S3) or, worse, cost a retrieval.
	noGets := func(t *testing.T, p *faultproxy.Proxy) {
		t.Helper()
		for _, k := range []string{"a/glacier.ndjson", "a/deep.ndjson"} {
			if gets := p.Gets(k); len(gets) > 0 {
				t.Errorf("%s was listed archived, yet GET %d times: %+v", k, len(gets), gets)
			}
		}
	}
	// readOthers checks that each of keys was read whole, with a 200, before the job ended.
	// It asks for one such GET, not that every GET is one: a reader that prism splits hands
	// what it fetched ahead to the residual, and a fetch no residual takes is cancelled, as
	// it may be before the proxy answers it.
	readOthers := func(t *testing.T, p *faultproxy.Proxy, keys ...string) {
		t.Helper()
		for _, k := range keys {
			gets := p.Gets(k)
			whole := false
			for _, gt := range gets {
				whole = whole || gt.Status == 200 && gt.Bytes == int64(len(stored[k]))
			}
			if !whole {
				t.Errorf("%s: GETs %+v, want one 200 that sent all %d bytes before the job ended", k, gets, len(stored[k]))
			}
		}
	}

	t.Run("listed archived/ReadWithFailures", func(t *testing.T) {
		p := proxy(t)
		pl, s := beam.NewPipelineWithRoot()
		records, failures := s3io.ReadWithFailures(s, cfg(p, "a/"))
		passert.EqualsList(s, beam.ParDo(s, s3test.RecordString, records), readable)
		passert.EqualsList(s, beam.ParDo(s, failureRow, failures), listedFailures)
		pr, err := ptest.RunWithMetrics(pl)
		if err != nil {
			t.Fatalf("ReadWithFailures must let the job succeed: %v", err)
		}
		c := s3test.Counters(pr, s3io.MetricsNamespace)
		if c["objects_planned"] != 5 || c["objects_failed_archived"] != 2 || c["objects_failed"] != 2 || c["objects_skipped_archived"] != 0 {
			t.Errorf("counters %v: want 5 planned, 2 failed archived", c)
		}
		noGets(t, p)
		readOthers(t, p, "a/std-0.ndjson", "a/std-1.ndjson.gz", "a/restored.ndjson")
		// The restored object is readable only because the planner asked for restore
		// status (the proxy, like S3, lists it only then).
		for _, l := range p.Lists() {
			if l.OptionalAttributes != "RestoreStatus" {
				t.Errorf("LIST without x-amz-optional-object-attributes: RestoreStatus: %+v", l)
			}
		}
	})

	t.Run("listed archived/Read fails the job", func(t *testing.T) {
		p := proxy(t)
		pl, s := beam.NewPipelineWithRoot()
		passert.EqualsList(s, beam.ParDo(s, s3test.RecordString, s3io.Read(s, cfg(p, "a/"))), readable)
		err := ptest.Run(pl)
		if err == nil {
			t.Fatal("Read succeeded although two objects are archived")
		}
		for _, want := range []string{"2 object read(s) failed", "a/glacier.ndjson", "a/deep.ndjson", "archived", "GLACIER", "DEEP_ARCHIVE"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("job error does not mention %q: %v", want, err)
			}
		}
		noGets(t, p)
		readOthers(t, p, "a/std-0.ndjson", "a/std-1.ndjson.gz", "a/restored.ndjson")
	})

	t.Run("listed archived/SkipArchived", func(t *testing.T) {
		p := proxy(t)
		c := cfg(p, "a/")
		c.SkipArchived = true
		pl, s := beam.NewPipelineWithRoot()
		records, failures := s3io.ReadWithFailures(s, c)
		passert.EqualsList(s, beam.ParDo(s, s3test.RecordString, records), readable)
		passert.Empty(s, beam.ParDo(s, failureRow, failures))
		pr, err := ptest.RunWithMetrics(pl)
		if err != nil {
			t.Fatalf("pipeline failed: %v", err)
		}
		n := s3test.Counters(pr, s3io.MetricsNamespace)
		if n["objects_skipped_archived"] != 2 || n["objects_planned"] != 3 || n["objects_failed"] != 0 {
			t.Errorf("counters %v: want 2 skipped archived, 3 planned, none failed", n)
		}
		noGets(t, p)
	})

	t.Run("archived after planning/ReadWithFailures", func(t *testing.T) {
		p := proxy(t)
		pl, s := beam.NewPipelineWithRoot()
		records, failures := s3io.ReadWithFailures(s, cfg(p, "b/"))
		passert.EqualsList(s, beam.ParDo(s, s3test.RecordString, records), recordsOf(recs, "b/ok-0.ndjson", "b/ok-1.ndjson.zst"))
		passert.EqualsList(s, beam.ParDo(s, failureRow, failures), []string{bucket + "|b/frozen.ndjson|archived|emitted=0|etag-set=true"})
		pr, err := ptest.RunWithMetrics(pl)
		if err != nil {
			t.Fatalf("a 403 InvalidObjectState must quarantine the object, not fail the job: %v", err)
		}
		if c := s3test.Counters(pr, s3io.MetricsNamespace); c["objects_failed_archived"] != 1 || c["objects_failed"] != 1 {
			t.Errorf("counters %v: want one failure, archived", c)
		}
		gets := p.Gets("b/frozen.ndjson")
		if len(gets) == 0 {
			t.Errorf("b/frozen.ndjson was never requested")
		}
		for _, gt := range gets {
			if gt.Status != 403 {
				t.Errorf("GET of b/frozen.ndjson %+v, want the 403 InvalidObjectState", gt)
			}
		}
		readOthers(t, p, "b/ok-0.ndjson", "b/ok-1.ndjson.zst")
	})

	t.Run("archived after planning/Read fails the job", func(t *testing.T) {
		p := proxy(t)
		pl, s := beam.NewPipelineWithRoot()
		passert.EqualsList(s, beam.ParDo(s, s3test.RecordString, s3io.Read(s, cfg(p, "b/"))), recordsOf(recs, "b/ok-0.ndjson", "b/ok-1.ndjson.zst"))
		err := ptest.Run(pl)
		if err == nil {
			t.Fatal("Read succeeded although an object is archived")
		}
		msg := err.Error()
		for _, want := range []string{"1 object read(s) failed", "b/frozen.ndjson", "archived", "InvalidObjectState"} {
			if !strings.Contains(msg, want) {
				t.Errorf("job error does not mention %q: %v", want, err)
			}
		}
		// A 403 about one object's storage class is not a credential problem.
		for _, wrong := range []string{"credentials", "AccessDenied", "IAM"} {
			if strings.Contains(msg, wrong) {
				t.Errorf("job error blames %q: %v", wrong, err)
			}
		}
		readOthers(t, p, "b/ok-0.ndjson", "b/ok-1.ndjson.zst")
	})
}

// TestSelectReadAll reads prefixes of two buckets named by a PCollection of URLs, and fails
// on a malformed URL, naming it.
func TestSelectReadAll(t *testing.T) {
	g := versitygw.Start(t)
	g.CreateBucket(t, "alpha")
	g.CreateBucket(t, "beta")
	recsA := putObjects(t, g, "alpha", []selectObject{
		ndjsonObject("in/a1.ndjson", 3), ndjsonObject("in/a2.ndjson.gz", 4), ndjsonObject("out/not-read.ndjson", 2),
	})
	recsB := putObjects(t, g, "beta", []selectObject{
		ndjsonObject("b1.ndjson", 2), ndjsonObject("sub/b2.ndjson.zst", 5),
	})
	cfg := s3io.Config{Endpoint: g.URL, UsePathStyle: true}

	t.Run("two buckets", func(t *testing.T) {
		pl, s := beam.NewPipelineWithRoot()
		urls := beam.Create(s, "s3://alpha/in/", "s3://beta")
		want := append(recordsOf(recsA, "in/a1.ndjson", "in/a2.ndjson.gz"), recordsOf(recsB, "b1.ndjson", "sub/b2.ndjson.zst")...)
		passert.EqualsList(s, beam.ParDo(s, s3test.RecordString, s3io.ReadAll(s, cfg, urls)), want)
		pr, err := ptest.RunWithMetrics(pl)
		if err != nil {
			t.Fatalf("pipeline failed: %v", err)
		}
		if c := s3test.Counters(pr, s3io.MetricsNamespace); c["objects_planned"] != 4 || c["objects"] != 4 {
			t.Errorf("counters %v: want 4 objects planned and read", c)
		}
	})
	for _, bad := range []string{"http://x", "s3://Bad_Bucket/x"} {
		t.Run("malformed "+bad, func(t *testing.T) {
			pl, s := beam.NewPipelineWithRoot()
			s3io.ReadAll(s, cfg, beam.Create(s, "s3://alpha/in/", bad))
			err := ptest.Run(pl)
			if err == nil {
				t.Fatalf("ReadAll of %q succeeded", bad)
			}
			if !strings.Contains(err.Error(), fmt.Sprintf("%q", bad)) && !strings.Contains(err.Error(), bad) {
				t.Errorf("job error does not name %q: %v", bad, err)
			}
		})
	}
}

// TestSelectControlKeys reads keys with control characters, percent signs and plus signs:
// through the proxy, which url-encodes the listing as S3 does when asked (versitygw cannot
// list U+0001 or U+001F at all), and straight from versitygw, whose listing is not encoded
// and must not be decoded.
func TestSelectControlKeys(t *testing.T) {
	g := versitygw.Start(t)
	p := faultproxy.New(t, g.URL)
	const bucket = "ctl"
	g.CreateBucket(t, bucket)

	t.Run("url-encoded listing", func(t *testing.T) {
		keys := []string{
			"c/a\x01b.txt", "c/x\x1f.ndjson", "c/tab\tkey", "c/nl\nkey", "c/cr\rkey", "c/del\x7f.txt",
			"c/pct%41+plus.txt", "c/sp ace.txt", "c/%zz.txt", "c/amp&<>\"'.txt", "c/ünï/é.txt", "c/d\x01r/inner.txt",
		}
		var objs []selectObject
		for _, k := range keys {
			objs = append(objs, ndjsonObject(k, 2))
		}
		recs := putObjects(t, g, bucket, objs)
		// The premise: versitygw alone lists "c/a\x01b.txt" as "c/a\uFFFDb.txt".
		out, err := g.Client.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String("c/a"), EncodingType: types.EncodingTypeUrl})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Contents) > 0 && aws.ToString(out.Contents[0].Key) == "c/a\x01b.txt" {
			t.Logf("versitygw now lists %q intact: URLEncodeKeys no longer needs StoredKeys for it", "c/a\x01b.txt")
		}
		p.ResetLists()
		p.RewriteList = faultproxy.URLEncodeKeys(faultproxy.StoredKeys(keys...))
		defer func() { p.RewriteList = nil }()
		cfg := s3io.Config{Bucket: bucket, Prefix: "c/", Endpoint: p.URL, UsePathStyle: true}
		c := runRead(t, cfg, recordsOf(recs, keys...))
		if c["objects"] != int64(len(keys)) || c["objects_failed"] != 0 {
			t.Errorf("counters %v: want %d objects read, none failed", c, len(keys))
		}
		for _, l := range p.Lists() {
			if l.EncodingType != "url" || !l.Rewritten {
				t.Errorf("LIST %+v: want encoding-type=url, answered url-encoded", l)
			}
		}
		for _, k := range keys {
			gets := p.Gets(k)
			if len(gets) == 0 || gets[0].Status != 200 {
				t.Errorf("GETs of %q: %+v, want the key as stored, answered 200", k, gets)
			}
		}
	})

	t.Run("raw listing", func(t *testing.T) {
		keys := []string{"r/pct%41+plus.txt", "r/%zz.txt", "r/sp ace+.txt", "r/a%2Fb.txt", "r/tab\tkey", "r/ünï%C3%A9.txt"}
		var objs []selectObject
		for _, k := range keys {
			objs = append(objs, ndjsonObject(k, 2))
		}
		recs := putObjects(t, g, bucket, objs)
		// The premise: versitygw ignores encoding-type=url and says so.
		out, err := g.Client.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String("r/pct"), EncodingType: types.EncodingTypeUrl})
		if err != nil {
			t.Fatal(err)
		}
		if out.EncodingType != "" || len(out.Contents) != 1 || aws.ToString(out.Contents[0].Key) != "r/pct%41+plus.txt" {
			t.Fatalf("versitygw answered encoding %q, keys %+v: the test expects raw keys", out.EncodingType, out.Contents)
		}
		cfg := s3io.Config{Bucket: bucket, Prefix: "r/", Endpoint: g.URL, UsePathStyle: true}
		c := runRead(t, cfg, recordsOf(recs, keys...))
		if c["objects"] != int64(len(keys)) || c["objects_failed"] != 0 {
			t.Errorf("counters %v: want %d objects read, none failed", c, len(keys))
		}
	})
}

// TestSelectParallelList plans a foldered prefix, p/ (110 folders of 10 keys, and the
// folder p/flat/), and a flat one, p/flat/ (2,100 keys), with one LIST at a time and with
// the default parallelism, and checks that the descriptors are identical, that the default
// kept several LISTs in flight (the proxy holds each 20 ms, as S3's latency would) with
// delimiter probes and StartAfter cut points, and that prism plans the same descriptors
// and reads exactly the records.
//
// A range is split only once its first page (1,000 keys) came back truncated: a foldered
// prefix is then cut at the folders a delimiter probe finds after that page, a flat one at
// points spread over its keys' alphabet once the probe has found no folders. The probe
// races the range's second page, so each prefix holds more than two pages, which keeps the
// range open until the probe answers. No more than that: versitygw stores only some 200 to
// 600 objects a second here, and removing its directory after the test takes as long again.
func TestSelectParallelList(t *testing.T) {
	start := time.Now()
	g := versitygw.Start(t)
	p := faultproxy.New(t, g.URL)
	p.ListDelay = 20 * time.Millisecond
	const bucket = "par"
	g.CreateBucket(t, bucket)
	var objs []selectObject
	for f := range 110 {
		for k := range 10 {
			objs = append(objs, ndjsonObject(fmt.Sprintf("p/f%03d/k%02d.ndjson", f, k), 1))
		}
	}
	for k := range 2100 {
		objs = append(objs, ndjsonObject(fmt.Sprintf("p/flat/k%04d.ndjson", k), 1))
	}
	recs := putObjects(t, g, bucket, objs)
	var all []string
	for _, o := range objs {
		all = append(all, o.key)
	}
	slices.Sort(all)
	under := func(prefix string) []string {
		var out []string
		for _, k := range all {
			if strings.HasPrefix(k, prefix) {
				out = append(out, k)
			}
		}
		return out
	}
	t.Logf("seeded %d objects in %v", len(objs), time.Since(start).Round(time.Millisecond))

	plan := func(t *testing.T, cfg s3io.Config) ([]s3io.SplitDescriptor, s3io.PlanStats, []faultproxy.ListRequest, int) {
		t.Helper()
		p.ResetLists()
		var descs []s3io.SplitDescriptor
		st, err := s3io.PlanDescriptors(context.Background(), cfg, func(d s3io.SplitDescriptor) error {
			descs = append(descs, d)
			return nil
		})
		if err != nil {
			t.Fatalf("plan %s with ListParallelism %d: %v", cfg.Prefix, cfg.ListParallelism, err)
		}
		return descs, st, p.Lists(), p.MaxListsInFlight()
	}
	// holdPagesUntilProbed holds a LIST that continues a range (a continuation token) until
	// a delimiter probe has been answered, for at most 2 s.
	holdPagesUntilProbed := func(n int) {
		if p.Lists()[n-1].ContinuationToken == "" {
			return
		}
		for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
			for _, l := range p.Lists() {
				if l.Delimiter == "/" && l.Status != 0 {
					return
				}
			}
		}
	}
	// Small descriptors (some 50 objects each) make many IDs to compare.
	smallSplits := func(prefix string, parallelism int) s3io.Config {
		return s3io.Config{Bucket: bucket, Prefix: prefix, Endpoint: p.URL, UsePathStyle: true, SplitTargetBytes: 2048, ListParallelism: parallelism}
	}
	for _, tc := range []struct{ name, prefix, startAfter string }{
		{"p/", "p/", ""},
		{"p/flat/", "p/flat/", ""},
		// Past most of the small folders: the split ranges must still start after it.
		{"p/ after p/f104/k03.ndjson", "p/", "p/f104/k03.ndjson"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prefix := tc.prefix
			cfgSeq, cfgPar := smallSplits(prefix, 1), smallSplits(prefix, 0) // 0: the default, 16
			cfgSeq.StartAfter, cfgPar.StartAfter = tc.startAfter, tc.startAfter
			seq, seqStats, seqLists, seqMax := plan(t, cfgSeq)
			// The premise above (the probe answers before the range's last page) is a race
			// on loopback: under the race detector and a loaded machine, pages 2 and 3 have
			// come back before the probe did, and nothing was left to cut. Holding a range's
			// later pages until a probe has been answered makes the premise hold, as S3's
			// tens of milliseconds per LIST usually would; the plans must be equal anyway.
			p.BeforeList = holdPagesUntilProbed
			par, parStats, parLists, parMax := plan(t, cfgPar)
			p.BeforeList = nil
			t.Logf("ListParallelism 1: %d LISTs, %d at once; default: %d LISTs, %d at once; %d descriptors",
				len(seqLists), seqMax, len(parLists), parMax, len(par))
			if !reflect.DeepEqual(seq, par) {
				i := 0
				for i < min(len(seq), len(par)) && reflect.DeepEqual(seq[i], par[i]) {
					i++
				}
				t.Errorf("the plans differ from descriptor %d on: %d descriptors sequentially, %d in parallel; IDs %v vs %v",
					i, len(seq), len(par), ids(seq[i:min(i+3, len(seq))]), ids(par[i:min(i+3, len(par))]))
			}
			var planned []string
			for _, d := range par {
				for _, m := range d.Members {
					planned = append(planned, m.Key)
				}
			}
			var want []string
			for _, k := range under(prefix) {
				if k > tc.startAfter {
					want = append(want, k)
				}
			}
			if !slices.Equal(planned, want) {
				t.Errorf("planned %d keys, want the %d under %s after %q in key order", len(planned), len(want), prefix, tc.startAfter)
			}
			n := int64(len(want))
			if seqStats.Objects != n || parStats.Objects != n || seqStats.KeysListed != n || parStats.KeysListed != n {
				t.Errorf("stats %+v and %+v: want %d objects, each key listed once", seqStats, parStats, n)
			}
			if seqMax != 1 {
				t.Errorf("ListParallelism 1 had %d LISTs in flight at once", seqMax)
			}
			for _, l := range seqLists {
				if l.Delimiter != "" {
					t.Errorf("ListParallelism 1 sent a delimiter probe: %+v", l)
				}
			}
			checkListPrefixes(t, parLists, bucket, prefix)
			if parMax < 2 {
				t.Errorf("the default parallelism had at most %d LIST in flight", parMax)
			}
			startAfters, probes := map[string]bool{}, 0
			for _, l := range append(seqLists, parLists...) {
				if l.StartAfter < tc.startAfter {
					t.Errorf("LIST with start-after %q, before the configured %q", l.StartAfter, tc.startAfter)
				}
			}
			for _, l := range parLists {
				if l.StartAfter != "" {
					startAfters[l.StartAfter] = true
				}
				if l.Delimiter == "/" {
					probes++
				}
			}
			// How many pieces a range is cut into follows how many workers are idle when its
			// first page arrives, which is timing (a race-detector run on a loaded machine cut
			// once, into two): one cut and one probe show both kinds of parallel LIST.
			if len(startAfters) < 2 || probes == 0 {
				t.Errorf("default parallelism: %d distinct start-after values, %d delimiter probes: want at least two and one", len(startAfters), probes)
			}
		})
	}

	// In a pipeline: s3io.Plan of p/, with the default parallelism, gives the descriptors
	// PlanDescriptors gives with one LIST at a time; and a prism Read of the 1,100 objects
	// of the small folders (selected by Match from a parallel listing of p/f, which holds
	// p/flat/ too) reads exactly their records. Reading only those keeps the test short:
	// versitygw serves some 100 to 200 GETs a second here.
	t.Run("Plan and Read", func(t *testing.T) {
		seq, _, _, _ := plan(t, smallSplits("p/", 1))
		var want []string
		for _, d := range seq {
			b, err := json.Marshal(d)
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, string(b))
		}
		p.ResetLists()
		planFile := filepath.Join(t.TempDir(), "plan.jsonl")
		pl, s := beam.NewPipelineWithRoot()
		textio.Write(s, planFile, beam.ParDo(s, descriptorJSON, s3io.Plan(s, smallSplits("p/", 0))))
		if err := ptest.Run(pl); err != nil {
			t.Fatalf("plan: %v", err)
		}
		got := s3test.ReadLines(t, planFile)
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("s3io.Plan gave %d descriptors, PlanDescriptors with ListParallelism 1 %d; they differ", len(got), len(want))
		}
		if p.MaxListsInFlight() < 2 {
			t.Errorf("s3io.Plan had at most %d LIST in flight", p.MaxListsInFlight())
		}

		cfg := s3io.Config{Bucket: bucket, Prefix: "p/", Match: "p/f[0-9]*/*", Endpoint: p.URL, UsePathStyle: true}
		descs, st, _, _ := plan(t, cfg)
		keys := under("p/f")[:1100] // the small folders sort before p/flat/
		if st.Objects != 1100 || strings.HasPrefix(keys[len(keys)-1], "p/flat/") {
			t.Fatalf("the Match plans %d objects, want the 1,100 of the small folders", st.Objects)
		}
		p.ResetLists()
		c := runRead(t, cfg, recordsOf(recs, keys...))
		if c["objects"] != 1100 || c["keys_listed"] != int64(len(under("p/f"))) || c["splits_planned"] != int64(len(descs)) {
			t.Errorf("counters %v: want 1,100 objects, each key under p/f listed once, %d splits", c, len(descs))
		}
		lists := p.Lists()
		checkListPrefixes(t, lists, bucket, "p/f")
		if n := int64(len(lists)); c["list_requests"] < 1 || c["list_requests"] > n || p.MaxListsInFlight() < 2 {
			t.Errorf("list_requests = %d, proxy saw %d LISTs, at most %d at once: want several at once", c["list_requests"], n, p.MaxListsInFlight())
		}
	})
	t.Logf("total %v", time.Since(start).Round(time.Millisecond))
}

func ids(descs []s3io.SplitDescriptor) []string {
	out := make([]string, len(descs))
	for i, d := range descs {
		out[i] = d.ID
	}
	return out
}
