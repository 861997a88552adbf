package s3test

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/spate-io/beam-s3/internal/faultproxy"
)

// TestFaults checks that the server applies each kind of faultproxy.Fault to the GETs
// SetFault names, and only to them.
func TestFaults(t *testing.T) {
	s := New(t)
	s.CreateBucket(t, "bkt")
	data := strings.Repeat("0123456789", 1000)
	s.Put(t, "bkt", "k", []byte(data))
	get := func() (string, error) {
		out, err := s.Client.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String("bkt"), Key: aws.String("k")}, func(o *s3.Options) { o.RetryMaxAttempts = 1 })
		if err != nil {
			return "", err
		}
		defer out.Body.Close()
		b, err := io.ReadAll(out.Body)
		return string(b), err
	}
	for _, tc := range []struct {
		name  string
		fault faultproxy.Fault
		bytes int64 // body bytes served to the faulted GET
		err   string
	}{
		{"status", faultproxy.Fault{Status: 503, Code: "SlowDown"}, 0, "SlowDown"},
		{"reset after", faultproxy.Fault{ResetAfter: 1234}, 1234, "EOF"},
		{"reset at", faultproxy.Fault{ResetAt: 0.25}, 2500, "EOF"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(s.Requests("k"))
			s.SetFault("k", "", 1, tc.fault)
			if _, err := get(); err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("faulted GET: err = %v, want %s", err, tc.err)
			}
			reqs := s.Requests("k")[before:]
			if reqs[0].Bytes != tc.bytes {
				t.Errorf("faulted GET served %d bytes, want %d", reqs[0].Bytes, tc.bytes)
			}
			if got, err := get(); err != nil || got != data {
				t.Fatalf("next GET: %d bytes, err %v; want the object", len(got), err)
			}
		})
	}
}
