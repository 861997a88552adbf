package s3io

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/spate-io/beam-s3/internal/faultproxy"
	"github.com/spate-io/beam-s3/internal/s3test"
)

// A GET refused on a later part of a compressed object (412 after an overwrite, 404 after a
// delete) fails the object for what the refusal means, not as corrupt: the decompressor
// passes the source's error through. The records before it are the object's first ones.
func TestRefusedLaterPartOfCompressedObject(t *testing.T) {
	const part = 64 << 10
	rng := rand.New(rand.NewPCG(3, 4))
	var b strings.Builder
	var recs []string
	for i := range 12000 { // hex digits compress to about half: several parts either way
		r := fmt.Sprintf("%05d %016x%016x%016x", i, rng.Uint64(), rng.Uint64(), rng.Uint64())
		b.WriteString(r + "\n")
		recs = append(recs, r)
	}
	for _, enc := range []struct {
		key  string
		data []byte
	}{{"a.txt.gz", s3test.Gzip(b.String())}, {"a.txt.zst", s3test.Zstd(b.String())}} {
		for _, refusal := range []struct {
			fault  faultproxy.Fault
			reason Reason
		}{
			{faultproxy.Fault{Status: 412, Code: "PreconditionFailed"}, ReasonOverwritten},
			{faultproxy.Fault{Status: 404, Code: "NoSuchKey"}, ReasonDeleted},
		} {
			t.Run(fmt.Sprintf("%s %d", enc.key, refusal.fault.Status), func(t *testing.T) {
				if len(enc.data) < 3*part {
					t.Fatalf("%s is %d bytes: want several parts", enc.key, len(enc.data))
				}
				srv := s3test.New(t)
				srv.CreateBucket(t, "refused")
				etag := srv.Put(t, "refused", enc.key, enc.data)
				members := []Member{{Key: enc.key, Size: int64(len(enc.data)), ETag: etag}}
				d := SplitDescriptor{ID: splitID("refused", members), Bucket: "refused", Members: members}
				fn := &reader{Cfg: Config{Bucket: "refused", Endpoint: srv.URL, UsePathStyle: true, PartBytes: part, MaxRequestsInFlight: 1}.WithDefaults()}
				if err := fn.Setup(context.Background()); err != nil {
					t.Fatal(err)
				}
				defer fn.Teardown()
				srv.SetFault(enc.key, fmt.Sprintf("bytes=%d-", 2*part), 1, refusal.fault)
				var got []string
				var fails []Failure
				err := fn.process(context.Background(), fn.CreateTracker(fullRestriction(d)), d,
					func(_ int, _ int64, _ string, rec []byte) { got = append(got, string(rec)) },
					func(fl Failure) { fails = append(fails, fl) })
				if err != nil {
					t.Fatal(err)
				}
				if len(fails) != 1 || fails[0].Reason != refusal.reason || fails[0].Index != int64(len(got)) {
					t.Fatalf("failures %v after %d records; want one, %s, at the next record", fails, len(got), refusal.reason)
				}
				if len(got) == 0 || !slices.Equal(got, recs[:len(got)]) {
					t.Errorf("emitted %d records; want the object's first ones, at least one", len(got))
				}
			})
		}
	}
}
