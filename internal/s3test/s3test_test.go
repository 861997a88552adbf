package s3test

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

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

// TestIgnoreSwitches checks that the server enforces If-Match and Range by default and, once
// told to ignore them, serves the current version and the whole object with 200.
func TestIgnoreSwitches(t *testing.T) {
	s := New(t)
	s.CreateBucket(t, "bkt")
	old := s.Put(t, "bkt", "k", []byte("old version"))
	cur := s.Put(t, "bkt", "k", []byte("new version"))
	get := func(ifMatch, rng string) (Answer, error) { return Get(s.Client, "bkt", "k", ifMatch, rng) }
	if _, err := get(old, ""); err == nil || !strings.Contains(err.Error(), "PreconditionFailed") {
		t.Fatalf("GET pinned to the old version: %v, want 412 PreconditionFailed", err)
	}
	if a, err := get(cur, "bytes=4-6"); err != nil || a != (Answer{"ver", cur, "bytes 4-6/11", 206}) {
		t.Fatalf("ranged GET: %+v, %v; want 206 bytes 4-6", a, err)
	}
	s.IgnoreIfMatch(true)
	if a, err := get(old, ""); err != nil || a != (Answer{"new version", cur, "", 200}) {
		t.Fatalf("GET pinned to the old version, If-Match ignored: %+v, %v; want the current version", a, err)
	}
	s.IgnoreRange(true)
	if a, err := get(cur, "bytes=4-6"); err != nil || a != (Answer{"new version", cur, "", 200}) {
		t.Fatalf("ranged GET, Range ignored: %+v, %v; want 200 and the whole object", a, err)
	}
	if reqs := s.Requests("k"); reqs[len(reqs)-1].Range != "bytes=4-6" {
		t.Errorf("logged Range %q, want the one asked for", reqs[len(reqs)-1].Range)
	}
	s.IgnoreIfMatch(false)
	s.IgnoreRange(false)
	if _, err := get(old, ""); err == nil {
		t.Fatal("GET pinned to the old version succeeded once If-Match is enforced again")
	}
}

// TestSettle checks that Settle waits for the handler of a request its client gave up on:
// what the handler writes into the closed connection after a stall (one more chunk of its
// copy, which then fails) is in the log when Settle returns.
func TestSettle(t *testing.T) {
	s := New(t)
	s.CreateBucket(t, "bkt")
	data := strings.Repeat("0123456789", 10000)
	s.Put(t, "bkt", "k", []byte(data))
	s.SetFault("k", "", 1, faultproxy.Fault{StallAfter: 1000, Stall: 300 * time.Millisecond})
	out, err := s.Client.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String("bkt"), Key: aws.String("k")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(out.Body, make([]byte, 1000)); err != nil {
		t.Fatal(err)
	}
	out.Body.Close() // gives up during the stall
	s.Settle(t)
	reqs := s.Requests("k")
	if len(reqs) != 1 || reqs[0].Bytes <= 1000 {
		t.Fatalf("after Settle the log holds %+v, want one GET with the bytes its handler wrote after the stall", reqs)
	}
	s.mu.Lock()
	open := s.open
	s.mu.Unlock()
	if open != 0 {
		t.Errorf("%d connections open after Settle", open)
	}
	// The server still answers: Settle closed connections, not the listener.
	if _, err := s.Client.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String("bkt"), Key: aws.String("k")}); err != nil {
		t.Errorf("GET after Settle: %v", err)
	}
}
