// Package s3test is an in-process S3-compatible server for tests: gofakes3 behind a handler
// that enforces If-Match on object GETs (which gofakes3 ignores), logs every object GET with
// its Range and the body bytes it served, and injects faults (a stall or an aborted body
// after N bytes). It is imported by tests only, never by the library.
package s3test

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/xml"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

// Request is one object GET the server answered.
type Request struct {
	Key   string
	Range string    // the Range header, "" for a whole-object GET
	Bytes int64     // body bytes written
	At    time.Time // when the server received it
}

// Fault disturbs the next Times GETs of a key.
type Fault struct {
	// StallAfter and Stall pause the body for Stall after StallAfter bytes.
	StallAfter int64
	Stall      time.Duration
	// AbortAfter > 0 breaks the connection after AbortAfter body bytes.
	AbortAfter int64
	Times      int
	// Range, when set, limits the fault to GETs whose Range header starts with it, such as
	// "bytes=393216-" for the part of an object that starts there.
	Range string
}

// Server is the running server.
type Server struct {
	URL    string
	Client *s3.Client

	backend *s3mem.Backend
	mu      sync.Mutex
	lists   int
	reqs    []*Request
	unpin   []string
	faults  map[string]*Fault
}

// New starts a server for the test and points the AWS default credential chain of this
// process (where prism's loopback workers run) at it.
func New(t testing.TB) *Server {
	t.Helper()
	s := &Server{backend: s3mem.New(), faults: map[string]*Fault{}}
	inner := gofakes3.New(s.backend).Server()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.URL.Query().Get("list-type") == "2" {
			s.mu.Lock()
			s.lists++
			s.mu.Unlock()
		}
		bucket, key, isObject := objectPath(r)
		if r.Method != http.MethodGet || !isObject {
			inner.ServeHTTP(w, r)
			return
		}
		if !s.checkPin(w, r, bucket, key) {
			return
		}
		// Logged before the body is written and counted before each write: a client may
		// finish reading before this handler returns.
		s.mu.Lock()
		s.reqs = append(s.reqs, &Request{Key: key, Range: r.Header.Get("Range"), At: time.Now()})
		req := s.reqs[len(s.reqs)-1]
		s.mu.Unlock()
		inner.ServeHTTP(&countingWriter{ResponseWriter: w, srv: s, req: req, fault: s.takeFault(key, r.Header.Get("Range"))}, r)
	}))
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	for k, v := range map[string]string{
		"AWS_ACCESS_KEY_ID":           "test-access-key",
		"AWS_SECRET_ACCESS_KEY":       "test-secret-key",
		"AWS_REGION":                  "us-east-1",
		"AWS_CONFIG_FILE":             os.DevNull,
		"AWS_SHARED_CREDENTIALS_FILE": os.DevNull,
		"AWS_EC2_METADATA_DISABLED":   "true",
	} {
		t.Setenv(k, v)
	}
	s.Client = s3.New(s3.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(srv.URL),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider("test-access-key", "test-secret-key", ""),
	})
	return s
}

func objectPath(r *http.Request) (bucket, key string, ok bool) {
	// r.URL.Path is already decoded: decoding it again would turn a key's "%41" into "A".
	parts := strings.SplitN(strings.TrimPrefix(r.URL.Path, "/"), "/", 2)
	if len(parts) != 2 || parts[1] == "" {
		return "", "", false
	}
	return parts[0], parts[1], true
}

// checkPin answers 412 when If-Match names another ETag, and records GETs without it.
func (s *Server) checkPin(w http.ResponseWriter, r *http.Request, bucket, key string) bool {
	want := r.Header.Get("If-Match")
	if want == "" {
		s.mu.Lock()
		s.unpin = append(s.unpin, key)
		s.mu.Unlock()
		return true
	}
	obj, err := s.backend.HeadObject(bucket, key)
	if err != nil {
		return true // gofakes3 answers NoSuchKey / NoSuchBucket
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

func (s *Server) takeFault(key, rng string) *Fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.faults[key]
	if f == nil || f.Times <= 0 || !strings.HasPrefix(rng, f.Range) {
		return nil
	}
	f.Times--
	c := *f
	return &c
}

// countingWriter counts body bytes and applies a fault as they pass.
type countingWriter struct {
	http.ResponseWriter
	srv     *Server
	req     *Request
	n       int64
	fault   *Fault
	stalled bool
}

func (w *countingWriter) write(p []byte) (int, error) {
	w.srv.mu.Lock()
	w.req.Bytes += int64(len(p))
	w.srv.mu.Unlock()
	w.n += int64(len(p))
	return w.ResponseWriter.Write(p)
}

func (w *countingWriter) Write(p []byte) (int, error) {
	f := w.fault
	if f != nil && f.AbortAfter > 0 && w.n+int64(len(p)) > f.AbortAfter {
		w.write(p[:f.AbortAfter-w.n])
		w.ResponseWriter.(http.Flusher).Flush()
		panic(http.ErrAbortHandler) // net/http closes the connection mid-body
	}
	if f != nil && f.Stall > 0 && !w.stalled && w.n+int64(len(p)) > f.StallAfter {
		k, err := w.write(p[:f.StallAfter-w.n])
		if err != nil {
			return k, err
		}
		w.ResponseWriter.(http.Flusher).Flush()
		time.Sleep(f.Stall)
		w.stalled = true
		rest, err := w.write(p[k:])
		return k + rest, err
	}
	return w.write(p)
}

// SetFault disturbs the next f.Times GETs of key.
func (s *Server) SetFault(key string, f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults[key] = &f
}

// Requests returns the object GETs of key answered so far (all keys when key is "").
func (s *Server) Requests(key string) []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Request
	for _, r := range s.reqs {
		if key == "" || r.Key == key {
			out = append(out, *r)
		}
	}
	return out
}

// ListPages returns how many ListObjectsV2 requests the server answered.
func (s *Server) ListPages() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lists
}

// Unpinned returns the keys of GETs that came without If-Match.
func (s *Server) Unpinned() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.unpin...)
}

// CreateBucket creates bucket.
func (s *Server) CreateBucket(t testing.TB, bucket string) {
	t.Helper()
	if _, err := s.Client.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatalf("create bucket %s: %v", bucket, err)
	}
}

// Put stores data at bucket/key and returns its ETag.
func (s *Server) Put(t testing.TB, bucket, key string, data []byte) string {
	t.Helper()
	out, err := s.Client.PutObject(context.Background(), &s3.PutObjectInput{
		Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(data),
	})
	if err != nil {
		t.Fatalf("put s3://%s/%s: %v", bucket, key, err)
	}
	return aws.ToString(out.ETag)
}

// Delete removes bucket/key.
func (s *Server) Delete(t testing.TB, bucket, key string) {
	t.Helper()
	if _, err := s.Client.DeleteObject(context.Background(), &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)}); err != nil {
		t.Fatalf("delete s3://%s/%s: %v", bucket, key, err)
	}
}
