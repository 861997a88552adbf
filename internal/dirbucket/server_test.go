package dirbucket

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
)

const bucket = "demo--usw2-az1--x-s3"

func client(s *Server, secret string, opts ...func(*s3.Options)) *s3.Client {
	return s3.New(s3.Options{Region: "us-west-2", BaseEndpoint: aws.String(s.URL), RetryMaxAttempts: 1,
		Credentials: credentials.NewStaticCredentialsProvider(s.AccessKey, secret, "")}, opts...)
}

func code(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return fmt.Sprint(err)
}

// listAll lists prefix with delimiter "/" in pages of n and returns the keys and folders
// in the order the pages gave them.
func listAll(t *testing.T, c *s3.Client, prefix string, n int32) (keys, folders []string) {
	t.Helper()
	in := &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix), Delimiter: aws.String("/"), MaxKeys: aws.Int32(n), EncodingType: "url"}
	for p := s3.NewListObjectsV2Paginator(c, in); p.HasMorePages(); {
		out, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range out.Contents {
			k, _ := url.QueryUnescape(aws.ToString(o.Key))
			keys = append(keys, k)
		}
		for _, cp := range out.CommonPrefixes {
			f, _ := url.QueryUnescape(aws.ToString(cp.Prefix))
			folders = append(folders, f)
		}
	}
	return keys, folders
}

// TestDirectoryBucket: the SDK's S3 Express path against the server: one CreateSession,
// then session-signed requests; listings that enumerate every entry once in an order that
// is not key order and changes from listing to listing; what S3 Express refuses.
func TestDirectoryBucket(t *testing.T) {
	s := New(t, bucket, "ak", "sk")
	var want []string
	for i := range 60 {
		k := fmt.Sprintf("d/k%02d %%+\x01é", i)
		s.Put(k, []byte(k))
		want = append(want, k)
	}
	s.Put("d/sub/x", []byte("x"))
	s.Put("d/sub0", []byte("y"))
	want = append(want, "d/sub0")
	slices.Sort(want)
	c := client(s, "sk")

	keys1, folders := listAll(t, c, "d/", 7)
	keys2, _ := listAll(t, c, "d/", 7)
	if got := slices.Sorted(slices.Values(keys1)); !slices.Equal(got, want) || !slices.Equal(folders, []string{"d/sub/"}) {
		t.Fatalf("listed %d keys %q, folders %q; want %d keys and d/sub/", len(keys1), got, folders, len(want))
	}
	if slices.IsSorted(keys1) || slices.Equal(keys1, keys2) {
		t.Errorf("two listings came in key order or in the same order: %q", keys1[:5])
	}
	if n := s.Counts().CreateSession; n != 1 {
		t.Errorf("CreateSession requests = %d, want 1 (the SDK caches the session)", n)
	}

	for _, tc := range []struct {
		name string
		in   s3.ListObjectsV2Input
		code string
	}{
		{"StartAfter", s3.ListObjectsV2Input{Prefix: aws.String("d/"), StartAfter: aws.String("d/k10")}, "InvalidArgument"},
		{"a delimiter other than /", s3.ListObjectsV2Input{Prefix: aws.String("d/"), Delimiter: aws.String("-")}, "InvalidArgument"},
		{"a prefix not ending in /", s3.ListObjectsV2Input{Prefix: aws.String("d/k")}, "InvalidRequest"},
	} {
		tc.in.Bucket = aws.String(bucket)
		if _, err := c.ListObjectsV2(context.Background(), &tc.in); code(err) != tc.code {
			t.Errorf("%s: err = %v, want %s", tc.name, err, tc.code)
		}
	}

	noSession := client(s, "sk", func(o *s3.Options) { o.DisableS3ExpressSessionAuth = aws.Bool(true) })
	if _, err := noSession.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String(bucket)}); code(err) != "AccessDenied" {
		t.Errorf("a request without a session: err = %v, want AccessDenied", err)
	}
	// The SDK flattens a failed CreateSession into the text of its identity error
	// (customizations/express.go: "get credentials: %v"): the API error's type is lost.
	if _, err := client(s, "wrong").ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String(bucket)}); err == nil || !strings.Contains(err.Error(), "CreateSession") || !strings.Contains(err.Error(), "AccessDenied") {
		t.Errorf("CreateSession signed with the wrong secret: err = %v, want CreateSession's AccessDenied", err)
	}
}

// TestObjects: GET with Range and If-Match, HEAD; ETags are not the MD5 of the body.
func TestObjects(t *testing.T) {
	s := New(t, bucket, "ak", "sk")
	etag := s.Put("a/b c+%", []byte("0123456789"))
	c := client(s, "sk")
	get := func(ifMatch, rng string) (string, error) {
		in := &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String("a/b c+%"), IfMatch: aws.String(ifMatch)}
		if rng != "" {
			in.Range = aws.String(rng)
		}
		out, err := c.GetObject(context.Background(), in)
		if err != nil {
			return "", err
		}
		defer out.Body.Close()
		b, err := io.ReadAll(out.Body)
		if aws.ToString(out.ETag) != etag {
			t.Errorf("ETag = %s, want %s", aws.ToString(out.ETag), etag)
		}
		return string(b), err
	}
	for rng, want := range map[string]string{"": "0123456789", "bytes=2-4": "234", "bytes=7-": "789", "bytes=-2": "89", "bytes=8-100": "89"} {
		if got, err := get(etag, rng); err != nil || got != want {
			t.Errorf("GET %q = %q, %v; want %q", rng, got, err, want)
		}
	}
	if _, err := get(`"0"`, ""); code(err) != "PreconditionFailed" {
		t.Errorf("GET with another ETag: err = %v, want PreconditionFailed", err)
	}
	if _, err := get(etag, "bytes=10-"); code(err) != "InvalidRange" {
		t.Errorf("GET past the end: err = %v, want InvalidRange", err)
	}
	h, err := c.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String("a/b c+%")})
	if err != nil || aws.ToInt64(h.ContentLength) != 10 {
		t.Errorf("HEAD = %v, %v", h, err)
	}
	if etag == `"781e5e245d69b566979b86e28d23f2c7"` { // md5("0123456789")
		t.Errorf("the ETag is the body's MD5")
	}
}

// TestGeneralBucket: the general-purpose mode lists in key order with StartAfter and
// continuation tokens, and takes plain SigV4.
func TestGeneralBucket(t *testing.T) {
	s := NewGeneral(t, "demo", "ak", "sk")
	var want []string
	for i := range 25 {
		for _, k := range []string{fmt.Sprintf("p/%02d", i), fmt.Sprintf("p/%02d/x", i), fmt.Sprintf("p/%02d/y", i)} {
			s.Put(k, []byte(k))
		}
		want = append(want, fmt.Sprintf("p/%02d", i))
	}
	c := client(s, "sk")
	var got, folders []string
	in := &s3.ListObjectsV2Input{Bucket: aws.String("demo"), Prefix: aws.String("p/"), Delimiter: aws.String("/"), MaxKeys: aws.Int32(4), StartAfter: aws.String("p/02")}
	for p := s3.NewListObjectsV2Paginator(c, in); p.HasMorePages(); {
		out, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range out.Contents {
			got = append(got, aws.ToString(o.Key))
		}
		for _, cp := range out.CommonPrefixes {
			folders = append(folders, aws.ToString(cp.Prefix))
		}
	}
	if !slices.Equal(got, want[3:]) || len(folders) != 23 || folders[0] != "p/02/" {
		t.Errorf("keys %q, folders %q", got, folders)
	}
	if s.Counts().CreateSession != 0 {
		t.Error("a general-purpose bucket was sent CreateSession")
	}
}
