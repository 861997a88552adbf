package listing

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// response is what a fake S3 answers to every request.
type response struct {
	status  int
	header  http.Header
	body    []byte
	bodyErr error // if set, the body fails with it after its bytes
}

// server is an httptest S3 that answers every request with the current response and
// counts the requests.
type server struct {
	*httptest.Server
	mu       sync.Mutex
	resp     response
	requests atomic.Int64
}

// newServer starts an server, closed when the test ends.
func newServer(t testing.TB) *server {
	s := &server{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		s.mu.Lock()
		resp := s.resp
		s.mu.Unlock()
		for k, v := range resp.header {
			w.Header()[k] = v
		}
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(resp.status)
		w.Write(resp.body)
	}))
	t.Cleanup(s.Close)
	return s
}

// set makes the server answer with status and body from now on.
func (s *server) set(status int, body []byte, header http.Header) {
	s.mu.Lock()
	s.resp = response{status: status, body: body, header: header}
	s.mu.Unlock()
}

// transport answers every request in memory, for benchmarks and fuzzing that should
// measure decoding rather than sockets; everything above the transport is the SDK's.
type transport struct {
	resp     response
	requests atomic.Int64
}

// RoundTrip returns the configured response.
func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	t.requests.Add(1)
	h := t.resp.header.Clone()
	if h == nil {
		h = http.Header{}
	}
	var body io.Reader = bytes.NewReader(t.resp.body)
	if t.resp.bodyErr != nil {
		body = io.MultiReader(body, failingReader{t.resp.bodyErr})
	}
	return &http.Response{
		StatusCode:    t.resp.status,
		Status:        http.StatusText(t.resp.status),
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        h,
		Body:          io.NopCloser(body),
		ContentLength: int64(len(t.resp.body)),
		Request:       req,
	}, nil
}

// newClient returns an S3 client for endpoint that never retries, so that every request
// the server sees was sent by one call.
func newClient(endpoint string, hc s3.HTTPClient) *s3.Client {
	return s3.New(s3.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(endpoint),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider("AKID", "SECRET", ""),
		Retryer:      aws.NopRetryer{},
		HTTPClient:   hc,
	})
}

// input is the request every test sends; the fake servers ignore it.
func input() *s3.ListObjectsV2Input {
	return &s3.ListObjectsV2Input{Bucket: aws.String("bucket"), Prefix: aws.String("data/")}
}

// call lists once with the SDK's decoder and once with the fast one, and returns the pages.
func call(t testing.TB, c *s3.Client) (sdk, fast *Page, sdkErr, fastErr error) {
	t.Helper()
	ctx := context.Background()
	sdkOut, sdkErr := c.ListObjectsV2(ctx, input())
	fastOut, fastErr := c.ListObjectsV2(ctx, input(), pageDecoding(nil))
	return pageOrNil(sdkOut), pageOrNil(fastOut), sdkErr, fastErr
}

// pageOrNil is the page of a call's output (see pageOf), nil for no output.
func pageOrNil(out *s3.ListObjectsV2Output) *Page {
	if out == nil {
		return nil
	}
	return pageOf(out)
}

// errChain describes an error and everything it wraps, by type and message.
func errChain(err error) string {
	var b strings.Builder
	for ; err != nil; err = errors.Unwrap(err) {
		fmt.Fprintf(&b, "%T: %v\n", err, err)
	}
	return b.String()
}

// dump renders a page readably for failure messages.
func dump(p *Page) string {
	b, err := json.MarshalIndent(p, "", " ")
	if err != nil {
		return fmt.Sprintf("%+v", p)
	}
	return string(b)
}

// samePage reports whether two pages are equal, times by value and location (a parsed
// offset is a new *time.Location each time), an empty slice as a nil one.
func samePage(a, b *Page) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Truncated == b.Truncated && a.NextContinuationToken == b.NextContinuationToken && a.EncodingType == b.EncodingType &&
		(len(a.Objects) == 0 && len(b.Objects) == 0 || reflect.DeepEqual(a.Objects, b.Objects)) && slices.Equal(a.Folders, b.Folders)
}

// checkSame fails the test unless the two decodings gave the same page or the same error.
func checkSame(t testing.TB, doc []byte, sdk, fast *Page, sdkErr, fastErr error) {
	t.Helper()
	if (sdkErr == nil) != (fastErr == nil) {
		t.Fatalf("document %q:\nSDK error: %v\nfast error: %v\nSDK page: %s\nfast page: %s",
			doc, sdkErr, fastErr, dump(sdk), dump(fast))
	}
	if sdkErr != nil {
		if a, b := errChain(sdkErr), errChain(fastErr); a != b {
			t.Fatalf("document %q: errors differ:\nSDK:\n%s\nfast:\n%s", doc, a, b)
		}
		return
	}
	if !samePage(sdk, fast) {
		t.Fatalf("document %q: pages differ:\nSDK: %s\nfast: %s", doc, dump(sdk), dump(fast))
	}
}

// roundTrip is an http.RoundTripper made of a function.
type roundTrip func(*http.Request) (*http.Response, error)

// RoundTrip calls f.
func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// slowReader returns at most a few bytes per Read, like a slow connection.
type slowReader struct{ r io.Reader }

// Read reads up to 3 bytes.
func (h slowReader) Read(p []byte) (int, error) {
	return h.r.Read(p[:min(len(p), 3)])
}

// sdkDeserializer returns the SDK's ListObjectsV2 deserializer middleware, taken from the
// stack of a call that is stopped before it sends anything.
func sdkDeserializer(t testing.TB) middleware.DeserializeMiddleware {
	var m middleware.DeserializeMiddleware
	stop := errors.New("stop")
	c := newClient("http://s3.test", &http.Client{Transport: &transport{}})
	_, err := c.ListObjectsV2(context.Background(), input(), func(o *s3.Options) {
		o.APIOptions = append(o.APIOptions, func(stack *middleware.Stack) error {
			m, _ = stack.Deserialize.Get("OperationDeserializer")
			return stop
		})
	})
	if !errors.Is(err, stop) || m == nil {
		t.Fatalf("no deserializer: %v", err)
	}
	return m
}

// deserialize runs a deserializer middleware on a 200 response with body doc.
func deserialize(m middleware.DeserializeMiddleware, doc []byte) (*s3.ListObjectsV2Output, error) {
	resp := &smithyhttp.Response{Response: &http.Response{
		StatusCode:    200,
		Header:        http.Header{},
		Body:          io.NopCloser(bytes.NewReader(doc)),
		ContentLength: int64(len(doc)),
	}}
	received := received{out: middleware.DeserializeOutput{RawResponse: resp}}
	out, metadata, err := m.HandleDeserialize(context.Background(), middleware.DeserializeInput{}, received)
	result, _ := out.Result.(*s3.ListObjectsV2Output)
	if result != nil {
		result.ResultMetadata = metadata // as the client sets it, for pageOf
	}
	return result, err
}

// pageDoc returns a page of n keys as S3 sends it.
func pageDoc(n int) []byte {
	var b bytes.Buffer
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	b.WriteString(`<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>bucket</Name><Prefix>data/</Prefix>`)
	fmt.Fprintf(&b, `<NextContinuationToken>1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=</NextContinuationToken><KeyCount>%d</KeyCount><MaxKeys>%d</MaxKeys><IsTruncated>true</IsTruncated>`, n, n)
	t := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	for i := range n {
		fmt.Fprintf(&b, `<Contents><Key>data/2024/01/part-%08d.json.gz</Key><LastModified>%s</LastModified><ETag>&quot;0123456789abcdef0123456789abcdef&quot;</ETag><Size>%d</Size><StorageClass>STANDARD</StorageClass></Contents>`,
			i+1, t.Add(time.Duration(i)*time.Millisecond*1234).Format("2006-01-02T15:04:05.000Z"), 1000000+i*37)
	}
	b.WriteString(`</ListBucketResult>`)
	return b.Bytes()
}
