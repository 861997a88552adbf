package s3io

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"
	smithytime "github.com/aws/smithy-go/time"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// lxResponse is what a fake S3 answers to every request.
type lxResponse struct {
	status  int
	header  http.Header
	body    []byte
	bodyErr error // if set, the body fails with it after its bytes
}

// lxServer is an httptest S3 that answers every request with the current lxResponse and
// counts the requests.
type lxServer struct {
	*httptest.Server
	mu       sync.Mutex
	resp     lxResponse
	requests atomic.Int64
}

// newLXServer starts an lxServer, closed when the test ends.
func newLXServer(t testing.TB) *lxServer {
	s := &lxServer{}
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
func (s *lxServer) set(status int, body []byte, header http.Header) {
	s.mu.Lock()
	s.resp = lxResponse{status: status, body: body, header: header}
	s.mu.Unlock()
}

// lxTransport answers every request in memory, for benchmarks and fuzzing that should
// measure decoding rather than sockets; everything above the transport is the SDK's.
type lxTransport struct {
	resp     lxResponse
	requests atomic.Int64
}

// RoundTrip returns the configured response.
func (t *lxTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	t.requests.Add(1)
	h := t.resp.header.Clone()
	if h == nil {
		h = http.Header{}
	}
	var body io.Reader = bytes.NewReader(t.resp.body)
	if t.resp.bodyErr != nil {
		body = io.MultiReader(body, listReadError{t.resp.bodyErr})
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

// newLXClient returns an S3 client for endpoint that never retries, so that every request
// the server sees was sent by one call.
func newLXClient(endpoint string, hc s3.HTTPClient) *s3.Client {
	return s3.New(s3.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(endpoint),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider("AKID", "SECRET", ""),
		Retryer:      aws.NopRetryer{},
		HTTPClient:   hc,
	})
}

// lxInput is the request every test sends; the fake servers ignore it.
func lxInput() *s3.ListObjectsV2Input {
	return &s3.ListObjectsV2Input{Bucket: aws.String("bucket"), Prefix: aws.String("data/")}
}

// lxCall lists once with the SDK's decoder and once with the fast one.
func lxCall(t testing.TB, c *s3.Client) (sdk, fast *s3.ListObjectsV2Output, sdkErr, fastErr error) {
	t.Helper()
	ctx := context.Background()
	sdk, sdkErr = c.ListObjectsV2(ctx, lxInput())
	fast, fastErr = c.ListObjectsV2(ctx, lxInput(), fastListDecoding)
	return sdk, fast, sdkErr, fastErr
}

// lxErrChain describes an error and everything it wraps, by type and message.
func lxErrChain(err error) string {
	var b strings.Builder
	for ; err != nil; err = errors.Unwrap(err) {
		fmt.Fprintf(&b, "%T: %v\n", err, err)
	}
	return b.String()
}

// lxDump renders an output readably for failure messages.
func lxDump(out *s3.ListObjectsV2Output) string {
	if out == nil {
		return "<nil>"
	}
	c := *out
	c.ResultMetadata = middleware.Metadata{}
	b, err := json.MarshalIndent(c, "", " ")
	if err != nil {
		return fmt.Sprintf("%+v", c)
	}
	return string(b)
}

// lxSameOutput reports whether two outputs are equal apart from their response metadata.
func lxSameOutput(a, b *s3.ListObjectsV2Output) bool {
	if a == nil || b == nil {
		return a == b
	}
	ac, bc := *a, *b
	ac.ResultMetadata, bc.ResultMetadata = middleware.Metadata{}, middleware.Metadata{}
	return reflect.DeepEqual(ac, bc)
}

// lxCheckSame fails the test unless the two calls returned the same output or the same error.
func lxCheckSame(t testing.TB, doc []byte, sdk, fast *s3.ListObjectsV2Output, sdkErr, fastErr error) {
	t.Helper()
	if (sdkErr == nil) != (fastErr == nil) {
		t.Fatalf("document %q:\nSDK error: %v\nfast error: %v\nSDK output: %s\nfast output: %s",
			doc, sdkErr, fastErr, lxDump(sdk), lxDump(fast))
	}
	if sdkErr != nil {
		if a, b := lxErrChain(sdkErr), lxErrChain(fastErr); a != b {
			t.Fatalf("document %q: errors differ:\nSDK:\n%s\nfast:\n%s", doc, a, b)
		}
		return
	}
	if !lxSameOutput(sdk, fast) {
		t.Fatalf("document %q: outputs differ:\nSDK: %s\nfast: %s", doc, lxDump(sdk), lxDump(fast))
	}
}

// lxCompact removes the indentation between tags.
var lxCompact = regexp.MustCompile(`>\s+<`)

// lxPretty is a pretty-printed page with most of what S3 sends.
const lxPretty = `<?xml version="1.0" encoding="UTF-8"?>
<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
  <Name>bucket</Name>
  <Prefix>data/</Prefix>
  <NextContinuationToken>1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=</NextContinuationToken>
  <KeyCount>3</KeyCount>
  <MaxKeys>3</MaxKeys>
  <Delimiter>/</Delimiter>
  <IsTruncated>true</IsTruncated>
  <Contents>
    <Key>data/2024/01/part-00000001.json.gz</Key>
    <LastModified>2024-01-02T03:04:05.678Z</LastModified>
    <ETag>&quot;0123456789abcdef0123456789abcdef&quot;</ETag>
    <ChecksumAlgorithm>CRC64NVME</ChecksumAlgorithm>
    <ChecksumType>FULL_OBJECT</ChecksumType>
    <Size>1234</Size>
    <StorageClass>STANDARD</StorageClass>
  </Contents>
  <Contents>
    <Key>data/2024/01/part-00000002.json.gz</Key>
    <LastModified>2024-02-29T23:59:59Z</LastModified>
    <ETag>"fedcba9876543210fedcba9876543210-3"</ETag>
    <Size>0</Size>
    <StorageClass>GLACIER</StorageClass>
    <RestoreStatus>
      <IsRestoreInProgress>false</IsRestoreInProgress>
      <RestoreExpiryDate>2024-03-05T00:00:00.000Z</RestoreExpiryDate>
    </RestoreStatus>
  </Contents>
  <Contents>
    <Key>data/2024/01/part-00000003.json.gz</Key>
    <LastModified>2024-01-02T03:04:05.123456789Z</LastModified>
    <ETag>&quot;00&quot;</ETag>
    <Size>9223372036854775807</Size>
    <StorageClass>DEEP_ARCHIVE</StorageClass>
    <RestoreStatus>
      <IsRestoreInProgress>true</IsRestoreInProgress>
    </RestoreStatus>
  </Contents>
  <CommonPrefixes>
    <Prefix>data/2024/02/</Prefix>
  </CommonPrefixes>
</ListBucketResult>
`

// lxDocs are documents the fast parser must decode, each exactly as the SDK does.
var lxDocs = []struct {
	name string
	doc  string
}{
	{"pretty", lxPretty},
	{"compact", lxCompact.ReplaceAllString(lxPretty, "><")},
	{"crlf", strings.ReplaceAll(lxPretty, "\n", "\r\n")},
	{"empty", `<?xml version="1.0" encoding="UTF-8"?>
<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>bucket</Name><Prefix>nothing/</Prefix><KeyCount>0</KeyCount><MaxKeys>1000</MaxKeys><IsTruncated>false</IsTruncated></ListBucketResult>`},
	{"self-closing-root", `<ListBucketResult/>`},
	{"common-prefixes-only", `<?xml version="1.0" encoding="UTF-8"?>
<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>bucket</Name><Prefix></Prefix><Delimiter>/</Delimiter><KeyCount>3</KeyCount><MaxKeys>1000</MaxKeys><IsTruncated>false</IsTruncated>` +
		`<CommonPrefixes><Prefix>a/</Prefix></CommonPrefixes><CommonPrefixes><Prefix>b/</Prefix></CommonPrefixes><CommonPrefixes><Prefix>c &amp; d/</Prefix></CommonPrefixes><CommonPrefixes/></ListBucketResult>`},
	{"entities", `<ListBucketResult><Contents><Key>a&amp;b&lt;c&gt;d&quot;e&apos;f&#34;g&#x22;h&#13;i&#x1F600;j&#10;k&#9;l&#0065;&#x00041;</Key><ETag>&quot;x&quot;</ETag></Contents></ListBucketResult>`},
	{"surrogate-reference", `<ListBucketResult><Contents><Key>&#xD800;&#57343;</Key></Contents></ListBucketResult>`},
	{"cdata", "<ListBucketResult><Contents><Key><![CDATA[a<b>&amp;c]]]]></Key><ETag><![CDATA[]]></ETag></Contents><Prefix><![CDATA[x\r\ny\rz]]></Prefix></ListBucketResult>"},
	{"cdata-in-structure", `<ListBucketResult><![CDATA[ignored]]><Contents><![CDATA[<Key>x</Key>]]><Key>k</Key></Contents></ListBucketResult>`},
	{"unicode", `<ListBucketResult><Name>bücket</Name><Contents><Key>データ/日本語 ファイル.txt</Key></Contents><Contents><Key>emoji/😀/ü/ẞ/ﬀ</Key></Contents></ListBucketResult>`},
	{"bom-inside", "<ListBucketResult><Contents><Key>zero\ufeffwidth\u00a0\U0010FFFD</Key></Contents></ListBucketResult>"},
	{"absent-optional", `<ListBucketResult><Contents><Key>only-key</Key></Contents><Contents></Contents><Contents/></ListBucketResult>`},
	{"empty-values", `<ListBucketResult><Prefix/><Delimiter></Delimiter><StartAfter /><ContinuationToken></ContinuationToken><Contents><Key/><ETag></ETag><StorageClass/></Contents></ListBucketResult>`},
	{"times", `<ListBucketResult>` +
		`<Contents><Key>a</Key><LastModified>2024-01-02T03:04:05Z</LastModified></Contents>` +
		`<Contents><Key>b</Key><LastModified>2024-01-02T03:04:05.1Z</LastModified></Contents>` +
		`<Contents><Key>c</Key><LastModified>2024-01-02T03:04:05.123456789Z</LastModified></Contents>` +
		`<Contents><Key>d</Key><LastModified>2024-01-02T03:04:05.1234567891Z</LastModified></Contents>` +
		`<Contents><Key>e</Key><LastModified>2024-01-02T03:04:05+02:00</LastModified></Contents>` +
		`<Contents><Key>f</Key><LastModified>2024-01-02T03:04:05.5-07:30</LastModified></Contents>` +
		`<Contents><Key>g</Key><LastModified>2024-01-02T03:04:05.25</LastModified></Contents>` +
		`<Contents><Key>h</Key><LastModified>2000-02-29T00:00:00.000Z</LastModified></Contents>` +
		`<Contents><Key>i</Key><LastModified>0001-01-01T00:00:00Z</LastModified></Contents>` +
		`</ListBucketResult>`},
	{"encoding-url", `<?xml version="1.0" encoding="UTF-8"?>
<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>bucket</Name><Prefix>a%20b%2F</Prefix><StartAfter>a%20b%2Fc</StartAfter><KeyCount>1</KeyCount><MaxKeys>1000</MaxKeys><EncodingType>url</EncodingType><IsTruncated>false</IsTruncated><Contents><Key>a%20b%2Fc%0Ad%01</Key><Size>1</Size></Contents></ListBucketResult>`},
	{"unknown-elements", `<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/" xmlns:xsi='http://www.w3.org/2001/XMLSchema-instance'>
  <Unknown a="1" b='&lt;2&gt;'><Nested><Deeper x="y">text &amp; more<Leaf/></Deeper><!-- a comment --><![CDATA[<Key>not a key</Key>]]></Nested></Unknown>
  <Contents>
    <Key>k</Key>
    <Unknown><Key>not this</Key></Unknown>
    <Owner><ID>abc</ID><DisplayName>me</DisplayName><Other/></Owner>
    <RestoreStatus><Unknown>1</Unknown></RestoreStatus>
  </Contents>
  <CommonPrefixes><Unknown><Prefix>no</Prefix></Unknown><Prefix>p/</Prefix></CommonPrefixes>
  <Contents2><Key>x</Key></Contents2>
</ListBucketResult>`},
	{"owner", `<ListBucketResult><Contents><Key>k</Key><Owner><ID>75aa57f09aa0c8caeab4f8c24e99d10f8e7faeebf76c078efc7c6caea54ba06a</ID></Owner></Contents><Contents><Key>k2</Key><Owner><DisplayName>d</DisplayName></Owner><Owner><ID>i</ID></Owner></Contents></ListBucketResult>`},
	{"case-insensitive-names", `<listbucketresult><NAME>b</NAME><contents><KEY>k</KEY><etag>e</etag><SIZE>5</SIZE><storageclass>STANDARD_IA</storageclass><restorestatus><isrestoreinprogress>TRUE</isrestoreinprogress></restorestatus></contents><commonprefixes><PREFIX>p</PREFIX></commonprefixes></listbucketresult>`},
	{"comments-and-attributes", `<?xml version='1.0' encoding='utf-8' standalone="yes"?><!-- before --><!----><ListBucketResult   a = "1"  b='2'><!-- x - y --><Name  attr="&amp;&#x41;]]>" >b</Name ><Contents  ><Key
>k</Key
></Contents></ListBucketResult   >`},
	{"duplicates", `<ListBucketResult><Name>a</Name><Name>b</Name><Contents><Key>1</Key><Key>2</Key><ChecksumAlgorithm>CRC32</ChecksumAlgorithm><ChecksumAlgorithm>SHA256</ChecksumAlgorithm><ChecksumAlgorithm/>` +
		`<RestoreStatus><IsRestoreInProgress>true</IsRestoreInProgress></RestoreStatus><RestoreStatus><RestoreExpiryDate>2024-01-01T00:00:00Z</RestoreExpiryDate></RestoreStatus></Contents></ListBucketResult>`},
	{"numbers", `<ListBucketResult><KeyCount>4294967297</KeyCount><MaxKeys>-2147483649</MaxKeys><IsTruncated>1</IsTruncated><Contents><Size>+5</Size></Contents><Contents><Size>-1</Size></Contents><Contents><Size>007</Size></Contents><Contents><Size>123456789012345678</Size></Contents><Contents><Size>-9223372036854775808</Size></Contents></ListBucketResult>`},
	{"text-in-structures", "<ListBucketResult>junk &amp; text ]]<Contents>more\r\njunk<Key> spaced key </Key>\ttail</Contents>end</ListBucketResult>"},
	{"carriage-returns", "<ListBucketResult><Contents><Key>a\r\nb\rc\n\rd&#13;&#10;e</Key></Contents></ListBucketResult>"},
	{"trailing", `<ListBucketResult><Name>b</Name></ListBucketResult><trailing>garbage & < ]]>`},
	{"contents-in-comment", `<ListBucketResult><!-- <Contents> --><Name>b</Name></ListBucketResult>`},
	{"brackets", `<ListBucketResult><Contents><Key>a]]b]&gt;c]</Key><ETag>]]&gt;</ETag></Contents></ListBucketResult>`},
}

// lxOddDocs are documents the fast parser refuses; the call with the option must still return
// exactly what the SDK returns for them, success or error.
var lxOddDocs = []struct {
	name string
	doc  string
}{
	{"empty-body", ``},
	{"whitespace-body", " \n"},
	{"truncated", lxPretty[:len(lxPretty)/2]},
	{"truncated-in-tag", `<ListBucketResult><Contents><Key>k</Ke`},
	{"mismatched", `<ListBucketResult><Contents><Key>k</Name></Contents></ListBucketResult>`},
	{"mismatched-case", `<ListBucketResult><Name>k</name></ListBucketResult>`},
	{"unknown-entity", `<ListBucketResult><Name>a&nbsp;b</Name></ListBucketResult>`},
	{"entity-no-semicolon", `<ListBucketResult><Name>a&amp b</Name></ListBucketResult>`},
	{"bad-number", `<ListBucketResult><Contents><Size>12a</Size></Contents></ListBucketResult>`},
	{"empty-number", `<ListBucketResult><Contents><Size/></Contents></ListBucketResult>`},
	{"overflow", `<ListBucketResult><Contents><Size>9223372036854775808</Size></Contents></ListBucketResult>`},
	{"bad-bool", `<ListBucketResult><IsTruncated>yes</IsTruncated></ListBucketResult>`},
	{"bad-time", `<ListBucketResult><Contents><LastModified>2023-02-29T00:00:00Z</LastModified></Contents></ListBucketResult>`},
	{"wrong-root", `<Other><Name>b</Name><Contents><Key>k</Key></Contents></Other>`},
	{"error-root-200", `<?xml version="1.0" encoding="UTF-8"?><Error><Code>InternalError</Code><Message>We encountered an internal error. Please try again.</Message></Error>`},
	{"control-reference", `<ListBucketResult><Contents><Key>a&#x1;b</Key></Contents></ListBucketResult>`},
	{"nul-reference", `<ListBucketResult><Contents><Key>a&#0;b</Key></Contents></ListBucketResult>`},
	{"control-byte", "<ListBucketResult><Contents><Key>a\x01b</Key></Contents></ListBucketResult>"},
	{"nul-byte", "<ListBucketResult><Contents><Key>a\x00b</Key></Contents></ListBucketResult>"},
	{"invalid-utf8", "<ListBucketResult><Contents><Key>a\xffb</Key></Contents></ListBucketResult>"},
	{"fffe", "<ListBucketResult><Contents><Key>a\uFFFEb</Key></Contents></ListBucketResult>"},
	{"reference-beyond-unicode", `<ListBucketResult><Name>&#x110000;</Name></ListBucketResult>`},
	{"cdata-end-in-text", `<ListBucketResult><Name>a]]>b</Name></ListBucketResult>`},
	{"double-dash-comment", `<ListBucketResult><!-- a -- b --><Name>b</Name></ListBucketResult>`},
	{"text-and-cdata", `<ListBucketResult><Name>a<![CDATA[b]]></Name></ListBucketResult>`},
	{"comment-in-value", `<ListBucketResult><Name>a<!-- c -->b</Name></ListBucketResult>`},
	{"child-in-value", `<ListBucketResult><Name><X/></Name></ListBucketResult>`},
	{"doctype", `<!DOCTYPE ListBucketResult><ListBucketResult><Name>b</Name></ListBucketResult>`},
	{"latin1", `<?xml version="1.0" encoding="ISO-8859-1"?><ListBucketResult><Name>b</Name></ListBucketResult>`},
	{"xml-1.1", `<?xml version="1.1"?><ListBucketResult><Name>b</Name></ListBucketResult>`},
	{"spaced-declaration", `<?xml version = "1.0" ?><ListBucketResult><Name>b</Name></ListBucketResult>`},
	{"processing-instruction", `<ListBucketResult><?pi x?><Name>b</Name></ListBucketResult>`},
	{"bom", "\uFEFF<ListBucketResult><Name>b</Name></ListBucketResult>"},
	{"text-before-root", `junk<ListBucketResult><Name>b</Name></ListBucketResult>`},
	{"namespace-prefix", `<s3:ListBucketResult xmlns:s3="http://s3.amazonaws.com/doc/2006-03-01/"><s3:Name>b</s3:Name><s3:Contents><s3:Key>k</s3:Key></s3:Contents></s3:ListBucketResult>`},
	{"kelvin-sign", "<ListBucketResult><Contents><\u212Aey>k</\u212Aey></Contents></ListBucketResult>"},
	{"unquoted-attribute", `<ListBucketResult a=1><Name>b</Name></ListBucketResult>`},
	{"lt-in-attribute", `<ListBucketResult a="<"><Name>b</Name></ListBucketResult>`},
	{"deep-unknown", `<ListBucketResult><U>` + strings.Repeat("<a>", 300) + strings.Repeat("</a>", 300) + `</U><Name>b</Name></ListBucketResult>`},
	{"unclosed-cdata", `<ListBucketResult><Name><![CDATA[abc</Name></ListBucketResult>`},
}

// TestListXMLDifferential checks that every document of lxDocs is decoded by the fast parser,
// and to the same output as the SDK's deserializer produces through a real ListObjectsV2 call.
func TestListXMLDifferential(t *testing.T) {
	srv := newLXServer(t)
	c := newLXClient(srv.URL, nil)
	for _, tc := range lxDocs {
		t.Run(tc.name, func(t *testing.T) {
			srv.set(http.StatusOK, []byte(tc.doc), nil)
			direct, err := parseListObjectsV2([]byte(tc.doc))
			if err != nil {
				t.Fatalf("the fast parser refused the document: %v", err)
			}
			sdk, fast, sdkErr, fastErr := lxCall(t, c)
			if sdkErr != nil {
				t.Fatalf("the SDK refused the document: %v", sdkErr)
			}
			lxCheckSame(t, []byte(tc.doc), sdk, fast, sdkErr, fastErr)
			lxCheckSame(t, []byte(tc.doc), sdk, direct, nil, nil)
		})
	}
}

// TestListXMLMalformed checks that documents the fast parser refuses come out of the call
// with the option exactly as they come out of the SDK.
func TestListXMLMalformed(t *testing.T) {
	srv := newLXServer(t)
	c := newLXClient(srv.URL, nil)
	for _, tc := range lxOddDocs {
		t.Run(tc.name, func(t *testing.T) {
			srv.set(http.StatusOK, []byte(tc.doc), nil)
			if _, err := parseListObjectsV2([]byte(tc.doc)); err == nil {
				t.Errorf("the fast parser accepted the document")
			}
			sdk, fast, sdkErr, fastErr := lxCall(t, c)
			lxCheckSame(t, []byte(tc.doc), sdk, fast, sdkErr, fastErr)
		})
	}
}

// TestListXMLControlReference pins down why a key with a control character fails: the
// SDK's decoder (encoding/xml) refuses "&#x1;", so the fast parser must refuse it too.
func TestListXMLControlReference(t *testing.T) {
	srv := newLXServer(t)
	c := newLXClient(srv.URL, nil)
	srv.set(http.StatusOK, []byte(`<ListBucketResult><Contents><Key>a&#x1;b</Key></Contents></ListBucketResult>`), nil)
	_, _, sdkErr, fastErr := lxCall(t, c)
	var de *smithy.DeserializationError
	if !errors.As(sdkErr, &de) || !strings.Contains(sdkErr.Error(), "illegal character code U+0001") {
		t.Fatalf("SDK error = %v, want encoding/xml's illegal character error", sdkErr)
	}
	if fastErr == nil || fastErr.Error() != sdkErr.Error() {
		t.Fatalf("fast error = %v, want %v", fastErr, sdkErr)
	}
}

// TestFastListAccessDenied checks that an error response comes out as the SDK's API error.
func TestFastListAccessDenied(t *testing.T) {
	srv := newLXServer(t)
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
	sdk, fast, sdkErr, fastErr := lxCall(t, c)
	var apiErr smithy.APIError
	if !errors.As(fastErr, &apiErr) || apiErr.ErrorCode() != "AccessDenied" || apiErr.ErrorMessage() != "Access Denied" {
		t.Fatalf("error with the option = %v, want the AccessDenied API error", fastErr)
	}
	lxCheckSame(t, []byte(body), sdk, fast, sdkErr, fastErr)
	if n := srv.requests.Load(); n != 2 {
		t.Errorf("%d requests for 2 calls", n)
	}
}

// TestFastListOneRequest checks that a call with the option sends exactly one request,
// whether the fast parser decodes the response or hands it to the SDK's deserializer.
func TestFastListOneRequest(t *testing.T) {
	srv := newLXServer(t)
	c := newLXClient(srv.URL, nil)
	for _, r := range []struct {
		name   string
		status int
		body   string
	}{
		{"decoded", http.StatusOK, lxPretty},
		{"malformed", http.StatusOK, `<ListBucketResult><Name>b</Nam`},
		{"sdk-only", http.StatusOK, `<s3:ListBucketResult xmlns:s3="x"><s3:Name>b</s3:Name></s3:ListBucketResult>`},
		{"forbidden", http.StatusForbidden, `<Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>`},
		{"server-error", http.StatusInternalServerError, `<Error><Code>InternalError</Code></Error>`},
		{"error-in-200", http.StatusOK, `<Error><Code>InternalError</Code></Error>`},
	} {
		t.Run(r.name, func(t *testing.T) {
			srv.set(r.status, []byte(r.body), nil)
			before := srv.requests.Load()
			c.ListObjectsV2(context.Background(), lxInput(), fastListDecoding)
			if n := srv.requests.Load() - before; n != 1 {
				t.Errorf("%d requests for one call", n)
			}
		})
	}
}

// TestFastListMetadata checks that the response metadata (request IDs) and the output's
// header binding survive the fast path, and that the option leaves other operations alone.
func TestFastListMetadata(t *testing.T) {
	srv := newLXServer(t)
	c := newLXClient(srv.URL, nil)
	srv.set(http.StatusOK, []byte(lxPretty), http.Header{
		"X-Amz-Request-Id":      {"REQ-1"},
		"X-Amz-Id-2":            {"HOST-1"},
		"X-Amz-Request-Charged": {" requester "},
	})
	sdk, fast, sdkErr, fastErr := lxCall(t, c)
	lxCheckSame(t, []byte(lxPretty), sdk, fast, sdkErr, fastErr)
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
	ctx := context.Background()
	v1, err1 := c.ListObjects(ctx, &s3.ListObjectsInput{Bucket: aws.String("bucket")})
	v1f, err2 := c.ListObjects(ctx, &s3.ListObjectsInput{Bucket: aws.String("bucket")}, fastListDecoding)
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
	if _, err := c.ListObjectsV2(ctx, lxInput(), fastListDecoding, probe); err != nil {
		t.Fatal(err)
	}
	if _, ok := installed.(*fastListDeserializer); !ok {
		t.Errorf("the OperationDeserializer is %T", installed)
	}

	// The paginator takes the option too, and applying it twice is harmless.
	pg := s3.NewListObjectsV2Paginator(c, lxInput())
	page, err := pg.NextPage(ctx, fastListDecoding, fastListDecoding)
	if err != nil || !lxSameOutput(page, sdk) {
		t.Errorf("paginator page with the option: %v\n%s", err, lxDump(page))
	}
}

// TestFastListBodyErrors checks the paths where the body is not decoded by the fast parser
// although the status is 2xx: a body that breaks while being read, and one too large.
func TestFastListBodyErrors(t *testing.T) {
	ctx := context.Background()
	tr := &lxTransport{resp: lxResponse{status: 200, body: []byte(lxPretty[:300]), bodyErr: errors.New("connection reset by peer")}}
	c := newLXClient("http://s3.test", &http.Client{Transport: tr})
	sdk, sdkErr := c.ListObjectsV2(ctx, lxInput())
	fast, fastErr := c.ListObjectsV2(ctx, lxInput(), fastListDecoding)
	if fastErr == nil || !strings.Contains(fastErr.Error(), "connection reset by peer") {
		t.Errorf("error with the option = %v", fastErr)
	}
	lxCheckSame(t, tr.resp.body, sdk, fast, sdkErr, fastErr)

	// A body over the limit is streamed to the SDK's deserializer: with a 100-byte limit,
	// the document is decoded by the SDK and the result is the same.
	tr.resp = lxResponse{status: 200, body: []byte(lxPretty)}
	small := func(o *s3.Options) {
		o.APIOptions = append(o.APIOptions, func(stack *middleware.Stack) error {
			orig, _ := stack.Deserialize.Get("OperationDeserializer")
			_, err := stack.Deserialize.Swap("OperationDeserializer", &fastListDeserializer{sdk: orig, limit: 100})
			return err
		})
	}
	sdk, sdkErr = c.ListObjectsV2(ctx, lxInput())
	fast, fastErr = c.ListObjectsV2(ctx, lxInput(), small)
	lxCheckSame(t, tr.resp.body, sdk, fast, sdkErr, fastErr)
	if sdkErr != nil || len(fast.Contents) != 3 {
		t.Errorf("large body: %v, %d objects", fastErr, len(fast.Contents))
	}
	if n := tr.requests.Load(); n != 4 {
		t.Errorf("%d requests for 4 calls", n)
	}

	for _, n := range []int{0, 1, 99, 100, 101, 5000} {
		body := bytes.Repeat([]byte("x"), n)
		got, tooBig, err := readListBody(lxSlowReader{bytes.NewReader(body)}, -1, nil, 100)
		if err != nil || tooBig != (n > 100) || (!tooBig && !bytes.Equal(got, body)) || len(got) > 101 {
			t.Errorf("readListBody(%d bytes, limit 100) = %d bytes, %v, %v", n, len(got), tooBig, err)
		}
		got, tooBig, err = readListBody(bytes.NewReader(body), int64(n), make([]byte, 0, 7), 100)
		if err != nil || tooBig != (n > 100) || (!tooBig && !bytes.Equal(got, body)) {
			t.Errorf("readListBody(%d bytes, sized, limit 100) = %d bytes, %v, %v", n, len(got), tooBig, err)
		}
	}
}

// lxRoundTrip is an http.RoundTripper made of a function.
type lxRoundTrip func(*http.Request) (*http.Response, error)

// RoundTrip calls f.
func (f lxRoundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestFastListConcurrent decodes pages of different sizes from several goroutines at once,
// so that the race detector sees the shared buffer pool at work.
func TestFastListConcurrent(t *testing.T) {
	pages := make([][]byte, 8)
	for i := range pages {
		pages[i] = lxPage(i*37 + 1)
	}
	tr := lxRoundTrip(func(r *http.Request) (*http.Response, error) {
		var i int
		fmt.Sscanf(r.URL.Query().Get("prefix"), "p%d", &i)
		return (&lxTransport{resp: lxResponse{status: 200, body: pages[i]}}).RoundTrip(r)
	})
	c := newLXClient("http://s3.test", &http.Client{Transport: tr})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for j := range 10 {
				i := (g + j) % len(pages)
				in := &s3.ListObjectsV2Input{Bucket: aws.String("bucket"), Prefix: aws.String(fmt.Sprintf("p%d", i))}
				out, err := c.ListObjectsV2(context.Background(), in, fastListDecoding)
				if err != nil || len(out.Contents) != i*37+1 {
					t.Errorf("page %d: %v", i, err)
					return
				}
				for k, o := range out.Contents {
					if want := fmt.Sprintf("data/2024/01/part-%08d.json.gz", k+1); *o.Key != want {
						t.Errorf("page %d key %d = %q, want %q", i, k, *o.Key, want)
						return
					}
				}
			}
		})
	}
	wg.Wait()
}

// lxSlowReader returns at most a few bytes per Read, like a slow connection.
type lxSlowReader struct{ r io.Reader }

// Read reads up to 3 bytes.
func (h lxSlowReader) Read(p []byte) (int, error) {
	return h.r.Read(p[:min(len(p), 3)])
}

// TestListXMLTime checks the direct timestamp parser against smithy's.
func TestListXMLTime(t *testing.T) {
	for _, s := range []string{
		"2024-01-02T03:04:05Z", "2024-01-02T03:04:05.678Z", "2024-01-02T03:04:05.000Z",
		"2024-01-02T03:04:05.1Z", "2024-01-02T03:04:05.123456789Z", "2024-01-02T03:04:05.1234567891Z",
		"2024-02-29T00:00:00Z", "2023-02-29T00:00:00Z", "1900-02-29T00:00:00Z", "2000-02-29T00:00:00Z",
		"2024-04-31T00:00:00Z", "2024-13-01T00:00:00Z", "2024-00-01T00:00:00Z", "2024-01-00T00:00:00Z",
		"2024-01-01T24:00:00Z", "2024-01-01T23:60:00Z", "2024-01-01T23:59:60Z", "2024-01-01T00:00:00.Z",
		"2024-01-01T00:00:00,5Z", "2024-01-01T00:00:00.5+01:00", "2024-01-01T00:00:00", "0000-01-01T00:00:00Z",
		"9999-12-31T23:59:59.999999999Z", "2024-01-01t00:00:00z", "2024-1-01T00:00:00Z", "+024-01-01T00:00:00Z",
		"2024-01-01T00:00:00.-1Z", "2024-01-01T00:00:00.1a2Z", "", "Z",
	} {
		want, wantErr := smithytime.ParseDateTime(s)
		got, err := parseListTime([]byte(s))
		if (err != nil) != (wantErr != nil) || !reflect.DeepEqual(got, want) && wantErr == nil {
			t.Errorf("parseListTime(%q) = %v, %v; want %v, %v", s, got, err, want, wantErr)
		}
	}
}

// TestListXMLTimeCalendar checks the direct timestamp parser on every day (and invalid
// day) of years around the calendar's edge cases.
func TestListXMLTimeCalendar(t *testing.T) {
	for _, year := range []int{0, 1, 4, 100, 399, 400, 1600, 1899, 1900, 1969, 1970, 1999, 2000, 2023, 2024, 2100, 9999} {
		for month := 0; month <= 13; month++ {
			for day := 0; day <= 32; day++ {
				s := fmt.Sprintf("%04d-%02d-%02dT23:59:58.5Z", year, month, day)
				want, wantErr := smithytime.ParseDateTime(s)
				got, err := parseListTime([]byte(s))
				if (err != nil) != (wantErr != nil) || wantErr == nil && !reflect.DeepEqual(got, want) {
					t.Fatalf("parseListTime(%q) = %v, %v; want %v, %v", s, got, err, want, wantErr)
				}
			}
		}
	}
}

// TestListXMLPlainText checks the word-at-a-time text check against the byte table, on
// text without '<' (which ends the text listPlainText is given).
func TestListXMLPlainText(t *testing.T) {
	alphabet := []byte("aZ09/-_.~ \t\n\r\x00\x1f\x7f\x80\xff&>]\"'")
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200000 {
		b := make([]byte, rng.IntN(20))
		for i := range b {
			if rng.IntN(4) == 0 {
				b[i] = alphabet[rng.IntN(len(alphabet))]
			} else {
				b[i] = 'a' + byte(rng.IntN(26))
			}
		}
		// Printable: tabs and newlines, valid in text, are left to the byte-wise scan.
		want := true
		for _, c := range b {
			want = want && !listTextClass[c] && c != '\t' && c != '\n'
		}
		if got := listPlainText(b); got != want {
			t.Fatalf("listPlainText(%q) = %v", b, got)
		}
	}
}

// FuzzFastListTime checks the direct timestamp parser against smithy's on any string.
func FuzzFastListTime(f *testing.F) {
	f.Add("2024-01-02T03:04:05.678Z")
	f.Add("2024-02-29T23:59:59Z")
	f.Add("0000-03-01T00:00:00.123456789Z")
	f.Add("1600-02-29T00:00:00Z")
	f.Fuzz(func(t *testing.T, s string) {
		want, wantErr := smithytime.ParseDateTime(s)
		got, err := parseListTime([]byte(s))
		if (err != nil) != (wantErr != nil) || wantErr == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("parseListTime(%q) = %v, %v; want %v, %v", s, got, err, want, wantErr)
		}
	})
}

// FuzzListXML checks, on mutated documents, that whatever the fast parser accepts it decodes
// as the SDK's deserializer does, and that the fast deserializer middleware then returns
// what the SDK's returns. Documents the parser refuses go to the SDK's own decoder
// (TestListXMLMalformed covers that path), so they are not decoded twice. The fuzzer runs
// the two deserializers on the response directly, not whole calls (which the table tests
// make), so that its time goes to exploring documents.
func FuzzListXML(f *testing.F) {
	for _, d := range lxDocs {
		f.Add([]byte(d.doc))
	}
	for _, d := range lxOddDocs {
		f.Add([]byte(d.doc))
	}
	f.Add(lxPage(3))
	sdkDeserializer := lxSDKDeserializer(f)
	fastDeserializer := &fastListDeserializer{sdk: sdkDeserializer}
	f.Fuzz(func(t *testing.T, doc []byte) {
		direct, err := parseListObjectsV2(doc)
		if err != nil {
			return
		}
		sdk, sdkErr := lxDeserialize(sdkDeserializer, doc)
		fast, fastErr := lxDeserialize(fastDeserializer, doc)
		lxCheckSame(t, doc, sdk, direct, sdkErr, nil)
		lxCheckSame(t, doc, sdk, fast, sdkErr, fastErr)
	})
}

// lxSDKDeserializer returns the SDK's ListObjectsV2 deserializer middleware, taken from the
// stack of a call that is stopped before it sends anything.
func lxSDKDeserializer(t testing.TB) middleware.DeserializeMiddleware {
	var m middleware.DeserializeMiddleware
	stop := errors.New("stop")
	c := newLXClient("http://s3.test", &http.Client{Transport: &lxTransport{}})
	_, err := c.ListObjectsV2(context.Background(), lxInput(), func(o *s3.Options) {
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

// lxDeserialize runs a deserializer middleware on a 200 response with body doc.
func lxDeserialize(m middleware.DeserializeMiddleware, doc []byte) (*s3.ListObjectsV2Output, error) {
	resp := &smithyhttp.Response{Response: &http.Response{
		StatusCode:    200,
		Header:        http.Header{},
		Body:          io.NopCloser(bytes.NewReader(doc)),
		ContentLength: int64(len(doc)),
	}}
	received := listReceived{out: middleware.DeserializeOutput{RawResponse: resp}}
	out, _, err := m.HandleDeserialize(context.Background(), middleware.DeserializeInput{}, received)
	result, _ := out.Result.(*s3.ListObjectsV2Output)
	return result, err
}

// lxPage returns a page of n keys as S3 sends it.
func lxPage(n int) []byte {
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

// BenchmarkListDecode compares the SDK's decoding of a 1,000-key page with the fast parser's,
// through an httptest server (what a call costs, server included), through an in-memory
// transport (what the client costs), and for the parser alone.
func BenchmarkListDecode(b *testing.B) {
	page := lxPage(1000)
	ctx := context.Background()
	srv := newLXServer(b)
	srv.set(http.StatusOK, page, nil)
	tr := &lxTransport{resp: lxResponse{status: 200, body: page}}
	clients := map[string]*s3.Client{
		"httptest": newLXClient(srv.URL, nil),
		"inmemory": newLXClient("http://s3.test", &http.Client{Transport: tr}),
	}
	for _, via := range []string{"httptest", "inmemory"} {
		for _, mode := range []string{"sdk", "fast"} {
			b.Run(via+"/"+mode, func(b *testing.B) {
				var opts []func(*s3.Options)
				if mode == "fast" {
					opts = append(opts, fastListDecoding)
				}
				c := clients[via]
				b.SetBytes(int64(len(page)))
				b.ReportAllocs()
				for b.Loop() {
					out, err := c.ListObjectsV2(ctx, lxInput(), opts...)
					if err != nil || len(out.Contents) != 1000 {
						b.Fatalf("%v, %d keys", err, len(out.Contents))
					}
				}
			})
		}
	}
	b.Run("parser", func(b *testing.B) {
		b.SetBytes(int64(len(page)))
		b.ReportAllocs()
		for b.Loop() {
			out, err := parseListObjectsV2(page)
			if err != nil || len(out.Contents) != 1000 {
				b.Fatalf("%v", err)
			}
		}
	})
}

// lxGen writes random ListBucketResult documents mixing what the fast parser must decode
// with what it must refuse: every field in any case, text with references, CDATA,
// comments, attributes, unknown elements, odd numbers and timestamps, and now and then a
// broken document.
type lxGen struct {
	rng *rand.Rand
	b   bytes.Buffer
}

// pick returns one of the choices.
func (g *lxGen) pick(choices ...string) string { return choices[g.rng.IntN(len(choices))] }

// chance is true with probability 1/n.
func (g *lxGen) chance(n int) bool { return g.rng.IntN(n) == 0 }

// caseOf spells name in a random case now and then.
func (g *lxGen) caseOf(name string) string {
	if !g.chance(8) {
		return name
	}
	b := []byte(name)
	for i := range b {
		if g.chance(2) {
			b[i] ^= 0x20
		}
	}
	return string(b)
}

// text writes character data, escaped or not.
func (g *lxGen) text() {
	for range g.rng.IntN(6) {
		if g.chance(60) {
			g.b.WriteString(g.pick("&#x1;", "&#0;", "&#xFFFE;", "&#x110000;", "&#;", "&#x;", "&nbsp;", "&amp",
				"&#X41;", "]]>", "\x01", "\xff", "\uFFFE", "<", "&"))
			continue
		}
		g.b.WriteString(g.pick("data/2024/", "part-0001.json", " ", "a b", "ü", "日本", "😀", "%20", "]", "]]",
			"&amp;", "&lt;", "&gt;", "&quot;", "&apos;", "&#34;", "&#x22;", "&#13;", "&#10;", "&#9;", "&#x1F600;",
			"&#xD800;", "&#0065;", "\r", "\r\n", "\n", "\t", "'", "\"", ">", "\u0085", "\u2028", "\U0010FFFD"))
	}
}

// value writes the content of a simple element whose text is one of vals.
func (g *lxGen) value(name string, vals ...string) {
	n := g.caseOf(name)
	switch g.rng.IntN(12) {
	case 0:
		fmt.Fprintf(&g.b, "<%s/>", n)
		return
	case 1:
		fmt.Fprintf(&g.b, "<%s></%s>", n, n)
		return
	case 2:
		fmt.Fprintf(&g.b, "<%s><![CDATA[%s]]></%s>", n, g.pick(append(vals, "a<b>&amp;", "x\r\ny", "]")...), n)
		return
	case 3:
		attr := g.pick(`a="1"`, `b='&lt;'`, `c="]]>"`, `d = "x"`, "e=\"\r\n\"", `f:g="h"`)
		if g.chance(10) {
			attr = g.pick(`e="<"`, `f=g`, `a:b:c="1"`, `h="&x;"`)
		}
		fmt.Fprintf(&g.b, "<%s %s>", n, attr)
	default:
		fmt.Fprintf(&g.b, "<%s>", n)
	}
	if len(vals) > 0 && !g.chance(6) {
		g.b.WriteString(g.pick(vals...))
	} else {
		g.text()
	}
	if g.chance(100) {
		g.b.WriteString(g.pick("<!--c-->", "<![CDATA[x]]>", "<x/>"))
	}
	fmt.Fprintf(&g.b, "</%s%s>", n, g.pick("", "", "", " "))
}

// between writes what may come between elements.
func (g *lxGen) between() {
	switch g.rng.IntN(10) {
	case 0:
		g.b.WriteString(g.pick("\n  ", "\r\n", " ", "\t"))
	case 1:
		g.b.WriteString(g.pick("<!-- comment -->", "<!---->", "<!-- a - b -->", "<!-- <Contents> -->"))
	case 2:
		g.b.WriteString(g.pick("junk", "<![CDATA[<Key>x</Key>]]>", " ]] "))
	case 3:
		if g.chance(20) {
			g.b.WriteString(g.pick("<?pi x?>", "<!DOCTYPE x>", "<!-- a -- b -->", "<!-x->"))
		}
	}
}

// unknown writes an element the output has no field for.
func (g *lxGen) unknown(depth int) {
	n := g.pick("Unknown", "x-y.z", "_a1", "Foo")
	if g.chance(3) {
		fmt.Fprintf(&g.b, "<%s/>", n)
		return
	}
	fmt.Fprintf(&g.b, "<%s>", n)
	for range g.rng.IntN(3) {
		if depth < 3 && g.chance(2) {
			g.unknown(depth + 1)
		} else {
			g.between()
			g.text()
		}
	}
	fmt.Fprintf(&g.b, "</%s>", n)
}

// doc returns a new document.
func (g *lxGen) doc() []byte {
	g.b.Reset()
	g.b.WriteString(g.pick("", "", `<?xml version="1.0" encoding="UTF-8"?>`+"\n", `<?xml version='1.0'?>`,
		`<?xml version="1.0" encoding="utf-8" standalone="no" ?>`, "<!-- c -->\n", " "))
	if g.chance(30) {
		g.b.WriteString(g.pick(`<?xml version="1.1"?>`, `<?xml version = "1.0"?>`, "\uFEFF", "x", `<!DOCTYPE a>`))
	}
	root := g.caseOf("ListBucketResult")
	fmt.Fprintf(&g.b, "<%s%s>", root, g.pick("", ` xmlns="http://s3.amazonaws.com/doc/2006-03-01/"`, ` a='1' b="2"`))
	times := []string{"2024-01-02T03:04:05.678Z", "2024-01-02T03:04:05Z", "2024-01-02T03:04:05.1234567891Z",
		"2024-01-02T03:04:05+01:00", "0000-01-01T00:00:00Z", "2024-02-29T23:59:59.9Z"}
	if g.chance(10) {
		times = []string{"2024-02-30T00:00:00Z", "2024-01-02T03:04:05.Z", "2024-01-02 03:04:05Z"}
	}
	for range g.rng.IntN(12) {
		g.between()
		switch g.rng.IntN(16) {
		case 0, 1, 2, 3, 4, 5:
			o := g.caseOf("Contents")
			fmt.Fprintf(&g.b, "<%s>", o)
			for range g.rng.IntN(9) {
				g.between()
				switch g.rng.IntN(12) {
				case 0, 1:
					g.value("Key")
				case 2:
					g.value("ETag", `&quot;0123&quot;`, `"x"`)
				case 3:
					g.value("Size", "0", "1234", "+5", "-1", "007", "9223372036854775807", g.pick("1", "9223372036854775808", "1e3", " 1"))
				case 4:
					g.value("LastModified", times...)
				case 5:
					g.value(g.pick("StorageClass", "ChecksumAlgorithm", "ChecksumType"), "STANDARD", "CRC32", "FULL_OBJECT", "Other")
				case 6:
					r := g.caseOf("RestoreStatus")
					fmt.Fprintf(&g.b, "<%s>", r)
					g.value("IsRestoreInProgress", "true", "false", "1", "TRUE", g.pick("t", "yes"))
					g.value("RestoreExpiryDate", times...)
					fmt.Fprintf(&g.b, "</%s>", r)
				case 7:
					fmt.Fprintf(&g.b, "<Owner>")
					g.value(g.pick("ID", "DisplayName"))
					fmt.Fprintf(&g.b, "</Owner>")
				default:
					g.unknown(0)
				}
			}
			fmt.Fprintf(&g.b, "</%s>", o)
		case 6:
			fmt.Fprintf(&g.b, "<CommonPrefixes>")
			g.value("Prefix")
			fmt.Fprintf(&g.b, "</CommonPrefixes>")
		case 7:
			g.value(g.pick("Name", "Prefix", "Delimiter", "StartAfter", "ContinuationToken", "NextContinuationToken"))
		case 8:
			g.value(g.pick("KeyCount", "MaxKeys"), "0", "1000", "4294967297", "-1", g.pick("1", "x"))
		case 9:
			g.value("IsTruncated", "true", "false", "T", "0", g.pick("f", "no"))
		case 10:
			g.value("EncodingType", "url")
		default:
			g.unknown(0)
		}
	}
	fmt.Fprintf(&g.b, "</%s>", root)
	doc := g.b.Bytes()
	if g.chance(20) {
		doc = doc[:g.rng.IntN(len(doc)+1)]
	}
	return doc
}

// TestListXMLGenerated checks the fast parser against the SDK on generated documents: it
// must refuse or decode each exactly as the SDK does.
func TestListXMLGenerated(t *testing.T) {
	n := 3000
	if testing.Short() {
		n = 300
	}
	tr := &lxTransport{}
	c := newLXClient("http://s3.test", &http.Client{Transport: tr})
	g := &lxGen{rng: rand.New(rand.NewPCG(7, 11))}
	decoded := 0
	for i := range n {
		doc := g.doc()
		tr.resp = lxResponse{status: 200, body: doc}
		direct, err := parseListObjectsV2(doc)
		sdk, sdkErr := c.ListObjectsV2(context.Background(), lxInput())
		if err == nil {
			decoded++
			lxCheckSame(t, doc, sdk, direct, sdkErr, nil)
		}
		if i%10 == 0 {
			fast, fastErr := c.ListObjectsV2(context.Background(), lxInput(), fastListDecoding)
			lxCheckSame(t, doc, sdk, fast, sdkErr, fastErr)
		}
	}
	// The generator must exercise the decoder, not only its refusals.
	if decoded < n/5 {
		t.Errorf("the fast parser decoded only %d of %d documents", decoded, n)
	}
	t.Logf("decoded %d of %d documents", decoded, n)
}
