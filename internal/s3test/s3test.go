// Package s3test is the shared support of this module's tests: an in-process S3-compatible
// server (gofakes3 behind a handler that enforces If-Match on object GETs, which gofakes3
// ignores, logs every object GET with its Range and the body bytes it served, injects the
// faults of faultproxy.Fault, and on request ignores If-Match or Range as some servers and
// proxies do), and helpers for data, pipelines and the environment. It
// is imported by tests only, never by the library, and so must never import s3io: the
// library's in-package tests import it.
package s3test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/xml"
	"hash/crc32"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/spate-io/beam-s3/internal/faultproxy"
)

// Request is one object GET the server answered.
type Request struct {
	Key   string
	Range string    // the Range header, "" for a whole-object GET
	Bytes int64     // body bytes written
	At    time.Time // when the server received it
}

// fault disturbs the next times GETs of a key whose Range header starts with rng.
type fault struct {
	faultproxy.Fault
	rng   string
	times int
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
	faults  map[string]*fault
	// ignoreIfMatch and ignoreRange make object GETs be served as a server that ignores
	// those headers serves them.
	ignoreIfMatch, ignoreRange bool
	// serveChecksums makes a HeadObject in checksum mode answer the CRC32C of what Put
	// stored (sums, by bucket/key), as S3 answers an object's full-object checksum.
	serveChecksums bool
	sums           map[string]uint32

	srv *httptest.Server
	// open counts the connections not yet closed; closed is signalled when one closes.
	open   int
	closed *sync.Cond
}

// New starts a server for the test and points the AWS default credential chain of this
// process (where prism's loopback workers run) at it.
func New(t testing.TB) *Server {
	t.Helper()
	s := &Server{backend: s3mem.New(), faults: map[string]*fault{}, sums: map[string]uint32{}}
	s.closed = sync.NewCond(&s.mu)
	inner := gofakes3.New(s.backend).Server()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.URL.Query().Get("list-type") == "2" {
			s.mu.Lock()
			s.lists++
			s.mu.Unlock()
		}
		bucket, key, isObject := objectPath(r)
		if r.Method == http.MethodHead && isObject && r.Header.Get("x-amz-checksum-mode") == "ENABLED" {
			s.mu.Lock()
			sum, ok := s.sums[bucket+"/"+key]
			ok = ok && s.serveChecksums
			s.mu.Unlock()
			if ok {
				w.Header().Set("x-amz-checksum-crc32c", base64.StdEncoding.EncodeToString(binary.BigEndian.AppendUint32(nil, sum)))
				w.Header().Set("x-amz-checksum-type", "FULL_OBJECT")
			}
		}
		if r.Method != http.MethodGet || !isObject {
			inner.ServeHTTP(w, r)
			return
		}
		s.mu.Lock()
		ignoreIfMatch, ignoreRange := s.ignoreIfMatch, s.ignoreRange
		s.mu.Unlock()
		if !s.checkPin(w, r, bucket, key, !ignoreIfMatch) {
			return
		}
		// Logged before the body is written and counted before each write: a client may
		// finish reading before this handler returns.
		s.mu.Lock()
		s.reqs = append(s.reqs, &Request{Key: key, Range: r.Header.Get("Range"), At: time.Now()})
		req := s.reqs[len(s.reqs)-1]
		s.mu.Unlock()
		f := s.takeFault(key, req.Range)
		if f != nil && f.Delay > 0 {
			select {
			case <-time.After(f.Delay):
			case <-r.Context().Done():
				return
			}
		}
		if f != nil && f.Status != 0 {
			writeError(w, f.Status, f.Code, "injected by s3test")
			return
		}
		if ignoreRange && r.Header.Get("Range") != "" {
			r = r.Clone(r.Context())
			r.Header.Del("Range") // gofakes3 then answers 200 with the whole object
		}
		inner.ServeHTTP(&countingWriter{ResponseWriter: w, srv: s, req: req, fault: f}, r)
	}))
	srv.Config.ConnState = s.connState
	srv.Start()
	s.srv = srv
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	SetAWSEnv(t, "test-access-key", "test-secret-key")
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

// checkPin records GETs without If-Match and, when enforce is set, answers 412 when
// If-Match names another ETag.
func (s *Server) checkPin(w http.ResponseWriter, r *http.Request, bucket, key string, enforce bool) bool {
	want := r.Header.Get("If-Match")
	if want == "" {
		s.mu.Lock()
		s.unpin = append(s.unpin, key)
		s.mu.Unlock()
		return true
	}
	if !enforce {
		return true
	}
	obj, err := s.backend.HeadObject(bucket, key)
	if err != nil {
		return true // gofakes3 answers NoSuchKey / NoSuchBucket
	}
	obj.Contents.Close()
	if got := `"` + hex.EncodeToString(obj.Hash) + `"`; got != want {
		writeError(w, http.StatusPreconditionFailed, "PreconditionFailed", "At least one of the pre-conditions you specified did not hold")
		return false
	}
	return true
}

// writeError answers with an S3 error document.
func writeError(w http.ResponseWriter, status int, code, message string) {
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(status)
	xml.NewEncoder(w).Encode(struct {
		XMLName xml.Name `xml:"Error"`
		Code    string
		Message string
	}{Code: code, Message: message})
}

func (s *Server) takeFault(key, rng string) *faultproxy.Fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.faults[key]
	if f == nil || f.times <= 0 || !strings.HasPrefix(rng, f.rng) {
		return nil
	}
	f.times--
	c := f.Fault
	return &c
}

// countingWriter counts body bytes and applies a fault's reset and stall as they pass.
type countingWriter struct {
	http.ResponseWriter
	srv     *Server
	req     *Request
	n       int64
	fault   *faultproxy.Fault
	sized   bool // fault's ResetAt and StallAt are placed
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
	if f != nil && !w.sized {
		w.sized = true
		size, err := strconv.ParseInt(w.Header().Get("Content-Length"), 10, 64)
		if err != nil {
			size = -1
		}
		*f = f.Sized(size)
	}
	if f != nil && f.ResetAfter > 0 && w.n+int64(len(p)) > f.ResetAfter {
		w.write(p[:f.ResetAfter-w.n])
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

// SetFault makes the next times GETs of key whose Range header starts with rng ("" for
// any GET, "bytes=393216-" for the part of an object that starts there) suffer f.
func (s *Server) SetFault(key, rng string, times int, f faultproxy.Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults[key] = &fault{Fault: f, rng: rng, times: times}
}

// IgnoreIfMatch makes the server serve object GETs whatever their If-Match header says: the
// current version, as some S3-compatible servers and proxies do. GETs without If-Match are
// still recorded (Unpinned).
func (s *Server) IgnoreIfMatch(ignore bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ignoreIfMatch = ignore
}

// IgnoreRange makes the server answer ranged object GETs with 200 and the whole object, as
// HTTP allows a server to. Requests still logs the Range asked for.
func (s *Server) IgnoreRange(ignore bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ignoreRange = ignore
}

// connState counts the server's open connections for Settle.
func (s *Server) connState(_ net.Conn, st http.ConnState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch st {
	case http.StateNew:
		s.open++
	case http.StateClosed, http.StateHijacked:
		s.open--
		s.closed.Broadcast()
	}
}

// Settle closes the server's connections and waits until each has ended, its request's
// handler included. A client that gives up on a request returns before the server has
// necessarily read it, or written the rest of its body into the closed connection; after
// Settle, Requests holds every request sent before it and every byte written for them, so
// that what a test counts from then on is what happened after.
func (s *Server) Settle(t testing.TB) {
	t.Helper()
	s.srv.CloseClientConnections()
	deadline := time.AfterFunc(time.Minute, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.closed.Broadcast()
	})
	defer deadline.Stop()
	start := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.open > 0 {
		if time.Since(start) >= time.Minute {
			t.Fatalf("s3test: %d connections still open a minute after they were closed", s.open)
		}
		s.closed.Wait()
	}
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

// BodyBytes returns the body bytes the server wrote for reqs.
func BodyBytes(reqs []Request) int64 {
	var n int64
	for _, r := range reqs {
		n += r.Bytes
	}
	return n
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

// ServeChecksums makes a HeadObject in checksum mode (the checksum lookup of
// Config.VerifyChecksums) answer the full-object CRC32C of each object stored with Put;
// GetObjectAttributes stays unserved, as on servers that lack it.
func (s *Server) ServeChecksums(serve bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.serveChecksums = serve
}

// Put stores data at bucket/key and returns its ETag.
func (s *Server) Put(t testing.TB, bucket, key string, data []byte) string {
	t.Helper()
	s.mu.Lock()
	s.sums[bucket+"/"+key] = crc32.Checksum(data, crc32.MakeTable(crc32.Castagnoli))
	s.mu.Unlock()
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
