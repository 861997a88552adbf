package listing

import (
	"context"
	"fmt"
	"net/url"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// Object is one key of a listing, with what the planner selects and packs by.
type Object struct {
	Key          string
	Size         int64
	ETag         string
	LastModified time.Time
	StorageClass string
	// Restored: the listing's RestoreStatus says a restored copy is readable.
	Restored bool
	// VersionID is the version a listing with Options.Versions selected; empty otherwise.
	VersionID string
}

// Page is one ListObjectsV2 response, narrowed to what the listing reads of it.
type Page struct {
	Objects               []Object
	Folders               []string // the CommonPrefixes
	Truncated             bool
	NextContinuationToken string
	EncodingType          string // "url" when keys and folders are URL-encoded
	// Last, when set, is the last key the page covered, which a version listing's page
	// (see sendVersions) may have left out of Objects.
	Last string
	// requests is how many LIST requests the page took: one, more when a version listing
	// pages on inside it, none when its range lies past the prefix and nothing was sent.
	requests int
	// versions is how many versions and delete markers a version listing's page held.
	versions int
}

// pageFromSDK narrows the SDK's decoding of a response to a Page, as parsePage decodes one.
func pageFromSDK(out *s3.ListObjectsV2Output) *Page {
	p := &Page{Truncated: aws.ToBool(out.IsTruncated), NextContinuationToken: aws.ToString(out.NextContinuationToken), EncodingType: string(out.EncodingType)}
	for _, o := range out.Contents {
		obj := Object{Key: aws.ToString(o.Key), Size: aws.ToInt64(o.Size), ETag: aws.ToString(o.ETag), LastModified: aws.ToTime(o.LastModified), StorageClass: string(o.StorageClass)}
		rs := o.RestoreStatus
		obj.Restored = rs != nil && !aws.ToBool(rs.IsRestoreInProgress) && rs.RestoreExpiryDate != nil
		p.Objects = append(p.Objects, obj)
	}
	for _, cp := range out.CommonPrefixes {
		p.Folders = append(p.Folders, aws.ToString(cp.Prefix))
	}
	return p
}

// unescape decodes keys and folders only when the response says they are URL-encoded: some
// S3-compatible servers ignore the request's EncodingType and return raw keys, which a blind
// decode would corrupt where they contain % or +.
func (p *Page) unescape(bucket string) error {
	if p.EncodingType != "url" {
		return nil
	}
	decode := func(s *string) error {
		d, err := url.QueryUnescape(*s)
		if err != nil {
			return fmt.Errorf("s3io: the listing of s3://%s returned a key that is not URL-encoded as requested (%q): %w", bucket, *s, err)
		}
		*s = d
		return nil
	}
	for i := range p.Objects {
		if err := decode(&p.Objects[i].Key); err != nil {
			return err
		}
	}
	for i := range p.Folders {
		if err := decode(&p.Folders[i]); err != nil {
			return err
		}
	}
	return nil
}

// pageKey is the response metadata key under which the fast deserializer leaves its Page.
type pageKey struct{}

// pageOf returns the page of a call made with pageDecoding: the fast deserializer's, or the
// SDK's output narrowed when the SDK decoded it.
func pageOf(out *s3.ListObjectsV2Output) *Page {
	if p, ok := out.ResultMetadata.Get(pageKey{}).(*Page); ok {
		return p
	}
	return pageFromSDK(out)
}

// warnedSDKDecoding logs once per process that pages go to the SDK's decoder.
var warnedSDKDecoding sync.Once

// fetchPage sends one ListObjectsV2 request and returns its page, not yet unescaped.
func fetchPage(ctx context.Context, client *s3.Client, in *s3.ListObjectsV2Input, warnf func(string, ...any)) (*Page, error) {
	var missing bool
	out, err := client.ListObjectsV2(ctx, in, pageDecoding(&missing))
	if err != nil {
		return nil, err
	}
	if missing && warnf != nil {
		warnedSDKDecoding.Do(func() {
			warnf("s3io: the ListObjectsV2 middleware stack has no OperationDeserializer (an SDK change?); listing pages are decoded by the SDK, which costs more CPU per page")
		})
	}
	return pageOf(out), nil
}
