package s3io

import (
	"context"
	"slices"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/sdf"

	"github.com/spate-io/beam-s3/internal/clitool"
	"github.com/spate-io/beam-s3/internal/s3test"
)

// A segment large enough to decode in chunks, checkpointed at 90 % of its records, resumes
// at the unit start its read passed last before the resume point, not at its first unit:
// the residual decodes again less than two chunks, and primary and residual give the
// segment's records once. For gzip members, zstd frames and bzip2 streams written by the
// tools.
func TestSegmentResumesAtAUnit(t *testing.T) {
	clitool.Need(t, "gzip", "zstd", "pbzip2")
	plain, _ := unitText(60000) // ~14 MiB
	srv := s3test.New(t)
	srv.CreateBucket(t, "units")
	gz, _ := clitool.RunChunks(t, plain, 256<<10, "gzip", "-c")
	zs, _ := clitool.RunChunks(t, plain, 256<<10, "zstd", "-c", "-q")
	pb := clitool.Run(t, plain, "pbzip2", "-b2", "-p2", "-c")
	objs := map[string][]byte{"cat-gzip.ndjson.gz": gz, "cat-zstd.ndjson.zst": zs, "pbzip2.ndjson.bz2": pb}
	for k, data := range objs {
		srv.Put(t, "units", k, data)
	}
	cfg := Config{Bucket: "units", Endpoint: srv.URL, UsePathStyle: true, Framer: "ndjson", SplitTargetBytes: 5 << 20}
	byKey := map[string][]Member{}
	if _, err := PlanDescriptors(t.Context(), cfg, func(d SplitDescriptor) error {
		for _, m := range d.Members {
			byKey[m.Key] = append(byKey[m.Key], m)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	fn := &reader{Cfg: cfg.WithDefaults()}
	if err := fn.Setup(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer fn.Teardown()
	for key := range objs {
		t.Run(key, func(t *testing.T) {
			ms := byKey[key]
			slices.SortFunc(ms, func(a, b Member) int { return int(a.Start - b.Start) })
			var big []Member // the first segment and a later one, if they decode in chunks
			for _, m := range ms {
				if m.End-m.Start > 2*unitChunkBytes && (len(big) == 0 || m.Start > 0 && len(big) == 1 && big[0].Start == 0) {
					big = append(big, m)
				}
			}
			if len(ms) < 2 || len(big) < 2 {
				t.Fatalf("planned %+v: want segments, two of them over %d bytes", ms, 2*unitChunkBytes)
			}
			for _, m := range big {
				resumeInSegment(t, fn, m)
			}
		})
	}
}

// resumeInSegment reads segment m, checkpoints it at 90 % of its records and reads
// the residual, checking what TestSegmentResumesAtAUnit says.
func resumeInSegment(t *testing.T, fn *reader, m Member) {
	t.Helper()
	d := SplitDescriptor{ID: "big", Bucket: "units", Members: []Member{m}}
	read := func(rest restriction, split func(*sdf.LockRTracker, int)) ([]string, map[string]int64) {
		return readSegment(t, fn, d, rest, split)
	}
	all, whole := read(fullRestriction(d), nil)
	var residual restriction
	primary, _ := read(fullRestriction(d), checkpointAfter(t, len(all)*9/10, &residual))
	if residual.Resume.Checkpoint == "" {
		t.Fatalf("residual %+v: want a hint at a unit start", residual.Resume)
	}
	forgetHandovers() // the residual resumes on its own, as on another worker
	rest, c := read(residual, nil)
	if got := append(primary, rest...); !slices.Equal(got, all) {
		t.Fatalf("primary and residual gave %d records, want the segment's %d", len(got), len(all))
	}
	// Two chunks of stored bytes, decoded at this text's ratio (about 1.6), bound what
	// the residual decodes again; the segment's bytes before the resume point are 90 %.
	chunk := int64(2*unitChunkBytes) * whole["decompressed_bytes"] / (m.End - m.Start)
	if c["redecoded_bytes"] <= 0 || c["redecoded_bytes"] > chunk || c["redecoded_bytes"] >= residual.Resume.Offset/2 {
		t.Errorf("residual decoded again %d bytes of the %d before its resume point, want at most two chunks (%d)", c["redecoded_bytes"], residual.Resume.Offset, chunk)
	}
	t.Logf("[%d, %d): resumed at record %d, offset %d; decoded again %d bytes (hint %d bytes)", m.Start, m.End, residual.Resume.Index, residual.Resume.Offset, c["redecoded_bytes"], len(residual.Resume.Checkpoint))
}
