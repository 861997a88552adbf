package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/spate-io/beam-s3/internal/s3test"
)

// planBucket stores a small bucket and returns the flags that reach it. Under logs/2024/,
// --match keeps a..e: two gzip, one zstd, a 300 KiB ndjson object that a 4 KiB split target
// cuts into 64 KiB segments (after a probe finds it uncompressed) and an empty one; x.gz and
// y.ndjson are listed and skipped. logs/2023/ is outside the LIST prefix the glob gives.
func planBucket(t *testing.T) []string {
	srv := s3test.New(t)
	srv.CreateBucket(t, "plan-test")
	gz := append([]byte{0x1f, 0x8b}, make([]byte, 998)...) // never read: only named
	for key, data := range map[string][]byte{
		"logs/2023/old.gz":   gz,
		"logs/2024/a.gz":     gz,
		"logs/2024/b.gzip":   make([]byte, 2048),
		"logs/2024/c.zst":    make([]byte, 5000),
		"logs/2024/d.ndjson": bytes.Repeat([]byte("{\"n\":1234567890123456789012345}\n"), 300*1024/32),
		"logs/2024/e.ndjson": nil,
		"logs/2024/x.gz":     gz,
		"logs/2024/y.ndjson": []byte("{}\n"),
	} {
		srv.Put(t, "plan-test", key, data)
	}
	return []string{"--bucket", "plan-test", "--prefix", "logs/", "--match", "logs/2024/[a-e]*",
		"--endpoint", srv.URL, "--path-style", "--region", "us-east-1", "--split-target", "4KiB"}
}

// The expected plan, worked out by hand from the packing rules: [a b] (3048 B), [c], five
// segments of 61440 B, [e]. GETs: a and b are the 256 KiB and 1 MiB ramp parts of their
// descriptor; every other descriptor needs one part; the segments' reads overlap by one byte
// before and 64 KiB after each.
const (
	wantObjects     = 5
	wantBytes       = 1000 + 2048 + 5000 + 307200
	wantDescriptors = 8
	wantSegments    = 5
	wantSkipped     = 2
	wantGets        = 9
	wantTransfer    = 3048 + 5000 + 126976 + 126977 + 126977 + 122881 + 61441
)

func TestPlanText(t *testing.T) {
	args := planBucket(t)
	var out bytes.Buffer
	if err := run(context.Background(), args, &out); err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", out.String())
	for _, want := range []string{
		`plan +s3://plan-test/logs/ \(LIST prefix "logs/2024/"\)`,
		`listed +7 keys with \d+ LIST requests in `,
		`objects +5, 307\.9 KiB \(315248 B\)`,
		`descriptors +8: bytes 0 B / 60\.0 KiB / 60\.0 KiB, members 1 / 1 / 2 \(min / median / max; exact median\)`,
		`segments +5\n`,
		`compression +auto\n`,
		`  gzip +2 objects, 3\.0 KiB \(3048 B\)  by its name\n`,
		`  zstd +1 objects, 4\.9 KiB \(5000 B\)  by its name\n`,
		`  other +2 objects, 300\.0 KiB  none, or a format found by its magic bytes: auto mode probes these when read\n`,
		`framer +lines\n`,
		`storage classes +STANDARD 5\n`,
		`archived +0 planned: each will be a Failure "archived"`,
		`skipped +2 left out by --match or the time window\n`,
		`largest +5 by size\n  300\.0 KiB +logs/2024/d\.ndjson\n  4\.9 KiB \(5000 B\) +logs/2024/c\.zst\n`,
		`  GET requests +9 \(parts of 2\.0 MiB`,
		`  bytes transferred +559\.9 KiB \(573300 B\)\n`,
		`  probe GETs +1, 512 B \(where can a large object be cut`,
	} {
		if !regexp.MustCompile(want).MatchString(out.String()) {
			t.Errorf("output lacks %s", want)
		}
	}
}

func TestPlanJSON(t *testing.T) {
	args := append(planBucket(t), "--json", "--top", "1")
	var out bytes.Buffer
	if err := run(context.Background(), args, &out); err != nil {
		t.Fatal(err)
	}
	var r Report
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("--json gave %q: %v", out.String(), err)
	}
	d := r.Descriptors
	if r.ListPrefix != "logs/2024/" || r.KeysListed != 7 || r.Objects != wantObjects || r.Bytes != wantBytes ||
		d.Count != wantDescriptors || d.MinBytes != 0 || d.MedianBytes != 61440 || d.MaxBytes != 61440 ||
		d.MinMembers != 1 || d.MedianMembers != 1 || d.MaxMembers != 2 || !d.MedianExact ||
		r.Segments != wantSegments || r.Skipped != wantSkipped || r.Archived != 0 || r.StorageClasses["STANDARD"] != 5 {
		t.Errorf("report %+v", r)
	}
	wantMix := []Mix{{"gzip", 2, 3048}, {"zstd", 1, 5000}, {"other", 2, 307200}}
	if len(r.Compression) != len(wantMix) {
		t.Fatalf("compression %+v, want %+v", r.Compression, wantMix)
	}
	for i := range wantMix {
		if r.Compression[i] != wantMix[i] {
			t.Errorf("compression %+v, want %+v", r.Compression, wantMix)
		}
	}
	if len(r.Largest) != 1 || r.Largest[0] != (Object{Key: "logs/2024/d.ndjson", Size: 307200}) {
		t.Errorf("largest %+v", r.Largest)
	}
	e := r.Estimate
	if e.GetRequests != wantGets || e.BytesTransferred != wantTransfer || e.PlanProbeGets != 1 || e.PlanProbeBytes != 512 ||
		e.ListRequests != r.ListRequests || e.ListRequests < 1 || e.PartBytes != 2<<20 {
		t.Errorf("estimate %+v", e)
	}
}

func TestBadFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "invalid --bucket: s3io: Config.Bucket is empty"},
		{[]string{"--bucket", "b"}, "invalid --bucket"},
		{[]string{"--bucket", "bkt", "--split-target", "lots"}, `invalid value "lots" for flag -split-target`},
		{[]string{"--bucket", "bkt", "--split-target", "-1"}, "invalid --split-target: s3io: Config.SplitTargetBytes is -1"},
		{[]string{"--bucket", "bkt", "--part-bytes", "1GiB"}, "invalid --part-bytes"},
		{[]string{"--bucket", "bkt", "--framer", "xml"}, `invalid --framer: s3io: Config.Framer "xml" is not registered`},
		{[]string{"--bucket", "bkt", "--compression", "lzma"}, "invalid --compression"},
		{[]string{"--bucket", "bkt", "--match", "logs/[z-a]"}, "invalid --match"},
		{[]string{"--bucket", "bkt", "--prefix", "a/", "--match", "b/*"}, "invalid --match"},
		{[]string{"--bucket", "bkt", "--modified-after", "yesterday"}, "not an RFC 3339 time"},
		{[]string{"--bucket", "bkt", "--modified-after", "2024-02-01T00:00:00Z", "--modified-before", "2024-01-01T00:00:00Z"}, "invalid --modified-after"},
		{[]string{"--bucket", "bkt", "--top", "-1"}, "--top is -1"},
		{[]string{"--bucket", "bkt", "--nope"}, "flag provided but not defined: -nope"},
		{[]string{"--bucket", "bkt", "stray"}, `unexpected argument "stray"`},
	} {
		var out bytes.Buffer
		err := run(context.Background(), c.args, &out)
		var ue usageError
		if err == nil || !errors.As(err, &ue) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want a usage error containing %q", c.args, err, c.want)
		}
		if out.Len() > 0 {
			t.Errorf("%q: printed %q", c.args, out.String())
		}
	}
	var out bytes.Buffer
	if err := run(context.Background(), []string{"-h"}, &out); err != nil || !strings.Contains(out.String(), "-split-target") {
		t.Errorf("-h: %v, %q", err, out.String())
	}
}

// TestParts checks the GET model against prefetch.go's cutting: a restriction's first two
// parts are 256 KiB and 1 MiB (capped at PartBytes), later ones PartBytes, and an empty range
// still costs one GET.
func TestParts(t *testing.T) {
	for _, c := range []struct {
		n, partBytes int64
		issued       int
		want         int64
	}{
		{0, 2 << 20, 0, 1},
		{0, 2 << 20, 5, 1},
		{5 << 20, 2 << 20, 0, 4},                 // 256 KiB, 1 MiB, 2 MiB, 1.75 MiB
		{5 << 20, 2 << 20, 1, 3},                 // 1 MiB, 2 MiB, 2 MiB
		{5 << 20, 2 << 20, 2, 3},                 // 2, 2, 1 MiB
		{1 << 20, 128 << 10, 0, 8},               // every part capped at 128 KiB
		{256<<10 + 1, 2 << 20, 0, 2},             // one byte spills into the 1 MiB part
		{256<<10 + 1<<20 + 1, 2 << 20, 0, 3},     // and one into a full part
		{256<<10 + 1<<20 + 4<<20, 2 << 20, 0, 4}, // exact multiples
	} {
		issued := c.issued
		if got := parts(c.n, c.partBytes, &issued); got != c.want {
			t.Errorf("parts(%d, %d, issued %d) = %d, want %d", c.n, c.partBytes, c.issued, got, c.want)
		}
	}
}
