package listing

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	smithy "github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"
)

// TestFastListAccessDenied checks that an error response comes out as the SDK's API error.
func TestFastListAccessDenied(t *testing.T) {
	srv := newServer(t)
	// The default retryer: AccessDenied is not retried, with or without the option.
	c := s3.New(s3.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(srv.URL),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider("AKID", "SECRET", ""),
	})
	body := `<?xml version="1.0" encoding="UTF-8"?>
<Error><Code>AccessDenied</Code><Message>Access Denied</Message><RequestId>REQ123</RequestId><HostId>HOST456</HostId></Error>`
	srv.set(http.StatusForbidden, []byte(body), http.Header{"X-Amz-Request-Id": {"REQ123"}, "X-Amz-Id-2": {"HOST456"}})
	sdk, fast, sdkErr, fastErr := call(t, c)
	var apiErr smithy.APIError
	if !errors.As(fastErr, &apiErr) || apiErr.ErrorCode() != "AccessDenied" || apiErr.ErrorMessage() != "Access Denied" {
		t.Fatalf("error with the option = %v, want the AccessDenied API error", fastErr)
	}
	checkSame(t, []byte(body), sdk, fast, sdkErr, fastErr)
	if n := srv.requests.Load(); n != 2 {
		t.Errorf("%d requests for 2 calls", n)
	}
}

// TestFastListOneRequest checks that a call with the option sends exactly one request,
// whether the fast parser decodes the response or hands it to the SDK's deserializer.
func TestFastListOneRequest(t *testing.T) {
	srv := newServer(t)
	c := newClient(srv.URL, nil)
	for _, r := range []struct {
		name   string
		status int
		body   string
	}{
		{"decoded", http.StatusOK, pretty},
		{"malformed", http.StatusOK, `<ListBucketResult><Name>b</Nam`},
		{"sdk-only", http.StatusOK, `<s3:ListBucketResult xmlns:s3="x"><s3:Name>b</s3:Name></s3:ListBucketResult>`},
		{"forbidden", http.StatusForbidden, `<Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>`},
		{"server-error", http.StatusInternalServerError, `<Error><Code>InternalError</Code></Error>`},
		{"error-in-200", http.StatusOK, `<Error><Code>InternalError</Code></Error>`},
	} {
		t.Run(r.name, func(t *testing.T) {
			srv.set(r.status, []byte(r.body), nil)
			before := srv.requests.Load()
			c.ListObjectsV2(context.Background(), input(), pageDecoding(nil))
			if n := srv.requests.Load() - before; n != 1 {
				t.Errorf("%d requests for one call", n)
			}
		})
	}
}

// TestFastListMetadata checks that the response metadata (request IDs) and the output's
// header binding survive the fast path, and that the option leaves other operations alone.
func TestFastListMetadata(t *testing.T) {
	srv := newServer(t)
	c := newClient(srv.URL, nil)
	srv.set(http.StatusOK, []byte(pretty), http.Header{
		"X-Amz-Request-Id":      {"REQ-1"},
		"X-Amz-Id-2":            {"HOST-1"},
		"X-Amz-Request-Charged": {" requester "},
	})
	ctx := context.Background()
	sdkOut, sdkErr := c.ListObjectsV2(ctx, input())
	fast, fastErr := c.ListObjectsV2(ctx, input(), pageDecoding(nil))
	sdk := pageOrNil(sdkOut)
	checkSame(t, []byte(pretty), sdk, pageOrNil(fast), sdkErr, fastErr)
	if _, ok := fast.ResultMetadata.Get(pageKey{}).(*Page); !ok {
		t.Errorf("the fast deserializer left no page in the metadata")
	}
	if fast.RequestCharged != "requester" {
		t.Errorf("RequestCharged = %q", fast.RequestCharged)
	}
	if id, _ := awsmiddleware.GetRequestIDMetadata(fast.ResultMetadata); id != "REQ-1" {
		t.Errorf("request ID = %q, want REQ-1", id)
	}
	if id, _ := s3.GetHostIDMetadata(fast.ResultMetadata); id != "HOST-1" {
		t.Errorf("host ID = %q, want HOST-1", id)
	}
	if _, ok := awsmiddleware.GetResponseAt(fast.ResultMetadata); !ok {
		t.Errorf("no response time in the metadata")
	}

	// ListObjects (v1) reads the same document into another type; the option must not touch it.
	v1, err1 := c.ListObjects(ctx, &s3.ListObjectsInput{Bucket: aws.String("bucket")})
	v1f, err2 := c.ListObjects(ctx, &s3.ListObjectsInput{Bucket: aws.String("bucket")}, pageDecoding(nil))
	if err1 != nil || err2 != nil || len(v1f.Contents) != 3 || !reflect.DeepEqual(v1.Contents, v1f.Contents) {
		t.Errorf("ListObjects with the option: %v, %v", err1, err2)
	}

	// The option puts the fast deserializer in the SDK's place (so the tests above are not
	// comparing the SDK with itself).
	var installed middleware.DeserializeMiddleware
	probe := func(o *s3.Options) {
		o.APIOptions = append(o.APIOptions, func(stack *middleware.Stack) error {
			installed, _ = stack.Deserialize.Get("OperationDeserializer")
			return nil
		})
	}
	if _, err := c.ListObjectsV2(ctx, input(), pageDecoding(nil), probe); err != nil {
		t.Fatal(err)
	}
	if _, ok := installed.(*fastDeserializer); !ok {
		t.Errorf("the OperationDeserializer is %T", installed)
	}

	// The paginator takes the option too, and applying it twice is harmless.
	pg := s3.NewListObjectsV2Paginator(c, input())
	page, err := pg.NextPage(ctx, pageDecoding(nil), pageDecoding(nil))
	if err != nil || !samePage(pageOrNil(page), sdk) {
		t.Errorf("paginator page with the option: %v\n%s", err, dump(pageOrNil(page)))
	}
}

// TestFastListBodyErrors checks the paths where the body is not decoded by the fast parser
// although the status is 2xx: a body that breaks while being read, and one too large.
func TestFastListBodyErrors(t *testing.T) {
	ctx := context.Background()
	tr := &transport{resp: response{status: 200, body: []byte(pretty[:300]), bodyErr: errors.New("connection reset by peer")}}
	c := newClient("http://s3.test", &http.Client{Transport: tr})
	sdk, sdkErr := c.ListObjectsV2(ctx, input())
	fast, fastErr := c.ListObjectsV2(ctx, input(), pageDecoding(nil))
	if fastErr == nil || !strings.Contains(fastErr.Error(), "connection reset by peer") {
		t.Errorf("error with the option = %v", fastErr)
	}
	checkSame(t, tr.resp.body, pageOrNil(sdk), pageOrNil(fast), sdkErr, fastErr)

	// A body over the limit is streamed to the SDK's deserializer: with a 100-byte limit,
	// the document is decoded by the SDK and the result is the same.
	tr.resp = response{status: 200, body: []byte(pretty)}
	small := func(o *s3.Options) {
		o.APIOptions = append(o.APIOptions, func(stack *middleware.Stack) error {
			orig, _ := stack.Deserialize.Get("OperationDeserializer")
			_, err := stack.Deserialize.Swap("OperationDeserializer", &fastDeserializer{sdk: orig, limit: 100})
			return err
		})
	}
	sdk, sdkErr = c.ListObjectsV2(ctx, input())
	fast, fastErr = c.ListObjectsV2(ctx, input(), small)
	checkSame(t, tr.resp.body, pageOrNil(sdk), pageOrNil(fast), sdkErr, fastErr)
	if sdkErr != nil || len(pageOrNil(fast).Objects) != 3 {
		t.Errorf("large body: %v, %d objects", fastErr, len(pageOrNil(fast).Objects))
	}
	if n := tr.requests.Load(); n != 4 {
		t.Errorf("%d requests for 4 calls", n)
	}

	for _, n := range []int{0, 1, 99, 100, 101, 5000} {
		body := bytes.Repeat([]byte("x"), n)
		got, tooBig, err := readBody(slowReader{bytes.NewReader(body)}, -1, nil, 100)
		if err != nil || tooBig != (n > 100) || (!tooBig && !bytes.Equal(got, body)) || len(got) > 101 {
			t.Errorf("readBody(%d bytes, limit 100) = %d bytes, %v, %v", n, len(got), tooBig, err)
		}
		got, tooBig, err = readBody(bytes.NewReader(body), int64(n), make([]byte, 0, 7), 100)
		if err != nil || tooBig != (n > 100) || (!tooBig && !bytes.Equal(got, body)) {
			t.Errorf("readBody(%d bytes, sized, limit 100) = %d bytes, %v, %v", n, len(got), tooBig, err)
		}
	}
}

// TestFastListConcurrent decodes pages of different sizes from several goroutines at once,
// so that the race detector sees the shared buffer pool at work.
func TestFastListConcurrent(t *testing.T) {
	pages := make([][]byte, 8)
	for i := range pages {
		pages[i] = pageDoc(i*37 + 1)
	}
	tr := roundTrip(func(r *http.Request) (*http.Response, error) {
		var i int
		fmt.Sscanf(r.URL.Query().Get("prefix"), "p%d", &i)
		return (&transport{resp: response{status: 200, body: pages[i]}}).RoundTrip(r)
	})
	c := newClient("http://s3.test", &http.Client{Transport: tr})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for j := range 10 {
				i := (g + j) % len(pages)
				in := &s3.ListObjectsV2Input{Bucket: aws.String("bucket"), Prefix: aws.String(fmt.Sprintf("p%d", i))}
				out, err := c.ListObjectsV2(context.Background(), in, pageDecoding(nil))
				if err != nil || len(pageOf(out).Objects) != i*37+1 {
					t.Errorf("page %d: %v", i, err)
					return
				}
				for k, o := range pageOf(out).Objects {
					if want := fmt.Sprintf("data/2024/01/part-%08d.json.gz", k+1); o.Key != want {
						t.Errorf("page %d key %d = %q, want %q", i, k, o.Key, want)
						return
					}
				}
			}
		})
	}
	wg.Wait()
}

// leanResult is a ListObjectsV2 page as minio-go decodes one, with encoding/xml into a
// struct of the fields it reads: the baseline for what the hand-written parser saves.
type leanResult struct {
	Contents []struct {
		Key          string
		Size         int64
		ETag         string
		LastModified time.Time
		StorageClass string
		RestoreInfo  *struct {
			IsRestoreInProgress bool
			RestoreExpiryDate   time.Time
		} `xml:"RestoreStatus"`
	}
	CommonPrefixes        []struct{ Prefix string }
	IsTruncated           bool
	NextContinuationToken string
	EncodingType          string
}

// BenchmarkListDecode compares the decoding of a 1,000-key page by the SDK, by a lean
// encoding/xml decoder and by the fast parser: the document alone ("decode/..."), and
// whole calls through an httptest server (server included) and an in-memory transport
// (what the client costs). The SDK's rows include narrowing its output to a Page.
func BenchmarkListDecode(b *testing.B) {
	page := pageDoc(1000)
	ctx := context.Background()
	srv := newServer(b)
	srv.set(http.StatusOK, page, nil)
	tr := &transport{resp: response{status: 200, body: page}}
	clients := map[string]*s3.Client{
		"httptest": newClient(srv.URL, nil),
		"inmemory": newClient("http://s3.test", &http.Client{Transport: tr}),
	}
	for _, via := range []string{"httptest", "inmemory"} {
		for _, mode := range []string{"sdk", "fast"} {
			b.Run(via+"/"+mode, func(b *testing.B) {
				var opts []func(*s3.Options)
				if mode == "fast" {
					opts = append(opts, pageDecoding(nil))
				}
				c := clients[via]
				b.SetBytes(int64(len(page)))
				b.ReportAllocs()
				for b.Loop() {
					out, err := c.ListObjectsV2(ctx, input(), opts...)
					if err != nil || len(pageOf(out).Objects) != 1000 {
						b.Fatalf("%v", err)
					}
				}
			})
		}
	}
	sdk := sdkDeserializer(b)
	decoders := []struct {
		name   string
		decode func() int
	}{
		{"sdk", func() int {
			out, err := deserialize(sdk, page)
			if err != nil {
				b.Fatal(err)
			}
			return len(pageFromSDK(out).Objects)
		}},
		{"encodingxml", func() int {
			var r leanResult
			if err := xml.Unmarshal(page, &r); err != nil {
				b.Fatal(err)
			}
			return len(r.Contents)
		}},
		{"fast", func() int {
			p, err := parsePage(page)
			if err != nil {
				b.Fatal(err)
			}
			return len(p.Objects)
		}},
	}
	for _, d := range decoders {
		b.Run("decode/"+d.name, func(b *testing.B) {
			b.SetBytes(int64(len(page)))
			b.ReportAllocs()
			for b.Loop() {
				if n := d.decode(); n != 1000 {
					b.Fatalf("%d keys", n)
				}
			}
		})
	}
}

// renamedDeserializer is the SDK's deserializer under another ID: the stack an SDK change
// could give, with no "OperationDeserializer" to swap.
type renamedDeserializer struct {
	middleware.DeserializeMiddleware
}

func (renamedDeserializer) ID() string { return "RenamedOperationDeserializer" }

// TestFallbackWithoutDeserializerSlot: when the stack has no OperationDeserializer, a page
// is decoded by the SDK's deserializer wherever it sits, the same page, and the fallback is
// logged once, not on every LIST.
func TestFallbackWithoutDeserializerSlot(t *testing.T) {
	srv := newServer(t)
	srv.set(http.StatusOK, []byte(pretty), nil)
	c := newClient(srv.URL, nil)
	sdk, _, sdkErr, _ := call(t, c)
	if sdkErr != nil {
		t.Fatal(sdkErr)
	}
	renamed := s3.New(c.Options(), func(o *s3.Options) {
		o.APIOptions = append(o.APIOptions, func(stack *middleware.Stack) error {
			orig, _ := stack.Deserialize.Get("OperationDeserializer")
			_, err := stack.Deserialize.Swap("OperationDeserializer", renamedDeserializer{orig})
			return err
		})
	})
	warnedSDKDecoding = sync.Once{}
	var warnings []string
	warnf := func(format string, args ...any) { warnings = append(warnings, fmt.Sprintf(format, args...)) }
	for range 3 {
		var missing bool
		out, err := renamed.ListObjectsV2(context.Background(), input(), pageDecoding(&missing))
		if err != nil || !missing {
			t.Fatalf("without the slot: %v, missing %v; want the SDK's page and missing", err, missing)
		}
		if _, fast := out.ResultMetadata.Get(pageKey{}).(*Page); fast {
			t.Fatalf("the fast deserializer ran without its slot")
		}
		page, err := fetchPage(context.Background(), renamed, input(), warnf)
		if err != nil {
			t.Fatal(err)
		}
		checkSame(t, []byte(pretty), sdk, page, nil, nil)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "OperationDeserializer") {
		t.Errorf("warnings = %q, want one naming the missing OperationDeserializer", warnings)
	}
}
