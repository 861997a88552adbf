package faultproxy_test

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/spate-io/beam-s3/internal/faultproxy"
	"github.com/spate-io/beam-s3/internal/s3test"
	"github.com/spate-io/beam-s3/internal/versitygw"
)

// In front of versitygw, which enforces If-Match and Range, the proxy's switches make GETs
// be served as by a server that ignores them: the current version, the whole object with
// 200. The dropped headers are signed again, so versitygw accepts the GETs.
func TestIgnoreIfMatchAndRange(t *testing.T) {
	g := versitygw.Start(t)
	p := faultproxy.New(t, g.URL)
	p.Credentials = aws.Credentials{AccessKeyID: versitygw.AccessKey, SecretAccessKey: versitygw.SecretKey}
	client := s3.New(s3.Options{Region: "us-east-1", BaseEndpoint: aws.String(p.URL), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(versitygw.AccessKey, versitygw.SecretKey, "")})
	g.CreateBucket(t, "bkt")
	etag := func() string {
		out, err := g.Client.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String("bkt"), Key: aws.String("k")})
		if err != nil {
			t.Fatal(err)
		}
		return aws.ToString(out.ETag)
	}
	g.Put(t, "bkt", "k", []byte("old version"))
	old := etag()
	g.Put(t, "bkt", "k", []byte("new version"))
	cur := etag()
	get := func(ifMatch, rng string) (s3test.Answer, error) { return s3test.Get(client, "bkt", "k", ifMatch, rng) }
	if _, err := get(old, ""); err == nil || !strings.Contains(err.Error(), "PreconditionFailed") {
		t.Fatalf("GET pinned to the old version: %v, want 412 PreconditionFailed", err)
	}
	if a, err := get(cur, "bytes=4-6"); err != nil || a != (s3test.Answer{Body: "ver", ETag: cur, ContentRange: "bytes 4-6/11", Status: 206}) {
		t.Fatalf("ranged GET: %+v, %v; want 206 bytes 4-6", a, err)
	}
	p.IgnoreIfMatch = true
	if a, err := get(old, ""); err != nil || a != (s3test.Answer{Body: "new version", ETag: cur, ContentRange: "", Status: 200}) {
		t.Fatalf("GET pinned to the old version, If-Match ignored: %+v, %v; want the current version", a, err)
	}
	p.IgnoreRange = true
	if a, err := get(old, "bytes=4-6"); err != nil || a != (s3test.Answer{Body: "new version", ETag: cur, ContentRange: "", Status: 200}) {
		t.Fatalf("ranged GET, both ignored: %+v, %v; want 200 and the whole current version", a, err)
	}
	p.IgnoreIfMatch = false
	if a, err := get(cur, "bytes=4-6"); err != nil || a != (s3test.Answer{Body: "new version", ETag: cur, ContentRange: "", Status: 200}) {
		t.Fatalf("ranged GET, Range ignored: %+v, %v; want 200 and the whole object", a, err)
	}
	if gets := p.Gets("k"); gets[len(gets)-1].Range != "bytes=4-6" || gets[len(gets)-1].IfMatch != cur {
		t.Errorf("logged %+v, want the Range and If-Match asked for", gets[len(gets)-1])
	}
}
