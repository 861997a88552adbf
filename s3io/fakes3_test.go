package s3io_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/xml"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

// fakeS3 is an in-process S3-compatible server (gofakes3) that also enforces If-Match on
// object GETs, which gofakes3 alone ignores, and records GETs that arrive without it: the
// pinned-read guarantee is asserted, not assumed.
type fakeS3 struct {
	URL     string
	backend *s3mem.Backend
	client  *s3.Client

	mu       sync.Mutex
	gets     int
	lists    int // ListObjectsV2 requests, i.e. listing pages
	unpinned []string
}

func newFakeS3(t *testing.T) *fakeS3 {
	t.Helper()
	f := &fakeS3{backend: s3mem.New()}
	inner := gofakes3.New(f.backend).Server()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.URL.Query().Get("list-type") == "2" {
			f.mu.Lock()
			f.lists++
			f.mu.Unlock()
		}
		if r.Method == http.MethodGet && f.isObjectGet(r) && !f.checkPin(w, r) {
			return
		}
		inner.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	f.URL = srv.URL
	t.Setenv("AWS_ACCESS_KEY_ID", "test-access-key")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test-secret-key")
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_CONFIG_FILE", "/dev/null")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	f.client = s3.New(s3.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(srv.URL),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider("test-access-key", "test-secret-key", ""),
	})
	return f
}

// isObjectGet reports whether r reads an object (path /bucket/key with no listing query).
func (f *fakeS3) isObjectGet(r *http.Request) bool {
	parts := strings.SplitN(strings.TrimPrefix(r.URL.Path, "/"), "/", 2)
	return len(parts) == 2 && parts[1] != ""
}

func (f *fakeS3) checkPin(w http.ResponseWriter, r *http.Request) bool {
	parts := strings.SplitN(strings.TrimPrefix(r.URL.Path, "/"), "/", 2)
	key, _ := url.PathUnescape(parts[1])
	f.mu.Lock()
	f.gets++
	f.mu.Unlock()
	want := r.Header.Get("If-Match")
	if want == "" {
		f.mu.Lock()
		f.unpinned = append(f.unpinned, key)
		f.mu.Unlock()
		return true
	}
	obj, err := f.backend.HeadObject(parts[0], key)
	if err != nil {
		return true // let gofakes3 answer NoSuchKey / NoSuchBucket
	}
	obj.Contents.Close()
	if got := `"` + hex.EncodeToString(obj.Hash) + `"`; got != want {
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusPreconditionFailed)
		xml.NewEncoder(w).Encode(struct {
			XMLName xml.Name `xml:"Error"`
			Code    string
			Message string
		}{Code: "PreconditionFailed", Message: "At least one of the pre-conditions you specified did not hold"})
		return false
	}
	return true
}

func (f *fakeS3) createBucket(t *testing.T, bucket string) {
	t.Helper()
	if _, err := f.client.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatalf("create bucket %s: %v", bucket, err)
	}
}

func (f *fakeS3) put(t *testing.T, bucket, key string, data []byte) {
	t.Helper()
	if _, err := f.client.PutObject(context.Background(), &s3.PutObjectInput{
		Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(data),
	}); err != nil {
		t.Fatalf("put s3://%s/%s: %v", bucket, key, err)
	}
}

func (f *fakeS3) listPages() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lists
}

func (f *fakeS3) unpinnedGets() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.unpinned...)
}
