package s3conformance

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"io"
	"net/http"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/spate-io/beam-s3/internal/minio"
	"github.com/spate-io/beam-s3/internal/versitygw"
)

// Server names, the keys of each test's per-server expectations.
const (
	MinIO     = "minio"
	VersityGW = "versitygw"
)

// server is one S3 server under test, with a client that sends checksums only when asked
// (so a put without one shows what the server does by itself), never retries (so each
// answer is the server's first), and keeps the raw body of the last ListObjectVersions
// answer (whose order the SDK loses by splitting versions from delete markers).
type server struct {
	name   string
	client *s3.Client
	raw    *rawBodies
}

// eachServer runs test against a fresh MinIO and a fresh versitygw with versioning.
func eachServer(t *testing.T, test func(t *testing.T, s *server)) {
	t.Run(MinIO, func(t *testing.T) {
		m := minio.Start(t)
		test(t, newServer(MinIO, m.URL, minio.AccessKey, minio.SecretKey))
	})
	t.Run(VersityGW, func(t *testing.T) {
		g := versitygw.StartVersioned(t)
		test(t, newServer(VersityGW, g.URL, versitygw.AccessKey, versitygw.SecretKey))
	})
}

func newServer(name, url, accessKey, secretKey string) *server {
	raw := &rawBodies{}
	return &server{name: name, raw: raw, client: s3.New(s3.Options{
		Region:                     "us-east-1",
		BaseEndpoint:               aws.String(url),
		UsePathStyle:               true,
		Credentials:                credentials.NewStaticCredentialsProvider(accessKey, secretKey, ""),
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
		RetryMaxAttempts:           1,
		HTTPClient:                 &http.Client{Transport: raw},
	})}
}

// rawBodies is a transport that keeps the body of the last version listing it carried.
type rawBodies struct {
	mu   sync.Mutex
	last []byte
}

func (r *rawBodies) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil || req.Method != http.MethodGet || !req.URL.Query().Has("versions") {
		return resp, err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(b))
	r.mu.Lock()
	r.last = b
	r.mu.Unlock()
	return resp, nil
}

// entry is one Version or DeleteMarker of a version listing, in the server's order.
type entry struct {
	Marker    bool // a delete marker
	Key       string
	VersionID string
	Latest    bool
}

// lastListing returns the entries of the last version listing in the order the server
// wrote them.
func (s *server) lastListing(t *testing.T) []entry {
	t.Helper()
	s.raw.mu.Lock()
	body := s.raw.last
	s.raw.mu.Unlock()
	var got []entry
	d := xml.NewDecoder(bytes.NewReader(body))
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return got
		}
		if err != nil {
			t.Fatalf("version listing XML: %v", err)
		}
		se, ok := tok.(xml.StartElement)
		if !ok || (se.Name.Local != "Version" && se.Name.Local != "DeleteMarker") {
			continue
		}
		var e struct {
			Key       string
			VersionId string
			IsLatest  bool
		}
		if err := d.DecodeElement(&e, &se); err != nil {
			t.Fatalf("version listing XML: %v", err)
		}
		got = append(got, entry{se.Name.Local == "DeleteMarker", e.Key, e.VersionId, e.IsLatest})
	}
}

// listAll lists every version of bucket in one request, and returns the entries in the
// server's order.
func (s *server) listAll(t *testing.T, bucket string) []entry {
	t.Helper()
	s.list(t, &s3.ListObjectVersionsInput{Bucket: aws.String(bucket)})
	return s.lastListing(t)
}

func (s *server) list(t *testing.T, in *s3.ListObjectVersionsInput) *s3.ListObjectVersionsOutput {
	t.Helper()
	out, err := s.client.ListObjectVersions(context.Background(), in)
	if err != nil {
		t.Fatalf("list versions of %s: %v", aws.ToString(in.Bucket), err)
	}
	return out
}

func (s *server) createBucket(t *testing.T, bucket string, versioning types.BucketVersioningStatus) {
	t.Helper()
	if _, err := s.client.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatalf("create bucket %s: %v", bucket, err)
	}
	if versioning != "" {
		s.setVersioning(t, bucket, versioning)
	}
}

func (s *server) setVersioning(t *testing.T, bucket string, status types.BucketVersioningStatus) {
	t.Helper()
	if _, err := s.client.PutBucketVersioning(context.Background(), &s3.PutBucketVersioningInput{
		Bucket: aws.String(bucket), VersioningConfiguration: &types.VersioningConfiguration{Status: status},
	}); err != nil {
		t.Fatalf("set versioning of %s to %s: %v", bucket, status, err)
	}
}

// put stores body at bucket/key and returns the version ID and ETag the server answered.
func (s *server) put(t *testing.T, bucket, key, body string) (versionID, etag string) {
	t.Helper()
	out, err := s.client.PutObject(context.Background(), &s3.PutObjectInput{
		Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader([]byte(body)),
	})
	if err != nil {
		t.Fatalf("put s3://%s/%s: %v", bucket, key, err)
	}
	return aws.ToString(out.VersionId), aws.ToString(out.ETag)
}

// deleteObject deletes bucket/key, or one version of it when versionID is not empty.
func (s *server) deleteObject(t *testing.T, bucket, key, versionID string) *s3.DeleteObjectOutput {
	t.Helper()
	out, err := s.client.DeleteObject(context.Background(), &s3.DeleteObjectInput{
		Bucket: aws.String(bucket), Key: aws.String(key), VersionId: optional(versionID),
	})
	if err != nil {
		t.Fatalf("delete s3://%s/%s version %q: %v", bucket, key, versionID, err)
	}
	return out
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return aws.String(s)
}

// failure is how a request failed: HTTP status, S3 error code (empty for HEAD, which has no
// body), and the delete-marker and version headers of the answer.
type failure struct {
	Status       int
	Code         string
	DeleteMarker string
	VersionID    string
}

// failureOf classifies err, which must be an S3 error answer.
func failureOf(t *testing.T, err error) failure {
	t.Helper()
	var re *smithyhttp.ResponseError
	if !errors.As(err, &re) {
		t.Fatalf("%v is not an HTTP error answer", err)
	}
	f := failure{Status: re.HTTPStatusCode(), DeleteMarker: re.Response.Header.Get("x-amz-delete-marker"), VersionID: re.Response.Header.Get("x-amz-version-id")}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		f.Code = ae.ErrorCode()
	}
	return f
}
