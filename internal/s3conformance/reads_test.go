package s3conformance

import (
	"context"
	"io"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// answer is what a GET or HEAD answered: status, body, the version and Content-Range
// headers, or the failure's S3 error code and delete-marker header.
type answer struct {
	Status       int
	Body         string
	VersionID    string
	ContentRange string
	Code         string
	DeleteMarker string
}

// read is one GET (or HEAD, which has no body) of key "k" in bucket "ver".
type read struct {
	head                    bool
	versionID, ifMatch, rng string
}

func (s *server) do(t *testing.T, bucket, key string, r read) answer {
	t.Helper()
	ctx := context.Background()
	if r.head {
		out, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{
			Bucket: aws.String(bucket), Key: aws.String(key), VersionId: optional(r.versionID), IfMatch: optional(r.ifMatch), Range: optional(r.rng),
		})
		if err != nil {
			f := failureOf(t, err)
			return answer{Status: f.Status, Code: f.Code, DeleteMarker: f.DeleteMarker, VersionID: f.VersionID}
		}
		return answer{Status: status(out.ResultMetadata), VersionID: aws.ToString(out.VersionId), ContentRange: aws.ToString(out.ContentRange)}
	}
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{
		Bucket: aws.String(bucket), Key: aws.String(key), VersionId: optional(r.versionID), IfMatch: optional(r.ifMatch), Range: optional(r.rng),
	})
	if err != nil {
		f := failureOf(t, err)
		return answer{Status: f.Status, Code: f.Code, DeleteMarker: f.DeleteMarker, VersionID: f.VersionID}
	}
	defer out.Body.Close()
	body, err := io.ReadAll(out.Body)
	if err != nil {
		t.Fatalf("read body of s3://%s/%s: %v", bucket, key, err)
	}
	return answer{Status: status(out.ResultMetadata), Body: string(body), VersionID: aws.ToString(out.VersionId), ContentRange: aws.ToString(out.ContentRange)}
}

func status(md middleware.Metadata) int {
	if raw, ok := awsmiddleware.GetRawResponse(md).(*smithyhttp.Response); ok {
		return raw.StatusCode
	}
	return 0
}

// readCase is a read and each server's answer to it; versity is nil where versitygw
// answers as MinIO does.
type readCase struct {
	name    string
	read    read
	minio   answer
	versity *answer
}

func (c readCase) want(server string) answer {
	if server == VersityGW && c.versity != nil {
		return *c.versity
	}
	return c.minio
}

// TestReadsByVersion reads old, latest, deleted and delete-marker versions of one key, with
// and without If-Match and Range.
func TestReadsByVersion(t *testing.T) {
	eachServer(t, func(t *testing.T, s *server) {
		s.createBucket(t, "ver", types.BucketVersioningStatusEnabled)
		v1, e1 := s.put(t, "ver", "k", "old body")
		v2, e2 := s.put(t, "ver", "k", "new body!")
		gone, goneETag := s.put(t, "ver", "k", "deleted")
		s.deleteObject(t, "ver", "k", gone)
		s.put(t, "ver", "m", "m1")
		marker := aws.ToString(s.deleteObject(t, "ver", "m", "").VersionId)
		// A version ID of the server's own form that it never gave out.
		unknown := map[string]string{MinIO: "00000000-0000-4000-8000-000000000000", VersityGW: "01M936WREDJ8EY41ZGTKMG0Z78"}[s.name]

		for _, c := range []readCase{
			{name: "GET old version", read: read{versionID: v1},
				minio: answer{Status: 200, Body: "old body", VersionID: v1}},
			{name: "HEAD old version", read: read{head: true, versionID: v1},
				minio: answer{Status: 200, VersionID: v1}},
			{name: "GET latest", read: read{},
				minio: answer{Status: 200, Body: "new body!", VersionID: v2}},
			{name: "GET old version If-Match its ETag, ranged", read: read{versionID: v1, ifMatch: e1, rng: "bytes=4-7"},
				minio: answer{Status: 206, Body: "body", VersionID: v1, ContentRange: "bytes 4-7/8"}},
			{name: "GET latest If-Match its ETag, ranged", read: read{ifMatch: e2, rng: "bytes=4-7"},
				minio: answer{Status: 206, Body: "body", VersionID: v2, ContentRange: "bytes 4-7/9"}},
			{name: "GET old version If-Match the latest ETag", read: read{versionID: v1, ifMatch: e2},
				minio:   answer{Status: 412, Code: "PreconditionFailed", VersionID: v1},
				versity: &answer{Status: 412, Code: "PreconditionFailed"}},
			{name: "HEAD old version If-Match the latest ETag", read: read{head: true, versionID: v1, ifMatch: e2},
				minio:   answer{Status: 412, Code: "PreconditionFailed", VersionID: v1},
				versity: &answer{Status: 412, Code: "PreconditionFailed"}},
			{name: "GET permanently deleted version", read: read{versionID: gone},
				minio: answer{Status: 404, Code: "NoSuchVersion"}},
			{name: "GET permanently deleted version If-Match its ETag", read: read{versionID: gone, ifMatch: goneETag},
				minio: answer{Status: 404, Code: "NoSuchVersion"}},
			{name: "HEAD permanently deleted version", read: read{head: true, versionID: gone},
				minio: answer{Status: 404, Code: "NotFound"}},
			{name: "GET unknown version", read: read{versionID: unknown},
				minio: answer{Status: 404, Code: "NoSuchVersion"}},
			{name: "GET malformed version", read: read{versionID: "nonsense"},
				minio: answer{Status: 400, Code: "InvalidArgument"}},
			{name: "GET null version of a versioned key", read: read{versionID: "null"},
				minio: answer{Status: 404, Code: "NoSuchVersion"}},
		} {
			if got, want := s.do(t, "ver", "k", c.read), c.want(s.name); got != want {
				t.Errorf("%s:\n got %+v\nwant %+v", c.name, got, want)
			}
		}

		for _, c := range []readCase{
			{name: "GET key whose latest is a delete marker", read: read{},
				minio:   answer{Status: 404, Code: "NoSuchKey", DeleteMarker: "true", VersionID: marker},
				versity: &answer{Status: 404, Code: "NoSuchKey", DeleteMarker: "true"}},
			{name: "HEAD key whose latest is a delete marker", read: read{head: true},
				minio:   answer{Status: 404, Code: "NotFound", DeleteMarker: "true", VersionID: marker},
				versity: &answer{Status: 404, Code: "NotFound"}},
			{name: "GET delete marker by version", read: read{versionID: marker},
				minio:   answer{Status: 405, Code: "MethodNotAllowed", DeleteMarker: "true", VersionID: marker},
				versity: &answer{Status: 405, Code: "MethodNotAllowed", DeleteMarker: "true"}},
			{name: "HEAD delete marker by version", read: read{head: true, versionID: marker},
				minio:   answer{Status: 405, Code: "MethodNotAllowed", DeleteMarker: "true", VersionID: marker},
				versity: &answer{Status: 405, Code: "MethodNotAllowed", DeleteMarker: "true"}},
		} {
			if got, want := s.do(t, "ver", "m", c.read), c.want(s.name); got != want {
				t.Errorf("%s:\n got %+v\nwant %+v", c.name, got, want)
			}
		}
	})
}

// TestReadsUnversionedBucket reads the null version of an object in a bucket that never had
// versioning.
func TestReadsUnversionedBucket(t *testing.T) {
	eachServer(t, func(t *testing.T, s *server) {
		s.createBucket(t, "plain", "")
		_, etag := s.put(t, "plain", "k", "plain body")
		for _, c := range []readCase{
			{name: "GET", read: read{},
				minio: answer{Status: 200, Body: "plain body"}},
			{name: "GET version null", read: read{versionID: "null"},
				minio:   answer{Status: 200, Body: "plain body"},
				versity: &answer{Status: 200, Body: "plain body", VersionID: "null"}},
			{name: "GET version null If-Match, ranged", read: read{versionID: "null", ifMatch: etag, rng: "bytes=0-4"},
				minio:   answer{Status: 206, Body: "plain", ContentRange: "bytes 0-4/10"},
				versity: &answer{Status: 206, Body: "plain", VersionID: "null", ContentRange: "bytes 0-4/10"}},
			{name: "HEAD version null", read: read{head: true, versionID: "null"},
				minio:   answer{Status: 200},
				versity: &answer{Status: 404, Code: "NotFound"}},
		} {
			if got, want := s.do(t, "plain", "k", c.read), c.want(s.name); got != want {
				t.Errorf("%s:\n got %+v\nwant %+v", c.name, got, want)
			}
		}
	})
}

// TestDeleteVersion deletes versions permanently: the answer names the version, and a
// second delete of the same version is harmless on S3 and MinIO but an error on versitygw.
func TestDeleteVersion(t *testing.T) {
	eachServer(t, func(t *testing.T, s *server) {
		s.createBucket(t, "ver", types.BucketVersioningStatusEnabled)
		v1, _ := s.put(t, "ver", "k", "one")
		v2, _ := s.put(t, "ver", "k", "two")
		out := s.deleteObject(t, "ver", "k", v1)
		if aws.ToString(out.VersionId) != v1 || aws.ToBool(out.DeleteMarker) {
			t.Errorf("delete of version %s answered version %q, delete marker %v", v1, aws.ToString(out.VersionId), aws.ToBool(out.DeleteMarker))
		}
		if got, want := s.listAll(t, "ver"), []entry{{false, "k", v2, true}}; len(got) != 1 || got[0] != want[0] {
			t.Errorf("versions after the delete: %+v, want %+v", got, want)
		}

		_, err := s.client.DeleteObject(context.Background(), &s3.DeleteObjectInput{Bucket: aws.String("ver"), Key: aws.String("k"), VersionId: aws.String(v1)})
		switch s.name {
		case MinIO:
			if err != nil {
				t.Errorf("second delete of version %s: %v, want success", v1, err)
			}
		case VersityGW:
			if err == nil {
				t.Errorf("second delete of version %s succeeded, want 400 InvalidArgument", v1)
			} else if f := failureOf(t, err); f.Status != 400 || f.Code != "InvalidArgument" {
				t.Errorf("second delete of version %s: %+v, want 400 InvalidArgument", v1, f)
			}
		}

		// Deleting the latest version makes the one before it latest again; deleting the only
		// version leaves no key.
		s.deleteObject(t, "ver", "k", v2)
		if got := s.do(t, "ver", "k", read{}); got != (answer{Status: 404, Code: "NoSuchKey"}) {
			t.Errorf("GET after deleting every version: %+v, want 404 NoSuchKey", got)
		}
	})
}
