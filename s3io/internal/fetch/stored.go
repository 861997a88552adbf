package fetch

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/spate-io/beam-s3/s3io/internal/checksum"
)

// storedSum is the lookup of one object's stored checksum, made while its first parts
// are fetched: a ranged GET carries no full-object checksum (S3 sends x-amz-checksum-*
// only for a whole object, or a partNumber GET's part), so it is asked for once per
// object that is read whole.
type storedSum struct {
	done chan struct{}
	// After done: st is the checksum (nil when none is stored); err a failed lookup.
	st       *checksum.Stored
	ends     []int64 // st's part ends, where pieces are cut
	usable   bool    // st can be verified (Stored.Check): a CRC or a SHA
	err      error
	requests int
}

// lookupStored starts the lookup of o's stored checksum through g, counting its requests
// in reqs.
func lookupStored(ctx context.Context, g *Gets, o Object, reqs *atomic.Int64) *storedSum {
	s := &storedSum{done: make(chan struct{})}
	go func() {
		defer close(s.done)
		s.st, s.requests, s.err = g.stored(ctx, o)
		reqs.Add(int64(s.requests))
		if s.st != nil && s.st.Check(o.Size) == nil {
			s.usable, s.ends = true, s.st.Ends()
		}
	}()
	return s
}

// wait returns once the lookup has ended, or ctx has.
func (s *storedSum) wait(ctx context.Context) error {
	select {
	case <-s.done:
		return s.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// stored returns o's stored checksum, nil if it has none, and the requests it took.
// GetObjectAttributes gives the value, its type and a composite object's parts (sizes and
// values) in one request on S3; a server without it (or without the parts) is asked with
// a HeadObject in checksum mode, and for a composite object's part sizes with a
// HeadObject per part number (versitygw v1.8.0 lists no parts).
func (g *Gets) stored(ctx context.Context, o Object) (*checksum.Stored, int, error) {
	st, reqs, err := g.attributes(ctx, o)
	if err != nil {
		if errors.Is(err, ErrOtherVersion) || ctx.Err() != nil {
			return nil, reqs, err
		}
		// Not served (NotImplemented, or an answer that is not its XML), or the object is
		// gone or refused: the pinned HeadObject carries the value, or the error to classify.
		st, err = g.headStored(ctx, o, 0, nil)
		reqs++
		if err != nil {
			return nil, reqs, err
		}
	}
	if st == nil || st.Type != checksum.Composite || len(st.Parts) > 0 {
		return st, reqs, nil
	}
	n := st.PartCount()
	for i := 1; i <= n && n > 1; i++ {
		var size int64
		_, err := g.headStored(ctx, o, int32(i), &size)
		reqs++
		if err != nil {
			return nil, reqs, err
		}
		st.Parts = append(st.Parts, checksum.Part{Size: size})
	}
	if n == 1 {
		st.Parts = []checksum.Part{{Size: o.Size}}
	}
	return st, reqs, nil
}

// attributes asks GetObjectAttributes for o's checksum and parts, following the parts'
// pages.
func (g *Gets) attributes(ctx context.Context, o Object) (*checksum.Stored, int, error) {
	in := &s3.GetObjectAttributesInput{
		Bucket: aws.String(g.bucket), Key: aws.String(o.Key), MaxParts: aws.Int32(1000),
		ObjectAttributes: []types.ObjectAttributes{types.ObjectAttributesEtag, types.ObjectAttributesChecksum,
			types.ObjectAttributesObjectParts, types.ObjectAttributesObjectSize},
	}
	if o.VersionID != "" {
		in.VersionId = aws.String(o.VersionID) // the planned version's checksum, not the current one's
	}
	var st *checksum.Stored
	reqs := 0
	for {
		out, err := g.client.GetObjectAttributes(ctx, in)
		reqs++
		if err != nil {
			return nil, reqs, fmt.Errorf("checksum lookup s3://%s/%s: %w", g.bucket, o.Key, err)
		}
		// GetObjectAttributes takes no If-Match: the answer's ETag and size pin it. An
		// answer without an ETag is not this request's (a server that ignored the query).
		etag := aws.ToString(out.ETag)
		if etag == "" {
			return nil, reqs, fmt.Errorf("checksum lookup s3://%s/%s: GetObjectAttributes answered without an ETag", g.bucket, o.Key)
		}
		if strings.Trim(etag, `"`) != strings.Trim(o.ETag, `"`) ||
			out.ObjectSize != nil && *out.ObjectSize != o.Size {
			return nil, reqs, fmt.Errorf("checksum lookup s3://%s/%s: %w: ETag %s, %d bytes; planned %s, %d",
				g.bucket, o.Key, ErrOtherVersion, etag, aws.ToInt64(out.ObjectSize), o.ETag, o.Size)
		}
		if st == nil {
			if out.Checksum == nil {
				return nil, reqs, nil
			}
			c := out.Checksum
			st = storedOf(c.ChecksumType, c.ChecksumCRC32, c.ChecksumCRC32C, c.ChecksumCRC64NVME, c.ChecksumSHA1, c.ChecksumSHA256)
			if st == nil {
				return nil, reqs, nil
			}
		}
		op := out.ObjectParts
		if op == nil {
			return st, reqs, nil
		}
		for _, p := range op.Parts {
			v := storedOf(types.ChecksumType(st.Type), p.ChecksumCRC32, p.ChecksumCRC32C, p.ChecksumCRC64NVME, p.ChecksumSHA1, p.ChecksumSHA256)
			part := checksum.Part{Size: aws.ToInt64(p.Size)}
			if v != nil && v.Algorithm == st.Algorithm {
				part.Value = v.Value
			}
			st.Parts = append(st.Parts, part)
		}
		if !aws.ToBool(op.IsTruncated) || op.NextPartNumberMarker == nil {
			return st, reqs, nil
		}
		in.PartNumberMarker = op.NextPartNumberMarker
	}
}

// headStored asks a HeadObject in checksum mode, pinned, for o's checksum (part 0) or for
// one part's size.
func (g *Gets) headStored(ctx context.Context, o Object, part int32, size *int64) (*checksum.Stored, error) {
	in := &s3.HeadObjectInput{Bucket: aws.String(g.bucket), Key: aws.String(o.Key), IfMatch: aws.String(o.ETag),
		ChecksumMode: types.ChecksumModeEnabled}
	if part > 0 {
		in.PartNumber = aws.Int32(part)
	}
	if o.VersionID != "" {
		in.VersionId = aws.String(o.VersionID)
	}
	out, err := g.client.HeadObject(ctx, in)
	if err != nil {
		return nil, fmt.Errorf("checksum lookup s3://%s/%s (part %d): %w", g.bucket, o.Key, part, err)
	}
	if size != nil {
		*size = aws.ToInt64(out.ContentLength)
	}
	return storedOf(out.ChecksumType, out.ChecksumCRC32, out.ChecksumCRC32C, out.ChecksumCRC64NVME, out.ChecksumSHA1, out.ChecksumSHA256), nil
}

// storedOf returns the one checksum among the values an answer carries, nil if none.
func storedOf(t types.ChecksumType, crc32, crc32c, crc64nvme, sha1, sha256 *string) *checksum.Stored {
	for _, c := range []struct {
		a checksum.Algorithm
		v *string
	}{{checksum.CRC32, crc32}, {checksum.CRC32C, crc32c}, {checksum.CRC64NVME, crc64nvme}, {checksum.SHA1, sha1}, {checksum.SHA256, sha256}} {
		if c.v != nil && *c.v != "" {
			typ := checksum.Type(t)
			if typ == "" {
				// Servers that leave the type out: a composite value ends with "-N".
				typ = checksum.FullObject
				if i := strings.LastIndexByte(*c.v, '-'); i > 0 {
					typ = checksum.Composite
				}
			}
			return &checksum.Stored{Algorithm: c.a, Type: typ, Value: *c.v}
		}
	}
	return nil
}
