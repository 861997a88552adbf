package faultproxy

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// storedListing lists three stored versions, as versitygw would.
const storedListing = `<?xml version="1.0" encoding="UTF-8"?>
<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>b</Name><Prefix>in/</Prefix><KeyCount>3</KeyCount><MaxKeys>1000</MaxKeys><IsTruncated>false</IsTruncated>` +
	`<Contents><Key>in/a.v1</Key><LastModified>2026-12-01T00:00:01.000Z</LastModified><ETag>"e-a1"</ETag><Size>1</Size><StorageClass>STANDARD</StorageClass></Contents>` +
	`<Contents><Key>in/a.v2</Key><LastModified>2026-12-01T00:00:02.000Z</LastModified><ETag>"e-a2"</ETag><Size>22</Size><StorageClass>STANDARD</StorageClass></Contents>` +
	`<Contents><Key>in/b.v1</Key><LastModified>2026-12-01T00:00:03.000Z</LastModified><ETag>"e-b1"</ETag><Size>333</Size><StorageClass>STANDARD</StorageClass></Contents>` +
	`</ListBucketResult>`

// Each listing shows the next state under the listed keys, and a pinned GET reaches the
// stored version with the ETag it names, signed again.
func TestStates(t *testing.T) {
	gets := make(chan string, 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("list-type") == "2" {
			io.WriteString(w, storedListing)
			return
		}
		gets <- r.URL.Path + " " + r.Header.Get("If-Match") + " " + fmt.Sprint(r.Header.Get("Authorization") != "")
		io.WriteString(w, "data")
	}))
	t.Cleanup(srv.Close)
	p := New(t, srv.URL)
	p.Credentials = aws.Credentials{AccessKeyID: "k", SecretAccessKey: "s"}
	var s States
	etag := map[string]string{"in/a.v1": `"e-a1"`, "in/a.v2": `"e-a2"`, "in/b.v1": `"e-b1"`}
	s.Add(map[string]string{"in/a": "in/a.v1", "in/b": "in/b.v1"}, func(k string) string { return etag[k] })
	s.Add(map[string]string{"in/a": "in/a.v2"}, func(k string) string { return etag[k] })
	p.RewriteList, p.StoredKey = s.Rewrite, s.StoredKey
	c := client(p.URL)
	ctx := context.Background()

	want := [][]string{{`in/a "e-a1" 1`, `in/b "e-b1" 333`}, {`in/a "e-a2" 22`}, {`in/a "e-a2" 22`}}
	for i, w := range want {
		out, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("b"), Prefix: aws.String("in/")})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, o := range out.Contents {
			got = append(got, fmt.Sprintf("%s %s %d", aws.ToString(o.Key), aws.ToString(o.ETag), aws.ToInt64(o.Size)))
		}
		if !slices.Equal(got, w) || aws.ToInt32(out.KeyCount) != int32(len(w)) {
			t.Errorf("listing %d = %q (KeyCount %d), want %q", i+1, got, aws.ToInt32(out.KeyCount), w)
		}
	}
	if s.Lists() != 3 {
		t.Errorf("Lists() = %d, want 3", s.Lists())
	}
	for _, tc := range []struct{ key, ifMatch, want string }{
		{"in/a", `"e-a1"`, `/b/in/a.v1 "e-a1" true`},
		{"in/a", `"e-a2"`, `/b/in/a.v2 "e-a2" true`},
		{"in/b", `"e-b1"`, `/b/in/b.v1 "e-b1" true`},
		{"in/b", `"other"`, `/b/in/b "other" true`}, // no such version: forwarded as sent
	} {
		if _, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("b"), Key: aws.String(tc.key), IfMatch: aws.String(tc.ifMatch)}); err != nil {
			t.Fatal(err)
		}
		if got := <-gets; got != tc.want {
			t.Errorf("GET %s If-Match %s reached %q, want %q", tc.key, tc.ifMatch, got, tc.want)
		}
	}
}
