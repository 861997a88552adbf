package s3io

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/coder"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/metrics"

	"github.com/spate-io/beam-s3/internal/bigdata"
	"github.com/spate-io/beam-s3/internal/clitool"
	"github.com/spate-io/beam-s3/internal/faultproxy"
	"github.com/spate-io/beam-s3/internal/s3test"
	"github.com/spate-io/beam-s3/s3io/internal/decode"
)

// bigGzip writes size bytes of records, compresses them into one gzip member with pigz (one
// member, its blocks flushed to byte boundaries with stored blocks every 128 KiB of input),
// and stores the object in a fixture; it returns the fixture and the record count.
func bigGzip(t *testing.T, size int64) (*resumeFixture, int64) {
	clitool.Need(t, "pigz")
	dir := t.TempDir()
	plain := filepath.Join(dir, "records.ndjson")
	records := bigdata.WriteFile(t, plain, size, true)
	clitool.RunIn(t, dir, nil, "sh", "-c", "pigz -p 2 -c records.ndjson > records.ndjson.gz && rm records.ndjson")
	data, err := os.ReadFile(plain + ".gz")
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(plain + ".gz")
	return newObjectFixture(t, "big.ndjson.gz", data, nil, Config{Framer: "ndjson"}), records
}

// checkRecords returns a record sink that checks records arrive in order from index from
// on, each the generator's; it calls after(n) after the n-th.
func checkRecords(t *testing.T, from int64, after func(n int64)) (sink func(int, int64, string, []byte), next *int64) {
	next = new(int64)
	*next = from
	var want []byte
	sink = func(_ int, idx int64, _ string, rec []byte) {
		if want = bigdata.AppendLine(want[:0], *next, true); idx != *next || string(rec) != string(want) {
			t.Fatalf("record %d (index %d) is %.60q, want %.60q", *next, idx, rec, want)
		}
		*next++
		if after != nil {
			after(*next - from)
		}
	}
	return sink, next
}

// A checkpoint and a split at 90 % of a single-member gzip object of 1 GiB of records hand
// the residual the inflate checkpoint before its first record: the residual starts with a
// ranged GET there and decodes again at most two checkpoint intervals, not 90 % of the
// object, and the records of primary and residual are the object's, once each, in order.
func TestResumeInsideGzipFromCheckpoint(t *testing.T) {
	size := int64(1 << 30)
	if raceDetector {
		size = 96 << 20
	}
	f, records := bigGzip(t, size)
	stored := f.desc.Members[0].Size
	// Decoded bytes per checkpoint interval, at this object's ratio.
	interval := float64(defaultCheckpointBytes) * float64(size) / float64(stored)
	for _, fraction := range []float64{0, 0.5} {
		t.Run(fmt.Sprintf("split at %.1f", fraction), func(t *testing.T) {
			var residual restriction
			at := records * 9 / 10
			ctx := metrics.SetPTransformID(metrics.SetBundleID(context.Background(), "bundle"), fmt.Sprintf("primary-%v", fraction))
			rt := f.fn.CreateTracker(fullRestriction(f.desc))
			sink, next := checkRecords(t, 0, func(n int64) {
				if n == at {
					_, r, err := rt.TrySplit(fraction)
					if err != nil || r == nil {
						t.Fatalf("TrySplit(%v) = %v, %v", fraction, r, err)
					}
					residual = r.(restriction)
				}
			})
			if err := f.fn.process(ctx, rt, f.desc, sink, func(fl Failure) { t.Errorf("unexpected failure %v", fl) }); err != nil {
				t.Fatal(err)
			}
			if *next != residual.Start.Index || residual.Resume.Checkpoint == "" {
				t.Fatalf("primary emitted %d records; residual %+v starts at %v, want a resume hint with an inflate checkpoint", *next, residual.Resume.Index, residual.Start)
			}
			t.Logf("split at %v: hint %d bytes, of which the checkpoint %d", fraction, len(residual.Resume.Checkpoint)+24, len(residual.Resume.Checkpoint))
			ctx = metrics.SetPTransformID(metrics.SetBundleID(context.Background(), "bundle"), fmt.Sprintf("residual-%v", fraction))
			sink, next = checkRecords(t, residual.Start.Index, nil)
			before := len(f.srv.Requests(f.key))
			forgetHandovers() // the residual resumes on its own, as on another worker
			if err := f.fn.process(ctx, f.fn.CreateTracker(residual), f.desc, sink, func(fl Failure) { t.Errorf("unexpected failure %v", fl) }); err != nil {
				t.Fatal(err)
			}
			if *next != records {
				t.Fatalf("primary and residual read %d records, want %d", *next, records)
			}
			c := countersOf(ctx)
			t.Logf("residual: redecoded %d bytes (interval %.0f decoded bytes), skipped %d records; counters %v", c["redecoded_bytes"], interval, c["skipped_records"], c)
			// A fractional split lands past the last record read: the residual also skips the
			// records between its hint (the last record claimed) and its first one, which nobody
			// had decoded when it split. What lies before the hint is what it decodes again.
			var ahead int64
			for i := residual.Resume.Index; i < residual.Start.Index; i++ {
				ahead += int64(len(bigdata.NoisyLine(i))) + 1
			}
			if again := c["redecoded_bytes"] - ahead; float64(again) > 2*interval || again <= 0 {
				t.Errorf("the residual decoded %d bytes before its resume point again, want at most two checkpoint intervals (%.0f)", again, 2*interval)
			}
			// Its first GET starts at the checkpoint's stored byte, at most two checkpoint
			// intervals of stored bytes before where the split fell (90 %).
			if first := f.srv.Requests(f.key)[before]; first.Range == "" {
				t.Errorf("the residual's first GET has no range: it read from the object's first byte")
			} else if a, _, _ := parseRange(first.Range); float64(a) < 0.9*float64(stored)-2*defaultCheckpointBytes {
				t.Errorf("the residual's first GET starts at %d of %d stored bytes, more than two checkpoint intervals before 90 %%", a, stored)
			}
		})
	}
	// A body that breaks mid-member is resumed from the byte where it broke: the whole read
	// fetches the object's bytes once, checkpoints or not.
	t.Run("body reset", func(t *testing.T) {
		srv, n0 := f.srv, len(f.srv.Requests(f.key))
		srv.SetFault(f.key, "", 1, faultproxy.Fault{ResetAfter: stored / 2})
		sink, next := checkRecords(t, 0, nil)
		if err := f.fn.process(context.Background(), f.fn.CreateTracker(fullRestriction(f.desc)), f.desc, sink, func(fl Failure) { t.Errorf("unexpected failure %v", fl) }); err != nil {
			t.Fatal(err)
		}
		if sent := s3test.BodyBytes(srv.Requests(f.key)[n0:]); *next != records || float64(sent) > 1.05*float64(stored) {
			t.Errorf("%d records (want %d); %d bytes sent for %d stored (want at most 1.05x)", *next, records, sent, stored)
		}
	})
}

// Read and ReadBatches resume a gzip object at the inflate checkpoint a checkpoint's hint
// carries, from objects written by gzip and by pigz, and decode again at most two checkpoint
// intervals; the hint survives the restriction's coder round trip.
func TestReadAndBatchesResumeAtInflateCheckpoint(t *testing.T) {
	plain, recs := unitText(40000) // ~10 MB of random characters
	for _, tool := range []string{"gzip", "pigz"} {
		t.Run(tool, func(t *testing.T) {
			data := clitool.Run(t, plain, tool, "-c")
			f := newObjectFixture(t, "logs.ndjson.gz", data, recs, Config{Framer: "ndjson", CheckpointBytes: 256 << 10})
			const k = 30000
			var residual restriction
			primary := f.run(t, fullRestriction(f.desc), checkpointAfter(t, k, &residual))
			if len(primary) < k || residual.Resume.Index != int64(len(primary)) || residual.Resume.Checkpoint == "" || residual.Resume.StoredOffsets {
				t.Fatalf("primary %d records, residual hint %+v: want at least %d, the hint at its end, and an inflate checkpoint", len(primary), residual.Resume.Index, k)
			}
			rest, c := f.runCounted(t, residual, nil)
			if got := append(primary, rest...); !slices.Equal(got, recs) {
				t.Fatalf("primary and residual gave %d records, want %d in order", len(got), len(recs))
			}
			interval := 256 << 10 * float64(len(plain)) / float64(len(data))
			if float64(c["redecoded_bytes"]) > 2*interval || c["redecoded_bytes"] <= 0 || c["raw_bytes"] > int64(len(data))/4+2*(256<<10) {
				t.Errorf("residual counters %v: want at most %.0f bytes decoded again, and only the object's last part fetched", c, 2*interval)
			}
			batched, bc := f.runBatched(t, residual)
			if !slices.Equal(batched, rest) || bc["redecoded_bytes"] != c["redecoded_bytes"] {
				t.Errorf("batched residual: %d records (want %d), counters %v", len(batched), len(rest), bc)
			}
		})
	}
}

// A restriction whose resume hint carries an inflate checkpoint survives Beam's schema row
// coder, which runners use for restrictions, unchanged.
func TestInflateHintSurvivesTheCoder(t *testing.T) {
	window := make([]byte, 32<<10)
	for i := range window {
		window[i] = byte(i * 7919 >> 3)
	}
	cp := decode.Checkpoint{Stored: 123456789, Bit: 5, Decoded: 987654321, CRC: 0xdeadbeef, MemberSize: 987654321, Window: window}
	rest := restriction{Start: position{Member: 0, Index: 42}, End: position{Member: 1}, Sizes: []int64{5 << 30},
		Resume: resumeHint{Index: 42, Offset: 987654400, Checkpoint: cp.Encode()}}
	enc, err := coder.RowEncoderForStruct(reflect.TypeOf(rest))
	if err != nil {
		t.Fatal(err)
	}
	dec, err := coder.RowDecoderForStruct(reflect.TypeOf(rest))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := enc(rest, &buf); err != nil {
		t.Fatal(err)
	}
	t.Logf("restriction encoded in %d bytes, its checkpoint %d", buf.Len(), len(rest.Resume.Checkpoint))
	got, err := dec(&buf)
	if err != nil {
		t.Fatal(err)
	}
	back, err := decode.DecodeCheckpoint(got.(restriction).Resume.Checkpoint)
	if err != nil || back.Stored != cp.Stored || back.Bit != cp.Bit || back.CRC != cp.CRC || !bytes.Equal(back.Window, window) {
		t.Fatalf("decoded %+v, %v", back.Stored, err)
	}
}
