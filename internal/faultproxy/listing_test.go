package faultproxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
)

// versityListing is a ListObjectsV2 body as versitygw v1.8.0 writes it (captured), with a
// key holding U+0001 (listed as U+FFFD), one with a carriage return and one with XML
// specials.
const versityListing = `<?xml version="1.0" encoding="UTF-8"?>
<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>inv</Name><Prefix>ctl/</Prefix><KeyCount>3</KeyCount><MaxKeys>1000</MaxKeys><IsTruncated>false</IsTruncated>` +
	`<Contents><LastModified>2026-11-30T19:34:03Z</LastModified><ChecksumAlgorithm>CRC64NVME</ChecksumAlgorithm><ChecksumType>FULL_OBJECT</ChecksumType><ETag>&#34;1eacc3a7a8cb3ed3fde4219f8b6098d6&#34;</ETag><Key>ctl/a` + "\uFFFD" + `b.txt</Key><Size>21</Size><StorageClass>STANDARD</StorageClass></Contents>` +
	`<Contents><LastModified>2026-11-30T19:34:03Z</LastModified><ChecksumAlgorithm>CRC64NVME</ChecksumAlgorithm><ChecksumType>FULL_OBJECT</ChecksumType><ETag>&#34;c7cd5aba5bafece1e6494fcbfad43c4e&#34;</ETag><Key>ctl/amp&amp;lt&lt;gt&gt; +%41.txt</Key><Size>25</Size><StorageClass>STANDARD</StorageClass></Contents>` +
	`<Contents><LastModified>2026-11-30T19:34:03Z</LastModified><ChecksumAlgorithm>CRC64NVME</ChecksumAlgorithm><ChecksumType>FULL_OBJECT</ChecksumType><ETag>&#34;b7a20c7f750f9e577d33427d5067a586&#34;</ETag><Key>ctl/cr&#xD;key</Key><Size>18</Size><StorageClass>STANDARD</StorageClass></Contents>` +
	`<CommonPrefixes><Prefix>ctl/d` + "\uFFFD" + `r/</Prefix></CommonPrefixes><EncodingType></EncodingType></ListBucketResult>`

// awsListing is laid out as AWS's documentation shows one: indented, with a self-closing
// element, a comment and single-quoted attributes.
const awsListing = `<?xml version='1.0' encoding='UTF-8'?>
<!-- a comment -->
<ListBucketResult xmlns='http://s3.amazonaws.com/doc/2006-03-01/' a="x>y">
  <Name>bucket</Name>
  <Prefix/>
  <KeyCount>1</KeyCount>
  <Contents>
    <Key>my image.jpg</Key>
    <ETag>"fba9dede5f27731c9771645a39863328"</ETag>
    <Size>434234</Size>
  </Contents>
</ListBucketResult>
`

func TestParseXMLRoundTrip(t *testing.T) {
	for _, doc := range []string{versityListing, awsListing, "<a><b/><c>x</c ></a>"} {
		n, err := parseXML([]byte(doc))
		if err != nil {
			t.Fatalf("parse: %v\n%s", err, doc)
		}
		if got := string(n.bytes()); got != doc && doc != "<a><b/><c>x</c ></a>" {
			t.Errorf("round trip changed the document:\n got %q\nwant %q", got, doc)
		}
	}
	for _, bad := range []string{"<a><b></a>", "<a>", "</a>", "<a><![CDATA[x]]></a>", "<!DOCTYPE a><a/>", "<a x='>"} {
		if _, err := parseXML([]byte(bad)); err == nil {
			t.Errorf("parse %q: no error", bad)
		}
	}
}

func TestSetStorageClassAndRestoreStatus(t *testing.T) {
	req := ListRequest{OptionalAttributes: "RestoreStatus"}
	rw := Chain(
		SetStorageClass(map[string]string{"ctl/cr\rkey": "GLACIER", "my image.jpg": "DEEP_ARCHIVE"}),
		SetRestoreStatus(map[string]RestoreStatus{
			"ctl/cr\rkey":  {ExpiryDate: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)},
			"my image.jpg": {InProgress: true},
		}),
	)
	got, err := rw(req, []byte(versityListing))
	if err != nil {
		t.Fatal(err)
	}
	old := `<Key>ctl/cr&#xD;key</Key><Size>18</Size><StorageClass>STANDARD</StorageClass></Contents>`
	want := strings.Replace(versityListing, old, `<Key>ctl/cr&#xD;key</Key><Size>18</Size><StorageClass>GLACIER</StorageClass>`+
		`<RestoreStatus><IsRestoreInProgress>false</IsRestoreInProgress><RestoreExpiryDate>2030-01-01T00:00:00.000Z</RestoreExpiryDate></RestoreStatus></Contents>`, 1)
	if string(got) != want {
		t.Errorf("rewritten:\n got %s\nwant %s", got, want)
	}
	got, err = rw(req, []byte(awsListing))
	if err != nil {
		t.Fatal(err)
	}
	want = strings.Replace(awsListing, "<Size>434234</Size>\n  </Contents>",
		"<Size>434234</Size>\n  <StorageClass>DEEP_ARCHIVE</StorageClass><RestoreStatus><IsRestoreInProgress>true</IsRestoreInProgress></RestoreStatus></Contents>", 1)
	if string(got) != want {
		t.Errorf("rewritten:\n got %s\nwant %s", got, want)
	}
	// S3 lists RestoreStatus only when asked.
	got, err = SetRestoreStatus(map[string]RestoreStatus{"my image.jpg": {}})(ListRequest{}, []byte(awsListing))
	if err != nil || string(got) != awsListing {
		t.Errorf("RestoreStatus added although not asked for (%v):\n%s", err, got)
	}
}

func TestURLEncodeKeys(t *testing.T) {
	for in, want := range map[string]string{
		"logs/2024/a.txt":   "logs/2024/a.txt",
		"pct%41+plus.txt":   "pct%2541%2Bplus.txt",
		"sp ace":            "sp+ace",
		"a\x01b\tc\n":       "a%01b%09c%0A",
		"é~*-_.":            "%C3%A9%7E*-_.",
		"&<>\"'=?#[]\\\x7f": "%26%3C%3E%22%27%3D%3F%23%5B%5D%5C%7F",
	} {
		if got := S3URLEncode(in); got != want {
			t.Errorf("S3URLEncode(%q) = %q, want %q", in, got, want)
		}
		if back, err := url.QueryUnescape(S3URLEncode(in)); err != nil || back != in {
			t.Errorf("QueryUnescape(S3URLEncode(%q)) = %q, %v", in, back, err)
		}
	}
	if got := XMLListed("ctl/a\x01b\tc\r\n\x7fé"); got != "ctl/a\uFFFDb\tc\r\n\x7fé" {
		t.Errorf("XMLListed = %q", got)
	}

	stored := StoredKeys("ctl/a\x01b.txt", "ctl/d\x1fr/x")
	rw := URLEncodeKeys(stored)
	req := ListRequest{EncodingType: "url"}
	got, err := rw(req, []byte(versityListing))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"<Prefix>ctl/</Prefix>",
		"<Key>ctl/a%01b.txt</Key>",
		"<Key>ctl/amp%26lt%3Cgt%3E+%2B%2541.txt</Key>",
		"<Key>ctl/cr%0Dkey</Key>",
		"<CommonPrefixes><Prefix>ctl/d%1Fr/</Prefix></CommonPrefixes>",
		"<EncodingType>url</EncodingType></ListBucketResult>",
	} {
		if !strings.Contains(string(got), want) {
			t.Errorf("encoded listing lacks %s:\n%s", want, got)
		}
	}
	// Rewrites after the encoding still find objects by their stored keys.
	got2, err := Chain(rw, SetStorageClass(map[string]string{"ctl/a\x01b.txt": "GLACIER"}))(req, []byte(versityListing))
	if err != nil || !strings.Contains(string(got2), "<Key>ctl/a%01b.txt</Key><Size>21</Size><StorageClass>GLACIER</StorageClass>") {
		t.Errorf("storage class after encoding (%v):\n%s", err, got2)
	}
	// Not asked for, or already encoded by the server: untouched.
	for _, tc := range []struct {
		req  ListRequest
		body string
	}{{ListRequest{}, versityListing}, {req, string(got)}} {
		out, err := rw(tc.req, []byte(tc.body))
		if err != nil || string(out) != tc.body {
			t.Errorf("changed a listing it should pass (%v):\n%s", err, out)
		}
	}
	if _, err := rw(req, []byte("<Error><Code>x</Code></Error>")); err == nil {
		t.Error("rewrote a document that is not a listing")
	}
}

// fakeS3 answers ListObjectsV2 with body and object GETs with "data", counting LISTs in
// flight.
func fakeS3(t *testing.T, body string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("list-type") == "2" {
			w.Header().Set("Content-Type", "application/xml")
			w.Header().Set("Content-Length", fmt.Sprint(len(body)))
			io.WriteString(w, body)
			return
		}
		io.WriteString(w, "data")
	}))
	t.Cleanup(srv.Close)
	return srv
}

func client(endpoint string) *s3.Client {
	return s3.New(s3.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(endpoint), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider("k", "s", ""),
	})
}

// The AWS SDK reads the proxy's rewritten listing, and the proxy logs what it asked for.
func TestProxyListing(t *testing.T) {
	p := New(t, fakeS3(t, versityListing).URL)
	p.ListDelay = 50 * time.Millisecond
	p.RewriteList = Chain(
		URLEncodeKeys(StoredKeys("ctl/a\x01b.txt")),
		SetStorageClass(map[string]string{"ctl/a\x01b.txt": "GLACIER"}),
		SetRestoreStatus(map[string]RestoreStatus{"ctl/a\x01b.txt": {ExpiryDate: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}}),
	)
	c := client(p.URL)
	ctx := context.Background()
	var wg sync.WaitGroup
	var failed atomic.Int32
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{
				Bucket: aws.String("inv"), Prefix: aws.String("ctl/"), StartAfter: aws.String(fmt.Sprintf("ctl/%d", i)),
				Delimiter: aws.String("/"), MaxKeys: aws.Int32(7), EncodingType: types.EncodingTypeUrl,
				OptionalObjectAttributes: []types.OptionalObjectAttributes{types.OptionalObjectAttributesRestoreStatus},
			})
			if err != nil {
				t.Error(err)
				failed.Add(1)
				return
			}
			if out.EncodingType != types.EncodingTypeUrl || len(out.Contents) != 3 {
				t.Errorf("encoding %q, %d objects", out.EncodingType, len(out.Contents))
				failed.Add(1)
				return
			}
			o := out.Contents[0]
			key, _ := url.QueryUnescape(aws.ToString(o.Key))
			if key != "ctl/a\x01b.txt" || o.StorageClass != types.ObjectStorageClassGlacier || o.RestoreStatus == nil ||
				aws.ToBool(o.RestoreStatus.IsRestoreInProgress) || !aws.ToTime(o.RestoreStatus.RestoreExpiryDate).Equal(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)) {
				t.Errorf("first object %q %+v, restore %+v", key, o, o.RestoreStatus)
			}
			if key, _ := url.QueryUnescape(aws.ToString(out.Contents[1].Key)); key != "ctl/amp&lt<gt> +%41.txt" {
				t.Errorf("second key %q", key)
			}
		}()
	}
	wg.Wait()
	if failed.Load() > 0 {
		return
	}
	lists := p.Lists()
	if len(lists) != 4 || p.MaxListsInFlight() < 2 {
		t.Fatalf("%d LISTs logged, %d in flight at most: want 4, several at once with a 50 ms delay", len(lists), p.MaxListsInFlight())
	}
	seen := map[string]bool{}
	for _, l := range lists {
		seen[l.StartAfter] = true
		if l.Bucket != "inv" || l.Prefix != "ctl/" || l.Delimiter != "/" || l.MaxKeys != "7" || l.EncodingType != "url" ||
			l.OptionalAttributes != "RestoreStatus" || l.Status != 200 || !l.Rewritten || l.End.Before(l.Start.Add(50*time.Millisecond)) {
			t.Errorf("logged %+v", l)
		}
	}
	if len(seen) != 4 {
		t.Errorf("start-after values %v", seen)
	}
	p.ResetLists()
	if len(p.Lists()) != 0 || p.MaxListsInFlight() != 0 {
		t.Errorf("ResetLists left %d LISTs, max %d", len(p.Lists()), p.MaxListsInFlight())
	}

	// A rewrite that fails answers 400 with its reason, which the SDK does not retry.
	p.ListDelay = 0
	p.RewriteList = func(ListRequest, []byte) ([]byte, error) { return nil, errors.New("no such edit") }
	_, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("inv")})
	var api smithy.APIError
	if !errors.As(err, &api) || api.ErrorCode() != "FaultProxyRewriteFailed" || !strings.Contains(api.ErrorMessage(), "no such edit") {
		t.Errorf("failed rewrite: %v", err)
	}
	if l := p.Lists(); len(l) != 1 || l[0].Status != 400 {
		t.Errorf("logged %+v", l)
	}
}

// InvalidObjectState reaches the SDK as S3's error for an archived object.
func TestInvalidObjectState(t *testing.T) {
	p := New(t, fakeS3(t, versityListing).URL)
	p.Decide = func(key string, n int) Fault {
		if key == "cold/x" || key == "cold/pct%41+%zz" {
			return InvalidObjectState
		}
		return Fault{}
	}
	c := client(p.URL)
	_, err := c.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String("b"), Key: aws.String("cold/x")})
	var ios *types.InvalidObjectState
	if !errors.As(err, &ios) || ios.ErrorCode() != "InvalidObjectState" || !strings.Contains(err.Error(), "403") {
		t.Errorf("GET of an archived object: %v", err)
	}
	out, err := c.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String("b"), Key: aws.String("warm/x")})
	if err != nil {
		t.Fatal(err)
	}
	out.Body.Close()
	// A key is decoded once: "%41" stays itself.
	_, err = c.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String("b"), Key: aws.String("cold/pct%41+%zz")})
	if !errors.As(err, &ios) {
		t.Errorf("GET of cold/pct%%41+%%zz: %v", err)
	}
	for _, k := range []string{"cold/x", "cold/pct%41+%zz"} {
		if g := p.Gets(k); len(g) != 1 || g[0].Status != 403 || !g[0].Injected {
			t.Errorf("GETs of %s logged %+v", k, g)
		}
	}
	if len(p.Lists()) != 0 {
		t.Errorf("object GETs logged as LISTs: %+v", p.Lists())
	}
}
