package s3io_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/spate-io/beam-s3/internal/faultproxy"
	"github.com/spate-io/beam-s3/internal/s3test"
	"github.com/spate-io/beam-s3/s3io"
)

func init() { register.Function1x1(failureSummary) }

// failureSummary keeps what a test can assert exactly of a Failure.
func failureSummary(f s3io.Failure) string {
	return fmt.Sprintf("%s %s %s emitted=%d", f.Key, f.ETag, f.Reason, f.Index)
}

// On prism: an object read as several parts is overwritten after its first part was
// fetched. The next part's pinned GET gets 412, so the object is quarantined as overwritten
// after exactly the records of its first part, nothing of the new version is emitted, and
// the other objects of the split are read whole.
func TestPipelinePartAfterOverwrite(t *testing.T) {
	const part, recLen = 16 << 10, 64 // records of 64 bytes: a part holds 256 whole records
	srv := s3test.New(t)
	srv.CreateBucket(t, "over")
	var big strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&big, "big %05d %s\n", i, strings.Repeat("b", recLen-11))
	}
	srv.Put(t, "over", "a/big.txt", []byte(big.String()))
	small, smallRecs := s3test.NDJSON("small", 100)
	srv.Put(t, "over", "b/small.ndjson", []byte(small))
	out, err := srv.Client.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String("over"), Key: aws.String("a/big.txt")})
	if err != nil {
		t.Fatal(err)
	}
	planned := aws.ToString(out.ETag)
	// The first part stalls on the server; meanwhile the object is overwritten. With one
	// request in flight the second part is only asked for after the first arrived.
	srv.SetFault("a/big.txt", "bytes=0-", 1, faultproxy.Fault{StallAfter: 1, Stall: 2 * time.Second})
	go func() {
		for len(srv.Requests("a/big.txt")) == 0 {
			time.Sleep(5 * time.Millisecond)
		}
		srv.Put(t, "over", "a/big.txt", []byte("NEW VERSION\n"))
	}()
	want := smallRecs
	for i := range part / recLen {
		want = append(want, fmt.Sprintf("big %05d %s", i, strings.Repeat("b", recLen-11)))
	}
	cfg := s3io.Config{Bucket: "over", Endpoint: srv.URL, UsePathStyle: true, PartBytes: part, MaxRequestsInFlight: 1}
	p, s := beam.NewPipelineWithRoot()
	recs, failures := s3io.ReadWithFailures(s, cfg)
	passert.EqualsList(s, beam.ParDo(s, s3test.RecordString, recs), want)
	passert.EqualsList(s, beam.ParDo(s, failureSummary, failures), []string{fmt.Sprintf("a/big.txt %s overwritten emitted=%d", planned, part/recLen)})
	pr, err := ptest.RunWithMetrics(p)
	if err != nil {
		t.Fatalf("pipeline failed: %v", err)
	}
	if c := s3test.Counters(pr, s3io.MetricsNamespace); c["objects_failed_overwritten"] != 1 {
		t.Errorf("counters %v: want one object failed as overwritten", c)
	}
}
