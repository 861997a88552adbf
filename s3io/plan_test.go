package s3io

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spate-io/beam-s3/internal/fakelist"
	"github.com/spate-io/beam-s3/internal/s3test"
)

func sizedListing(sizes ...int64) []Member {
	out := make([]Member, len(sizes))
	for i, s := range sizes {
		out[i] = Member{Key: fmt.Sprintf("k/%03d", i), Size: s, ETag: fmt.Sprintf(`"etag-%d"`, i)}
	}
	return out
}

func TestSplitIDs(t *testing.T) {
	objs := sizedListing(60, 60, 60, 60, 60, 60)
	first := packMembers("b", objs, 100, 10)
	again := packMembers("b", sizedListing(60, 60, 60, 60, 60, 60), 100, 10)
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
	changed := sizedListing(60, 60, 60, 60, 60, 60)
	changed[3].ETag = `"etag-new"`
	after := packMembers("b", changed, 100, 10)
	for i := range first {
		if (first[i].ID != after[i].ID) != (i == 3) {
			t.Errorf("split %d: ID %s -> %s; only split 3 should change", i, first[i].ID, after[i].ID)
		}
	}

	// Length-prefixing keeps concatenations apart, and the bucket and version count.
	a := splitID("b", []Member{{Key: "ab", ETag: "c"}})
	b := splitID("b", []Member{{Key: "a", ETag: "bc"}})
	c := splitID("other", []Member{{Key: "ab", ETag: "c"}})
	if a == b || a == c {
		t.Errorf("distinct splits share an ID: %s %s %s", a, b, c)
	}
	if len(a) != 32 {
		t.Errorf("ID %q is not 32 hex digits", a)
	}
}

func TestParseS3URL(t *testing.T) {
	for _, tc := range []struct{ url, bucket, prefix, err string }{
		{"s3://logs", "logs", "", ""},
		{"s3://logs/", "logs", "", ""},
		{"s3://logs/a/b c%20+", "logs", "a/b c%20+", ""},
		{"http://logs/a", "", "", "not an s3:// URL"},
		{"s3://Bad_Bucket/x", "", "", "does not name a valid bucket"},
		{"s3:///x", "", "", "does not name a valid bucket"},
		{"", "", "", "not an s3:// URL"},
	} {
		b, p, err := parseS3URL(tc.url)
		switch {
		case tc.err == "" && (err != nil || b != tc.bucket || p != tc.prefix):
			t.Errorf("parseS3URL(%q) = %q, %q, %v; want %q, %q", tc.url, b, p, err, tc.bucket, tc.prefix)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), tc.url)):
			t.Errorf("parseS3URL(%q) error %v, want one naming the URL and saying %q", tc.url, err, tc.err)
		}
	}
}

// TestPlanSelection: Match, StartAfter, the time window and the archived-object policy pick
// exactly the objects they describe, and the LIST requests ask only for the glob's literal
// prefix.
func TestPlanSelection(t *testing.T) {
	var keys []string
	for d := range 3 {
		for i := range 40 {
			keys = append(keys, fmt.Sprintf("logs/2024-0%d-%02d/part-%d.gz", d+1, i%28+1, i))
		}
	}
	keys = append(keys, "logs/readme.txt", "other/x.gz")
	keys = slices.Compact(slices.Sorted(slices.Values(keys)))
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	srv := fakelist.New(fakelist.Options{Bucket: "sel", N: len(keys), Key: func(i int) string { return keys[i] },
		LastModified: func(i int) time.Time { return base.Add(time.Duration(i) * time.Hour) },
		StorageClass: func(i int) string {
			switch i % 10 {
			case 3:
				return "GLACIER"
			case 7:
				return "DEEP_ARCHIVE"
			case 5:
				return "GLACIER_IR"
			}
			return "STANDARD"
		}, LogLimit: 1000})
	defer srv.Close()
	s3test.SetAWSEnv(t, "test", "test")
	archived := func(i int) bool { return i%10 == 3 || i%10 == 7 }
	for _, tc := range []struct {
		name   string
		cfg    Config
		want   func(i int, key string) bool
		prefix string // every LIST request's prefix starts with it
	}{
		{"glob", Config{Match: "logs/2024-02-1?/*.gz"}, func(_ int, k string) bool {
			return strings.HasPrefix(k, "logs/2024-02-1") && len(k) == len("logs/2024-02-1x/")+len(k[len("logs/2024-02-1x/"):]) && !strings.Contains(k[len("logs/2024-02-1x/"):], "/")
		}, "logs/2024-02-1"},
		{"doublestar", Config{Prefix: "logs/", Match: "**/part-1[0-9].gz"}, func(_ int, k string) bool {
			return strings.HasPrefix(k, "logs/") && strings.Contains(k, "/part-1") && len(k[strings.LastIndex(k, "/"):]) == len("/part-10.gz")
		}, "logs/"},
		{"start after", Config{Prefix: "logs/", StartAfter: "logs/2024-03"}, func(_ int, k string) bool { return strings.HasPrefix(k, "logs/") && k > "logs/2024-03" }, "logs/"},
		{"time window", Config{ModifiedAfter: base.Add(10 * time.Hour), ModifiedBefore: base.Add(20 * time.Hour)}, func(i int, _ string) bool { return i >= 10 && i < 20 }, ""},
	} {
		for _, skip := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/skip-archived=%v", tc.name, skip), func(t *testing.T) {
				srv.ResetStats()
				cfg := tc.cfg
				cfg.Bucket, cfg.Endpoint, cfg.UsePathStyle, cfg.Region, cfg.SkipArchived = "sel", srv.URL, true, "us-east-1", skip
				var got, gotArchived []string
				st, err := PlanDescriptors(context.Background(), cfg, func(d SplitDescriptor) error {
					for _, m := range d.Members {
						got = append(got, m.Key)
						if m.Archived != "" {
							gotArchived = append(gotArchived, m.Key)
						}
					}
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				var want, wantArchived []string
				var skipped int64
				for i, k := range keys {
					if !tc.want(i, k) {
						continue
					}
					if archived(i) {
						if skip {
							skipped++
							continue
						}
						wantArchived = append(wantArchived, k)
					}
					want = append(want, k)
				}
				if len(want) == 0 || !slices.Equal(got, want) || !slices.Equal(gotArchived, wantArchived) {
					t.Fatalf("planned %q (archived %q), want %q (archived %q)", got, gotArchived, want, wantArchived)
				}
				if st.SkippedArchived != skipped || st.Archived != int64(len(wantArchived)) {
					t.Errorf("stats %+v; want %d skipped archived, %d archived", st, skipped, len(wantArchived))
				}
				for _, r := range srv.Stats().Log {
					if !strings.HasPrefix(r.Prefix, tc.prefix) {
						t.Errorf("a LIST request asked for prefix %q, want it under %q", r.Prefix, tc.prefix)
					}
				}
			})
		}
	}
}
