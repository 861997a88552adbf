// Package dirbucket is an in-process S3 server that behaves as an S3 Express One Zone
// directory bucket does where s3io can tell: every request but CreateSession must carry a
// session token (x-amz-s3session-token) and be signed with that session's keys under the
// s3express service; ListObjectsV2 answers in no particular order (a new order for every
// listing and a new shuffle of every page), rejects StartAfter, any delimiter but "/", a
// prefix that does not end in "/" and OptionalObjectAttributes; ETags are opaque, never
// an MD5 of the body. GET and HEAD answer Range and If-Match.
//
// The same server can instead serve its keys as a general-purpose bucket does (sorted
// listings, StartAfter, any prefix, plain SigV4): the yardstick that measures what the
// directory bucket's rules cost the planner, on a server of the same shape.
//
// It is imported by tests only. Standard library and the SDK's signer only.
package dirbucket

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// Counts is what the server answered since it started.
type Counts struct {
	CreateSession int // sessions issued
	Lists         int // ListObjectsV2 pages answered
	Gets, Heads   int // object GETs and HEADs answered (412 included)
	Rejected      int // requests refused: unauthenticated, or a LIST S3 Express refuses
}

// Server is a running bucket. Its keys are set with Put before or while it serves.
type Server struct {
	URL    string
	Bucket string
	// AccessKey and SecretKey are the long-term keys CreateSession must be signed with
	// (and, in general-purpose mode, every request).
	AccessKey, SecretKey string

	general bool
	hs      *httptest.Server
	latency time.Duration // slept before answering each LIST

	mu       sync.Mutex
	keys     []string // sorted
	objects  map[string]*object
	sessions map[string]session // by token
	orders   map[string][]entry // the order of each listing under way, by seed and request
	counts   Counts
	lists    []ListRequest
}

type object struct {
	data     []byte
	etag     string
	modified time.Time
}

// ListRequest is one ListObjectsV2 request answered, as Lists records it.
type ListRequest struct {
	Prefix, Delimiter string
	Continued         bool
	Entries           int // keys and common prefixes in the page
}

// New starts a directory bucket named bucket, which must be named as one is
// ("base--zone-id--x-s3"), accepting sessions created with accessKey and secretKey.
func New(t testing.TB, bucket, accessKey, secretKey string) *Server {
	t.Helper()
	if !strings.HasSuffix(bucket, "--x-s3") {
		t.Fatalf("dirbucket: %q is not named as a directory bucket is (base--zone-id--x-s3)", bucket)
	}
	return start(t, bucket, accessKey, secretKey, false)
}

// NewGeneral starts a general-purpose bucket of the same shape: sorted listings,
// StartAfter, any prefix and delimiter, requests signed with accessKey and secretKey
// themselves.
func NewGeneral(t testing.TB, bucket, accessKey, secretKey string) *Server {
	t.Helper()
	if strings.HasSuffix(bucket, "--x-s3") {
		t.Fatalf("dirbucket: %q is named as a directory bucket is", bucket)
	}
	return start(t, bucket, accessKey, secretKey, true)
}

func start(t testing.TB, bucket, accessKey, secretKey string, general bool) *Server {
	s := &Server{Bucket: bucket, AccessKey: accessKey, SecretKey: secretKey, general: general,
		objects: map[string]*object{}, sessions: map[string]session{}, orders: map[string][]entry{}}
	s.hs = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.hs.Close)
	s.URL = s.hs.URL
	return s
}

// Put stores data at key and returns its ETag: 32 random hex digits, as S3 Express gives,
// never the MD5 of data.
func (s *Server) Put(key string, data []byte) string {
	etag := `"` + randomHex(16) + `"`
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.objects[key]; !ok {
		i, _ := slices.BinarySearch(s.keys, key)
		s.keys = slices.Insert(s.keys, i, key)
	}
	s.objects[key] = &object{data: data, etag: etag, modified: time.Now().UTC().Truncate(time.Second)}
	return etag
}

// SetListLatency makes every ListObjectsV2 answer wait d first, concurrently for concurrent
// requests: S3 takes tens of milliseconds per LIST page, which loopback does not. Set it
// before the server is used.
func (s *Server) SetListLatency(d time.Duration) { s.latency = d }

// Counts returns what the server answered so far.
func (s *Server) Counts() Counts {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts
}

// Lists returns the ListObjectsV2 requests answered so far, in the order answered.
func (s *Server) Lists() []ListRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.lists)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	bucket, key, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	if bucket != s.Bucket {
		s.fail(w, http.StatusNotFound, "NoSuchBucket", "The specified bucket does not exist")
		return
	}
	q := r.URL.Query()
	if _, ok := q["session"]; ok && key == "" && !s.general {
		s.createSession(w, r)
		return
	}
	if msg := s.authenticate(r); msg != "" {
		s.fail(w, http.StatusForbidden, "AccessDenied", msg)
		return
	}
	switch {
	case key == "" && r.Method == http.MethodGet && q.Get("list-type") == "2":
		s.list(w, r, q)
	case key != "" && (r.Method == http.MethodGet || r.Method == http.MethodHead):
		s.object(w, r, key)
	default:
		s.fail(w, http.StatusNotImplemented, "NotImplemented", "dirbucket serves CreateSession, ListObjectsV2, GetObject and HeadObject")
	}
}

// fail answers with an S3 error document; requests S3 refuses are counted as rejected.
func (s *Server) fail(w http.ResponseWriter, status int, code, msg string) {
	if status != http.StatusPreconditionFailed && status != http.StatusNotFound {
		s.mu.Lock()
		s.counts.Rejected++
		s.mu.Unlock()
	}
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(status)
	xml.NewEncoder(w).Encode(struct {
		XMLName   xml.Name `xml:"Error"`
		Code      string
		Message   string
		RequestID string `xml:"RequestId"`
	}{Code: code, Message: msg, RequestID: randomHex(8)})
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// String names the server for test logs.
func (s *Server) String() string {
	kind := "directory"
	if s.general {
		kind = "general-purpose"
	}
	return fmt.Sprintf("%s bucket %s at %s", kind, s.Bucket, s.URL)
}
