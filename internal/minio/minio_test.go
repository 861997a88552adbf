package minio

import (
	"context"
	"errors"
	"io"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/spate-io/beam-s3/internal/s3test"
)

// version is one entry of a ListObjectVersions answer, in the answer's order.
type version struct {
	Key, VersionID, ETag string
	Latest               bool
}

func listVersions(t *testing.T, c *s3.Client, bucket string) []version {
	t.Helper()
	out, err := c.ListObjectVersions(context.Background(), &s3.ListObjectVersionsInput{Bucket: aws.String(bucket)})
	if err != nil {
		t.Fatalf("list versions of %s: %v", bucket, err)
	}
	var got []version
	for _, v := range out.Versions {
		got = append(got, version{aws.ToString(v.Key), aws.ToString(v.VersionId), aws.ToString(v.ETag), aws.ToBool(v.IsLatest)})
	}
	return got
}

func TestVersionedBucket(t *testing.T) {
	s := Start(t)
	s.CreateVersionedBucket(t, "ver")
	oldID, oldETag := s.Put(t, "ver", "k", []byte("old body"))
	newID, newETag := s.Put(t, "ver", "k", []byte("new body!"))
	if oldID == "" || newID == "" || oldID == newID || oldETag == newETag {
		t.Fatalf("two puts gave versions %q (ETag %s) and %q (ETag %s), want two distinct IDs and ETags", oldID, oldETag, newID, newETag)
	}

	want := []version{{"k", newID, newETag, true}, {"k", oldID, oldETag, false}}
	if got := listVersions(t, s.Client, "ver"); !slices.Equal(got, want) {
		t.Fatalf("versions of k:\n got %+v\nwant %+v", got, want)
	}

	out, err := s.Client.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String("ver"), Key: aws.String("k"), VersionId: aws.String(oldID)})
	if err != nil {
		t.Fatalf("get k version %s: %v", oldID, err)
	}
	body, err := io.ReadAll(out.Body)
	out.Body.Close()
	if err != nil || string(body) != "old body" || aws.ToString(out.VersionId) != oldID {
		t.Fatalf("get k version %s = %q, version %q, %v; want %q", oldID, body, aws.ToString(out.VersionId), err, "old body")
	}

	// A pinned ranged read of the latest version, and the same pin against the old version.
	a, err := s3test.Get(s.Client, "ver", "k", newETag, "bytes=4-7")
	if err != nil || a.Status != 206 || a.Body != "body" || a.ContentRange != "bytes 4-7/9" || a.ETag != newETag {
		t.Fatalf("GET k If-Match %s bytes=4-7 = %+v, %v; want 206 %q bytes 4-7/9", newETag, a, err, "body")
	}
	_, err = s.Client.GetObject(context.Background(), &s3.GetObjectInput{
		Bucket: aws.String("ver"), Key: aws.String("k"), VersionId: aws.String(oldID), IfMatch: aws.String(newETag),
	}, func(o *s3.Options) { o.RetryMaxAttempts = 1 })
	var ae smithy.APIError
	if !errors.As(err, &ae) || ae.ErrorCode() != "PreconditionFailed" {
		t.Fatalf("GET k version %s If-Match %s (the new version's ETag): %v, want PreconditionFailed", oldID, newETag, err)
	}
}

func TestUnversionedBucket(t *testing.T) {
	s := Start(t)
	s.CreateBucket(t, "plain")
	got, err := s.Client.GetBucketVersioning(context.Background(), &s3.GetBucketVersioningInput{Bucket: aws.String("plain")})
	if err != nil || got.Status != "" {
		t.Fatalf("versioning of a new bucket = %q, %v; want none", got.Status, err)
	}
	id, _ := s.Put(t, "plain", "k", []byte("one"))
	_, etag := s.Put(t, "plain", "k", []byte("two"))
	if id != "" {
		t.Fatalf("put in an unversioned bucket gave version %q, want none", id)
	}
	// The one object is listed as the key's only, null, version.
	want := []version{{"k", "null", etag, true}}
	if got := listVersions(t, s.Client, "plain"); !slices.Equal(got, want) {
		t.Fatalf("versions of k:\n got %+v\nwant %+v", got, want)
	}
}

func TestSuspendedVersioningKeepsOlderVersions(t *testing.T) {
	s := Start(t)
	s.CreateVersionedBucket(t, "ver")
	id, etag := s.Put(t, "ver", "k", []byte("versioned"))
	s.SetVersioning(t, "ver", types.BucketVersioningStatusSuspended)
	s.Put(t, "ver", "k", []byte("null one"))
	_, nullETag := s.Put(t, "ver", "k", []byte("null two"))
	want := []version{{"k", "null", nullETag, true}, {"k", id, etag, false}}
	if got := listVersions(t, s.Client, "ver"); !slices.Equal(got, want) {
		t.Fatalf("versions of k:\n got %+v\nwant %+v", got, want)
	}
}
