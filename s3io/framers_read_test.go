package s3io

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/sdf"

	"github.com/spate-io/beam-s3/internal/s3test"
)

// csvFixture returns n CSV records with quoted commas, "" quotes, LF and CRLF inside quoted
// fields, CRLF line ends and a header, as one object, and its records (header excluded).
func csvFixture(n int) (data []byte, recs []string) {
	rng := rand.New(rand.NewPCG(uint64(n), 19))
	var b bytes.Buffer
	b.WriteString("id,comment,height\r\n")
	for i := range n {
		var rec string
		switch i % 4 {
		case 0:
			rec = fmt.Sprintf(`%d,"plain, with a comma",5'11"`, i)
		case 1:
			rec = fmt.Sprintf("%d,\"two\nlines and a \"\"quote\"\"\",%d", i, rng.IntN(200))
		case 2:
			rec = fmt.Sprintf("%d,\"crlf\r\ninside %s\",", i, strings.Repeat("y", rng.IntN(200)))
		default:
			rec = fmt.Sprintf("%d,unquoted %s,180", i, strings.Repeat("z", rng.IntN(300)))
		}
		b.WriteString(rec + "\r\n")
		recs = append(recs, rec)
	}
	return b.Bytes(), recs
}

// cloudTrailFixture returns n CloudTrail-shaped events as one {"Records":[…]} document.
func cloudTrailFixture(n int) (doc []byte, recs []string) {
	var b bytes.Buffer
	b.WriteString(`{"Records": [` + "\n")
	for i := range n {
		ev := fmt.Sprintf(`{"eventVersion":"1.08","userIdentity":{"type":"AssumedRole","arn":"arn:aws:sts::123456789012:assumed-role/r/%d"},"eventTime":"2026-12-01T10:%02d:00Z","eventName":"GetObject","requestParameters":{"bucketName":"b","key":"k\"%d\\n"},"resources":[{"ARN":"arn:aws:s3:::b/k"}],"readOnly":true,"n":%d.5e3}`, i, i%60, i, i)
		if i > 0 {
			b.WriteString(",\n  ")
		}
		b.WriteString(ev)
		recs = append(recs, ev)
	}
	b.WriteString("\n]}\n")
	return b.Bytes(), recs
}

// A csv object, through a checkpoint and a fractional split inside it, is read exactly: each
// record once, raw, with its quoted newlines, and the header dropped. The residual resumes
// at the last record's byte offset (csv holds no state between records).
func TestCSVThroughSplits(t *testing.T) {
	data, recs := csvFixture(4000)
	for _, tc := range []struct {
		name string
		enc  func([]byte) []byte
	}{{"people.csv", identity}, {"people.csv.gz", gzipEnc}} {
		t.Run(tc.name, func(t *testing.T) {
			f := newObjectFixture(t, tc.name, tc.enc(data), recs, Config{Framer: "csv", SkipHeaderRecords: 1})
			if got := f.run(t, fullRestriction(f.desc), nil); !slices.Equal(got, recs) {
				t.Fatalf("whole read: %d records, want %d in order", len(got), len(recs))
			}
			for _, fraction := range []float64{0, 0.5} {
				var residual restriction
				primary := f.run(t, fullRestriction(f.desc), func(rt *sdf.LockRTracker, n int) {
					if n == 1111 {
						_, r, err := rt.TrySplit(fraction)
						if err != nil || r == nil {
							t.Fatalf("TrySplit(%v) = %v, %v", fraction, r, err)
						}
						residual = r.(restriction)
					}
				})
				// The hint is at the end of the run of claims holding record 1111.
				if !residual.Resume.Known() || residual.Resume.Index < 1111 || residual.Resume.Index > residual.Start.Index {
					t.Fatalf("split %v: residual resume %+v, want a hint from record 1111 to %d", fraction, residual.Resume, residual.Start.Index)
				}
				rest := f.run(t, residual, nil)
				if got := append(primary, rest...); !slices.Equal(got, recs) {
					t.Fatalf("split %v: primary %d + residual %d records, want the %d in order", fraction, len(primary), len(rest), len(recs))
				}
			}
		})
	}
}

// A CloudTrail-shaped .json.gz is read as its events, exactly, and through a checkpoint: the
// residual carries no byte hint and re-frames the object, skipping what the primary emitted.
func TestJSONArrayCloudTrail(t *testing.T) {
	doc, recs := cloudTrailFixture(3000)
	for i, r := range recs {
		if !json.Valid([]byte(r)) {
			t.Fatalf("fixture event %d is not JSON: %s", i, r)
		}
	}
	f := newObjectFixture(t, "AWSLogs/123456789012/CloudTrail/eu-west-1/2026/12/01/trail.json.gz", s3test.Gzip(string(doc)), recs, Config{Framer: "json-array"})
	if got := f.run(t, fullRestriction(f.desc), nil); !slices.Equal(got, recs) {
		t.Fatalf("whole read: %d records, want %d in order", len(got), len(recs))
	}
	var residual restriction
	primary := f.run(t, fullRestriction(f.desc), checkpointAfter(t, 777, &residual))
	if residual.Resume.Known() || residual.Start.Index < 777 || residual.Start.Index != int64(len(primary)) {
		t.Fatalf("residual %+v: want a start at the end of the run of claims holding record 777 (%d), and no byte hint", residual, len(primary))
	}
	rest := f.run(t, residual, nil)
	if got := append(primary, rest...); !slices.Equal(got, recs) {
		t.Fatalf("primary %d + residual %d records, want the %d in order", len(primary), len(rest), len(recs))
	}
}

// Malformed JSON fails its object as corrupt, naming the byte offset; the records before it
// were emitted.
func TestJSONArrayMalformedIsCorrupt(t *testing.T) {
	doc := []byte(`{"Records":[{"a":1},{"b":2} {"c":3}]}`)
	f := newObjectFixture(t, "bad.json", doc, nil, Config{Framer: "json-array"})
	rt := f.fn.CreateTracker(fullRestriction(f.desc))
	var got []string
	var failures []Failure
	err := f.fn.process(t.Context(), rt, f.desc, func(_ int, _ int64, _ string, rec []byte) { got = append(got, string(rec)) },
		func(fl Failure) { failures = append(failures, fl) })
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []string{`{"a":1}`, `{"b":2}`}) || len(failures) != 1 || failures[0].Reason != ReasonCorrupt ||
		failures[0].Index != 2 || !strings.Contains(failures[0].Message, "at byte 27") {
		t.Fatalf("records %q, failures %+v: want the first two, then one corrupt failure at record 2 naming byte 27", got, failures)
	}
}

// Config.MaxDecoderWindowBytes reaches the readers' decoders: a zstd frame asking for more
// than it fails as unsupported, naming the window and the field, and emits nothing; the
// default reads the same object.
func TestMaxDecoderWindowBytes(t *testing.T) {
	text, recs := s3test.NDJSON("window", 3000) // one single-segment frame: its window is its size
	for _, limit := range []int64{64 << 10, 0} {
		f := newObjectFixture(t, "w.ndjson.zst", s3test.Zstd(text), recs, Config{MaxDecoderWindowBytes: limit})
		rt := f.fn.CreateTracker(fullRestriction(f.desc))
		var got []string
		var failures []Failure
		if err := f.fn.process(t.Context(), rt, f.desc, func(_ int, _ int64, _ string, rec []byte) { got = append(got, string(rec)) },
			func(fl Failure) { failures = append(failures, fl) }); err != nil {
			t.Fatal(err)
		}
		switch {
		case limit > 0 && (len(got) != 0 || len(failures) != 1 || failures[0].Reason != ReasonUnsupported || !strings.Contains(failures[0].Message, "MaxDecoderWindowBytes")):
			t.Errorf("limit %d: %d records, failures %+v; want none and one unsupported failure naming MaxDecoderWindowBytes", limit, len(got), failures)
		case limit == 0 && (!slices.Equal(got, recs) || len(failures) != 0):
			t.Errorf("default limit: %d records, failures %+v; want the %d records", len(got), failures, len(recs))
		}
	}
}
