package s3io_test

import (
	"context"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/local"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/textio"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/spate-io/beam-s3/internal/s3test"
	"github.com/spate-io/beam-s3/s3io"
)

func init() {
	register.Function1x1(describeSplit)
}

// describeSplit renders a descriptor as one line: its ID and its members.
func describeSplit(d s3io.SplitDescriptor) string {
	var b strings.Builder
	b.WriteString(d.ID)
	for _, m := range d.Members {
		b.WriteString(" " + m.Key + "@" + m.ETag)
	}
	return b.String()
}

// planLines runs s3io.Plan alone and returns its descriptors, one line each, sorted.
func planLines(t *testing.T, cfg s3io.Config) []string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "plan.txt")
	p, s := beam.NewPipelineWithRoot()
	textio.Write(s, out, beam.ParDo(s, describeSplit, s3io.Plan(s, cfg)))
	if err := ptest.Run(p); err != nil {
		t.Fatalf("plan pipeline failed: %v", err)
	}
	got := s3test.ReadLines(t, out)
	sort.Strings(got)
	return got
}

func TestPlanIsDeterministicAndPinsETags(t *testing.T) {
	f := s3test.New(t)
	f.CreateBucket(t, "plan")
	for _, k := range []string{"a", "b", "c", "d", "e", "f", "g"} {
		f.Put(t, "plan", "x/"+k, []byte(strings.Repeat(k, 40)+"\n"))
	}
	f.Put(t, "plan", "x/dir/", nil)
	cfg := s3io.Config{Bucket: "plan", Prefix: "x/", Endpoint: f.URL, UsePathStyle: true, SplitTargetBytes: 100}

	first := planLines(t, cfg)
	var planned []string
	for _, l := range first {
		for _, m := range strings.Fields(l)[1:] {
			planned = append(planned, m[:strings.Index(m, "@")])
		}
	}
	if sort.Strings(planned); strings.Join(planned, " ") != "x/a x/b x/c x/d x/e x/f x/g" {
		t.Fatalf("planned %q in %d splits, want each of the 7 objects once", planned, len(first))
	}
	if again := planLines(t, cfg); strings.Join(again, "\n") != strings.Join(first, "\n") {
		t.Fatalf("replanning an unchanged prefix changed the plan:\n%q\n%q", first, again)
	}
	for _, l := range first {
		if strings.Contains(l, "x/dir/") {
			t.Errorf("directory marker planned: %q", l)
		}
	}

	f.Put(t, "plan", "x/c", []byte(strings.Repeat("C", 40)+"\n"))
	after := planLines(t, cfg)
	var changed []string
	for i := range first {
		if first[i] != after[i] && !contains(first, after[i]) {
			changed = append(changed, after[i])
		}
	}
	if len(changed) != 1 || !strings.Contains(changed[0], "x/c@") {
		t.Fatalf("after overwriting x/c, changed splits = %q, want exactly the one holding x/c", changed)
	}
}

func contains(list []string, s string) bool {
	for _, l := range list {
		if l == s {
			return true
		}
	}
	return false
}

// A descriptor planned before an overwrite or a delete must not read the object's new state.
func TestPinnedReadRefusesChangedObjects(t *testing.T) {
	f := s3test.New(t)
	f.CreateBucket(t, "pins")
	f.Put(t, "pins", "k/changed.txt", []byte("old content\n"))
	f.Put(t, "pins", "k/deleted.txt", []byte("doomed\n"))
	head := func(key string) s3io.Member {
		out, err := f.Client.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String("pins"), Key: aws.String(key)})
		if err != nil {
			t.Fatal(err)
		}
		return s3io.Member{Key: key, Size: aws.ToInt64(out.ContentLength), ETag: aws.ToString(out.ETag)}
	}
	changed, deleted := head("k/changed.txt"), head("k/deleted.txt")
	f.Put(t, "pins", "k/changed.txt", []byte("NEW CONTENT that must never appear\n"))
	if _, err := f.Client.DeleteObject(context.Background(), &s3.DeleteObjectInput{Bucket: aws.String("pins"), Key: aws.String("k/deleted.txt")}); err != nil {
		t.Fatal(err)
	}
	cfg := s3io.Config{Endpoint: f.URL, UsePathStyle: true}

	for _, tc := range []struct {
		member s3io.Member
		want   []string
	}{
		{changed, []string{"k/changed.txt", "PreconditionFailed", "overwritten since planning"}},
		{deleted, []string{"k/deleted.txt", "NoSuchKey", "deleted since planning"}},
	} {
		t.Run(tc.member.Key, func(t *testing.T) {
			members := []s3io.Member{tc.member}
			d := s3io.SplitDescriptor{ID: s3io.SplitID("pins", members), Bucket: "pins", Members: members}
			p, s := beam.NewPipelineWithRoot()
			recs := s3io.ReadSplits(s, cfg, beam.Create(s, d))
			beam.ParDo(s, s3test.RecordString, recs)
			err := ptest.Run(p)
			if err == nil {
				t.Fatal("pipeline succeeded reading an object that changed after planning")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not mention %q: %v", w, err)
				}
			}
		})
	}
}
