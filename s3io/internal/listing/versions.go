package listing

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// Versions, set in Options, makes a listing list object versions (ListObjectVersions) and
// hand on, of each key, the one version it selects, with its version ID: a key whose
// selected version is a delete marker, or that has none, is left out.
type Versions struct {
	// AsOf, when set, selects the version that was current at that instant: the newest
	// whose LastModified is not after it. Zero selects each key's latest version.
	AsOf time.Time
}

// A versions page is the ListObjectsV2 page the listing asked for, answered by
// ListObjectVersions: KeyMarker takes StartAfter's place (keys after it), so the key ranges
// the listing cuts, and every cut, mean the same. Two things differ. A page can end inside a
// key's versions; the range's state is one key, so a page hands on only the keys whose
// versions it holds whole (see completeKeys), and the next page starts after the last of
// them. And a key the page holds may select nothing (deleted at the time asked for), so the
// page says how far it listed in Page.Last, not only through its objects.

// sendVersions answers the ListObjectsV2 request in with ListObjectVersions. A probe (a
// delimiter request) hands on every key it saw, whatever its versions are, for the probe's
// questions are about where keys lie, not which are read.
func (l *Listing) sendVersions(ctx context.Context, in *s3.ListObjectsV2Input, probe bool) (*Page, error) {
	vin := &s3.ListObjectVersionsInput{
		Bucket:       in.Bucket,
		Prefix:       in.Prefix,
		Delimiter:    in.Delimiter,
		MaxKeys:      in.MaxKeys,
		KeyMarker:    in.StartAfter,
		EncodingType: types.EncodingTypeUrl,
	}
	// MinIO refuses (501 NotImplemented) a KeyMarker outside the Prefix, which S3 takes: a
	// marker before every key under the prefix is left out, one after all of them lists
	// nothing.
	if prefix, marker := aws.ToString(vin.Prefix), aws.ToString(vin.KeyMarker); marker != "" && !strings.HasPrefix(marker, prefix) {
		if marker > prefix {
			return &Page{}, nil
		}
		vin.KeyMarker = nil
	}
	var entries []versionEntry
	p := &Page{}
	for {
		out, order, err := l.listVersions(ctx, vin)
		p.requests++
		if err != nil {
			return nil, &Error{Bucket: l.opts.Bucket, Prefix: l.opts.Prefix, Err: err}
		}
		batch, folders, err := decodeVersions(l.opts.Bucket, out, order)
		if err != nil {
			return nil, err
		}
		resumed := vin.VersionIdMarker != nil
		raw := batch
		batch = afterMarkers(batch, aws.ToString(in.StartAfter), aws.ToString(vin.KeyMarker), aws.ToString(vin.VersionIdMarker))
		entries = append(entries, batch...)
		p.Folders = append(p.Folders, folders...)
		p.Truncated = aws.ToBool(out.IsTruncated)
		if probe || !p.Truncated {
			break
		}
		if len(batch) == 0 {
			// All of it was at or before the markers: a server whose KeyMarker includes its
			// key answered with that key's versions only. Page on past them.
			if len(raw) == 0 || resumed && raw[len(raw)-1].obj.VersionID == aws.ToString(vin.VersionIdMarker) {
				return nil, fmt.Errorf("s3io: the version listing of s3://%s does not move past %q (version %q): the server answers the same versions again", l.opts.Bucket, aws.ToString(vin.KeyMarker), aws.ToString(vin.VersionIdMarker))
			}
			last := raw[len(raw)-1]
			vin.KeyMarker, vin.VersionIdMarker = aws.String(last.key), aws.String(last.obj.VersionID)
			continue
		}
		// The page may end inside the versions of its last entry's key: it hands on the
		// keys before that one, and the next page lists that one again, whole. (Keys are
		// compared with the page's entries, not with NextKeyMarker, which MinIO sends with
		// a suffix of its own.)
		last := batch[len(batch)-1]
		if kept := completeKeys(entries, last.key); len(kept) > 0 {
			entries = kept
			break
		}
		// Every entry so far is one key's: a key with more versions than a page. Page on
		// through its versions, so that the range still moves one key at a time.
		vin.KeyMarker, vin.VersionIdMarker = aws.String(last.key), aws.String(last.obj.VersionID)
	}
	// A key's entries are together and newest first in S3's order; versitygw lists all
	// delete markers of a page before its versions. Grouping by key, keeping each key's
	// order, reads both.
	slices.SortStableFunc(entries, func(a, b versionEntry) int { return strings.Compare(a.key, b.key) })
	if len(entries) > 0 {
		p.Last = entries[len(entries)-1].key
	}
	if probe {
		p.Objects = distinctKeys(entries)
	} else {
		p.Objects, p.versions = l.select_(entries), len(entries)
	}
	return p, nil
}

// afterMarkers drops the entries a server returned at or before where the page starts (keys
// up to after) or resumes (the version vid of key). S3 starts after its markers; versitygw
// starts at KeyMarker's key (its versions again) when no VersionIdMarker is given, and at
// the marker version when it is its key's latest.
func afterMarkers(entries []versionEntry, after, key, vid string) []versionEntry {
	if after != "" {
		entries = keysBelow(entries, after, false)
	}
	if vid == "" {
		return entries
	}
	if j := slices.IndexFunc(entries, func(e versionEntry) bool { return e.key == key && e.obj.VersionID == vid }); j >= 0 {
		return entries[j+1:]
	}
	return entries
}

// completeKeys drops the entries of key last, the key a truncated page ended inside, and of
// any key after it (versitygw lists a page's delete markers, of keys up to its end, first).
func completeKeys(entries []versionEntry, last string) []versionEntry {
	return keysBelow(entries, last, true)
}

// keysBelow returns the entries whose key is below bound (below, true) or above it (false),
// in a new slice when any is dropped: the caller may still need entries as they were.
func keysBelow(entries []versionEntry, bound string, below bool) []versionEntry {
	keep := func(e versionEntry) bool { return below && e.key < bound || !below && e.key > bound }
	if !slices.ContainsFunc(entries, func(e versionEntry) bool { return !keep(e) }) {
		return entries
	}
	var kept []versionEntry
	for _, e := range entries {
		if keep(e) {
			kept = append(kept, e)
		}
	}
	return kept
}

// select_ returns, in key order, each key's selected version; entries are grouped by key,
// each key's in listing order (newest first).
func (l *Listing) select_(entries []versionEntry) []Object {
	var objs []Object
	asOf := l.opts.Versions.AsOf
	for i := 0; i < len(entries); {
		j := i
		for j < len(entries) && entries[j].key == entries[i].key {
			j++
		}
		var pick *versionEntry
		for k := i; k < j; k++ {
			e := &entries[k]
			if asOf.IsZero() {
				if e.latest {
					pick = e
					break
				}
				continue
			}
			// The newest at or before asOf; of equal times (S3 lists whole seconds), the
			// first listed, which is the newer.
			if !e.obj.LastModified.After(asOf) && (pick == nil || e.obj.LastModified.After(pick.obj.LastModified)) {
				pick = e
			}
		}
		if pick != nil && !pick.deleteMarker {
			objs = append(objs, pick.obj)
		}
		i = j
	}
	return objs
}

// distinctKeys returns one Object per key of entries.
func distinctKeys(entries []versionEntry) []Object {
	var objs []Object
	for i, e := range entries {
		if i == 0 || e.key != entries[i-1].key {
			objs = append(objs, Object{Key: e.key})
		}
	}
	return objs
}

// versionEntry is one version or delete marker of a key, in listing order.
type versionEntry struct {
	key          string
	latest       bool
	deleteMarker bool
	obj          Object
}

// decodeVersions merges a response's versions and delete markers back into the order the
// document lists them (the SDK decodes them into two slices; order says how they
// interleave), and unescapes keys and folders.
func decodeVersions(bucket string, out *s3.ListObjectVersionsOutput, order []bool) ([]versionEntry, []string, error) {
	if len(order) != len(out.Versions)+len(out.DeleteMarkers) {
		return nil, nil, fmt.Errorf("s3io: the version listing of s3://%s holds %d versions and %d delete markers, but %d of their elements were found in its document", bucket, len(out.Versions), len(out.DeleteMarkers), len(order))
	}
	entries := make([]versionEntry, 0, len(order))
	var v, d int
	for _, isMarker := range order {
		var e versionEntry
		if isMarker {
			m := out.DeleteMarkers[d]
			d++
			e = versionEntry{key: aws.ToString(m.Key), latest: aws.ToBool(m.IsLatest), deleteMarker: true,
				obj: Object{LastModified: aws.ToTime(m.LastModified), VersionID: aws.ToString(m.VersionId)}}
		} else {
			o := out.Versions[v]
			v++
			e = versionEntry{key: aws.ToString(o.Key), latest: aws.ToBool(o.IsLatest),
				obj: Object{Size: aws.ToInt64(o.Size), ETag: aws.ToString(o.ETag), LastModified: aws.ToTime(o.LastModified),
					StorageClass: string(o.StorageClass), VersionID: aws.ToString(o.VersionId)}}
			if rs := o.RestoreStatus; rs != nil {
				e.obj.Restored = !aws.ToBool(rs.IsRestoreInProgress) && rs.RestoreExpiryDate != nil
			}
		}
		k, err := unescapeIf(out.EncodingType, e.key)
		if err != nil {
			return nil, nil, fmt.Errorf("s3io: the version listing of s3://%s returned a key that is not URL-encoded as requested (%q): %w", bucket, e.key, err)
		}
		e.key, e.obj.Key = k, k
		if e.obj.VersionID == "" {
			return nil, nil, fmt.Errorf("s3io: the version listing of s3://%s gives no version ID for %q", bucket, k)
		}
		entries = append(entries, e)
	}
	var folders []string
	for _, cp := range out.CommonPrefixes {
		f, err := unescapeIf(out.EncodingType, aws.ToString(cp.Prefix))
		if err != nil {
			return nil, nil, fmt.Errorf("s3io: the version listing of s3://%s returned a folder that is not URL-encoded as requested (%q): %w", bucket, aws.ToString(cp.Prefix), err)
		}
		folders = append(folders, f)
	}
	return entries, folders, nil
}

// unescapeIf decodes s when the response says its keys are URL-encoded (see Page.unescape).
func unescapeIf(enc types.EncodingType, s string) (string, error) {
	if enc != types.EncodingTypeUrl {
		return s, nil
	}
	return url.QueryUnescape(s)
}

// listVersions sends one ListObjectVersions request and returns, with the SDK's decoding,
// the order of its Version (false) and DeleteMarker (true) elements.
func (l *Listing) listVersions(ctx context.Context, in *s3.ListObjectVersionsInput) (*s3.ListObjectVersionsOutput, []bool, error) {
	var body bytes.Buffer
	out, err := l.opts.Client.ListObjectVersions(ctx, in, func(o *s3.Options) {
		o.APIOptions = append(o.APIOptions, func(stack *middleware.Stack) error {
			return stack.Deserialize.Add(&bodyCopy{to: &body}, middleware.After)
		})
	})
	if err != nil {
		return nil, nil, err
	}
	return out, elementOrder(body.Bytes()), nil
}

// elementOrder finds the <Version> and <DeleteMarker> elements of a ListVersionsResult in
// document order. A key cannot hold a raw '<' in XML, so the tags are found by their text.
func elementOrder(doc []byte) []bool {
	var order []bool
	version, marker := []byte("<Version>"), []byte("<DeleteMarker>")
	for {
		i := bytes.IndexByte(doc, '<')
		if i < 0 {
			return order
		}
		doc = doc[i:]
		switch {
		case bytes.HasPrefix(doc, version):
			order = append(order, false)
		case bytes.HasPrefix(doc, marker):
			order = append(order, true)
		}
		doc = doc[1:]
	}
}

// bodyCopy keeps a copy of the body of the response the SDK decodes: each attempt's, the
// last one's being the one decoded.
type bodyCopy struct{ to *bytes.Buffer }

func (*bodyCopy) ID() string { return "s3io.VersionsBodyCopy" }

func (m *bodyCopy) HandleDeserialize(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler,
) (middleware.DeserializeOutput, middleware.Metadata, error) {
	out, md, err := next.HandleDeserialize(ctx, in)
	if resp, ok := out.RawResponse.(*smithyhttp.Response); ok && err == nil && resp.Body != nil {
		m.to.Reset()
		resp.Body = teeBody{Reader: io.TeeReader(resp.Body, m.to), Closer: resp.Body}
	}
	return out, md, err
}

type teeBody struct {
	io.Reader
	io.Closer
}
