package s3conformance

import (
	"bytes"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"hash"
	"hash/crc32"
	"hash/crc64"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// crc64NVME is the CRC-64/NVME polynomial, bit-reversed as package crc64 wants it.
var crc64NVME = crc64.MakeTable(0x9a6c9329ac4bc9b5)

func newHash(alg types.ChecksumAlgorithm) hash.Hash {
	switch alg {
	case types.ChecksumAlgorithmCrc32:
		return crc32.NewIEEE()
	case types.ChecksumAlgorithmCrc32c:
		return crc32.New(crc32.MakeTable(crc32.Castagnoli))
	case types.ChecksumAlgorithmCrc64nvme:
		return crc64.New(crc64NVME)
	case types.ChecksumAlgorithmSha1:
		return sha1.New()
	case types.ChecksumAlgorithmSha256:
		return sha256.New()
	}
	panic("no hash for " + alg)
}

func sum(alg types.ChecksumAlgorithm, data ...[]byte) []byte {
	h := newHash(alg)
	for _, d := range data {
		h.Write(d)
	}
	return h.Sum(nil)
}

// fullObject is S3's full-object checksum of data, as the header carries it.
func fullObject(alg types.ChecksumAlgorithm, data ...[]byte) string {
	return base64.StdEncoding.EncodeToString(sum(alg, data...))
}

// composite is S3's checksum of the parts' checksums, without the "-N" part count.
func composite(alg types.ChecksumAlgorithm, parts ...[]byte) string {
	var sums [][]byte
	for _, p := range parts {
		sums = append(sums, sum(alg, p))
	}
	return fullObject(alg, sums...)
}

// checksums are the checksum fields of an answer, whichever algorithm they are for.
type checksums struct {
	CRC32, CRC32C, CRC64NVME, SHA1, SHA256 *string
	Type                                   types.ChecksumType
}

// only returns the fields with value set for alg and the type typ.
func only(alg types.ChecksumAlgorithm, value string, typ types.ChecksumType) checksums {
	var c checksums
	*c.field(alg) = &value
	c.Type = typ
	return c
}

func (c *checksums) field(alg types.ChecksumAlgorithm) **string {
	switch alg {
	case types.ChecksumAlgorithmCrc32:
		return &c.CRC32
	case types.ChecksumAlgorithmCrc32c:
		return &c.CRC32C
	case types.ChecksumAlgorithmCrc64nvme:
		return &c.CRC64NVME
	case types.ChecksumAlgorithmSha1:
		return &c.SHA1
	}
	return &c.SHA256
}

func (c checksums) String() string {
	var s string
	for _, f := range []struct {
		name string
		v    *string
	}{{"CRC32", c.CRC32}, {"CRC32C", c.CRC32C}, {"CRC64NVME", c.CRC64NVME}, {"SHA1", c.SHA1}, {"SHA256", c.SHA256}} {
		if f.v != nil && *f.v != "" {
			s += f.name + "=" + *f.v + " "
		}
	}
	return s + "type=" + string(c.Type)
}

func (c checksums) equal(d checksums) bool { return c.String() == d.String() }

// observed is where a server returned an object's checksums.
type observed struct {
	Head, HeadWithoutMode, Get, RangedGet, Attributes checksums
	Listed, ListedVersion                             []types.ChecksumAlgorithm
}

func (s *server) observe(t *testing.T, bucket, key string) observed {
	t.Helper()
	ctx := context.Background()
	b, k := aws.String(bucket), aws.String(key)
	var o observed
	h, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: b, Key: k, ChecksumMode: types.ChecksumModeEnabled})
	if err != nil {
		t.Fatalf("HEAD s3://%s/%s: %v", bucket, key, err)
	}
	o.Head = checksums{h.ChecksumCRC32, h.ChecksumCRC32C, h.ChecksumCRC64NVME, h.ChecksumSHA1, h.ChecksumSHA256, h.ChecksumType}
	h, err = s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: b, Key: k})
	if err != nil {
		t.Fatalf("HEAD s3://%s/%s: %v", bucket, key, err)
	}
	o.HeadWithoutMode = checksums{h.ChecksumCRC32, h.ChecksumCRC32C, h.ChecksumCRC64NVME, h.ChecksumSHA1, h.ChecksumSHA256, h.ChecksumType}
	for _, rng := range []*string{nil, aws.String("bytes=0-3")} {
		g, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: b, Key: k, ChecksumMode: types.ChecksumModeEnabled, Range: rng})
		if err != nil {
			t.Fatalf("GET s3://%s/%s: %v", bucket, key, err)
		}
		g.Body.Close()
		c := checksums{g.ChecksumCRC32, g.ChecksumCRC32C, g.ChecksumCRC64NVME, g.ChecksumSHA1, g.ChecksumSHA256, g.ChecksumType}
		if rng == nil {
			o.Get = c
		} else {
			o.RangedGet = c
		}
	}
	a, err := s.client.GetObjectAttributes(ctx, &s3.GetObjectAttributesInput{Bucket: b, Key: k, ObjectAttributes: []types.ObjectAttributes{types.ObjectAttributesChecksum}})
	if err != nil {
		t.Fatalf("GetObjectAttributes s3://%s/%s: %v", bucket, key, err)
	}
	if c := a.Checksum; c != nil {
		o.Attributes = checksums{c.ChecksumCRC32, c.ChecksumCRC32C, c.ChecksumCRC64NVME, c.ChecksumSHA1, c.ChecksumSHA256, c.ChecksumType}
	}
	l, err := s.client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: b, Prefix: k})
	if err != nil || len(l.Contents) == 0 {
		t.Fatalf("list s3://%s/%s: %d objects, %v", bucket, key, len(l.Contents), err)
	}
	o.Listed = l.Contents[0].ChecksumAlgorithm
	v, err := s.client.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: b, Prefix: k})
	if err != nil || len(v.Versions) == 0 {
		t.Fatalf("list versions of s3://%s/%s: %d versions, %v", bucket, key, len(v.Versions), err)
	}
	o.ListedVersion = v.Versions[0].ChecksumAlgorithm
	return o
}

func (o observed) check(t *testing.T, want checksums, listed []types.ChecksumAlgorithm) {
	t.Helper()
	none := checksums{}
	for _, f := range []struct {
		name      string
		got, want checksums
	}{
		{"HEAD with ChecksumMode", o.Head, want},
		{"HEAD without ChecksumMode", o.HeadWithoutMode, none},
		{"GET with ChecksumMode", o.Get, want},
		{"ranged GET with ChecksumMode", o.RangedGet, none},
	} {
		if !f.got.equal(f.want) {
			t.Errorf("%s: %v, want %v", f.name, f.got, f.want)
		}
	}
	if !slices.Equal(o.Listed, listed) {
		t.Errorf("ListObjectsV2 ChecksumAlgorithm %v, want %v", o.Listed, listed)
	}
	if !slices.Equal(o.ListedVersion, listed) {
		t.Errorf("ListObjectVersions ChecksumAlgorithm %v, want %v", o.ListedVersion, listed)
	}
}

var algorithms = []types.ChecksumAlgorithm{
	types.ChecksumAlgorithmCrc32, types.ChecksumAlgorithmCrc32c, types.ChecksumAlgorithmCrc64nvme,
	types.ChecksumAlgorithmSha1, types.ChecksumAlgorithmSha256,
}

// TestChecksumsOfPut puts an object with each algorithm's checksum, and one without: both
// servers verify, store and return what was sent; versitygw, like S3, also computes a
// CRC64NVME when nothing was sent, MinIO stores none.
func TestChecksumsOfPut(t *testing.T) {
	body := []byte("hello checksum")
	eachServer(t, func(t *testing.T, s *server) {
		s.createBucket(t, "sums", "")
		for _, alg := range algorithms {
			key := "k-" + string(alg)
			out, err := s.client.PutObject(context.Background(), &s3.PutObjectInput{
				Bucket: aws.String("sums"), Key: aws.String(key), Body: bytes.NewReader(body), ChecksumAlgorithm: alg,
			})
			if err != nil {
				t.Fatalf("put %s with %s: %v", key, alg, err)
			}
			want := only(alg, fullObject(alg, body), types.ChecksumTypeFullObject)
			if got := (checksums{out.ChecksumCRC32, out.ChecksumCRC32C, out.ChecksumCRC64NVME, out.ChecksumSHA1, out.ChecksumSHA256, out.ChecksumType}); !got.equal(want) {
				t.Errorf("put %s answered %v, want %v", key, got, want)
			}
			o := s.observe(t, "sums", key)
			listed := []types.ChecksumAlgorithm{alg}
			if s.name == MinIO {
				listed = nil
			}
			o.check(t, want, listed)
			if !o.Attributes.equal(want) {
				t.Errorf("%s GetObjectAttributes: %v, want %v", key, o.Attributes, want)
			}
		}

		s.put(t, "sums", "none", string(body))
		o := s.observe(t, "sums", "none")
		want, listed := checksums{}, []types.ChecksumAlgorithm(nil)
		if s.name == VersityGW {
			want = only(types.ChecksumAlgorithmCrc64nvme, fullObject(types.ChecksumAlgorithmCrc64nvme, body), types.ChecksumTypeFullObject)
			listed = []types.ChecksumAlgorithm{types.ChecksumAlgorithmCrc64nvme}
		}
		o.check(t, want, listed)
		if !o.Attributes.equal(want) {
			t.Errorf("GetObjectAttributes of a put without checksum: %v, want %v", o.Attributes, want)
		}
	})
}

// TestChecksumMismatch puts a body whose checksum header is wrong.
func TestChecksumMismatch(t *testing.T) {
	eachServer(t, func(t *testing.T, s *server) {
		s.createBucket(t, "sums", "")
		for _, in := range []*s3.PutObjectInput{
			{ChecksumCRC32: aws.String("AAAAAA==")},
			{ChecksumCRC64NVME: aws.String("AAAAAAAAAAA=")},
		} {
			in.Bucket, in.Key, in.Body = aws.String("sums"), aws.String("bad"), bytes.NewReader([]byte("hello"))
			_, err := s.client.PutObject(context.Background(), in)
			if err == nil {
				t.Fatalf("a put with a wrong checksum succeeded")
			}
			want := map[string]failure{MinIO: {Status: 400, Code: "XAmzContentChecksumMismatch"}, VersityGW: {Status: 400, Code: "BadDigest"}}[s.name]
			if got := failureOf(t, err); got != want {
				t.Errorf("put with a wrong checksum: %+v, want %+v", got, want)
			}
		}
	})
}

// TestChecksumsOfMultipartUpload uploads two parts with each algorithm and checksum type:
// both servers keep COMPOSITE checksums (checksum of the parts' checksums, "-2") and
// FULL_OBJECT ones (the CRC of the whole object) and return them as S3 does. They differ in
// GetObjectAttributes: MinIO gives the composite value without "-2", as S3 does, and each
// part's checksum; versitygw keeps the "-2" and gives no parts.
func TestChecksumsOfMultipartUpload(t *testing.T) {
	part1, part2 := bytes.Repeat([]byte("x"), 5<<20), []byte("tail")
	eachServer(t, func(t *testing.T, s *server) {
		s.createBucket(t, "sums", "")
		ctx := context.Background()
		for _, c := range []struct {
			alg types.ChecksumAlgorithm
			typ types.ChecksumType
		}{
			{types.ChecksumAlgorithmCrc32, types.ChecksumTypeComposite},
			{types.ChecksumAlgorithmCrc32, types.ChecksumTypeFullObject},
			{types.ChecksumAlgorithmCrc32c, types.ChecksumTypeComposite},
			{types.ChecksumAlgorithmCrc32c, types.ChecksumTypeFullObject},
			{types.ChecksumAlgorithmCrc64nvme, types.ChecksumTypeFullObject},
			{types.ChecksumAlgorithmSha256, types.ChecksumTypeComposite},
		} {
			key := fmt.Sprintf("mp-%s-%s", c.alg, c.typ)
			b, k := aws.String("sums"), aws.String(key)
			up, err := s.client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: b, Key: k, ChecksumAlgorithm: c.alg, ChecksumType: c.typ})
			if err != nil {
				t.Fatalf("create upload %s: %v", key, err)
			}
			var parts []types.CompletedPart
			for i, p := range [][]byte{part1, part2} {
				n := aws.Int32(int32(i + 1))
				out, err := s.client.UploadPart(ctx, &s3.UploadPartInput{Bucket: b, Key: k, UploadId: up.UploadId, PartNumber: n, Body: bytes.NewReader(p), ChecksumAlgorithm: c.alg})
				if err != nil {
					t.Fatalf("upload part %d of %s: %v", i+1, key, err)
				}
				parts = append(parts, types.CompletedPart{PartNumber: n, ETag: out.ETag, ChecksumCRC32: out.ChecksumCRC32, ChecksumCRC32C: out.ChecksumCRC32C,
					ChecksumCRC64NVME: out.ChecksumCRC64NVME, ChecksumSHA1: out.ChecksumSHA1, ChecksumSHA256: out.ChecksumSHA256})
			}
			done, err := s.client.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: b, Key: k, UploadId: up.UploadId,
				MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}, ChecksumType: c.typ})
			if err != nil {
				t.Fatalf("complete upload %s: %v", key, err)
			}

			value, attrValue := fullObject(c.alg, part1, part2), fullObject(c.alg, part1, part2)
			if c.typ == types.ChecksumTypeComposite {
				attrValue = composite(c.alg, part1, part2)
				value = attrValue + "-2"
				if s.name == VersityGW {
					attrValue = value
				}
			}
			want := only(c.alg, value, c.typ)
			completed := checksums{done.ChecksumCRC32, done.ChecksumCRC32C, done.ChecksumCRC64NVME, done.ChecksumSHA1, done.ChecksumSHA256, done.ChecksumType}
			wantCompleted := want
			if s.name == MinIO {
				wantCompleted.Type = "" // the value is right, the type is left out
			}
			if !completed.equal(wantCompleted) {
				t.Errorf("%s: CompleteMultipartUpload answered %v, want %v", key, completed, wantCompleted)
			}
			o := s.observe(t, "sums", key)
			listed := []types.ChecksumAlgorithm{c.alg}
			if s.name == MinIO {
				listed = nil
			}
			o.check(t, want, listed)
			if wantAttrs := only(c.alg, attrValue, c.typ); !o.Attributes.equal(wantAttrs) {
				t.Errorf("%s: GetObjectAttributes %v, want %v", key, o.Attributes, wantAttrs)
			}

			// Each part's own checksum: S3 answers it to HEAD with partNumber and in
			// GetObjectAttributes ObjectParts.
			h, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: b, Key: k, PartNumber: aws.Int32(1), ChecksumMode: types.ChecksumModeEnabled})
			if err != nil {
				t.Fatalf("HEAD part 1 of %s: %v", key, err)
			}
			gotPart := checksums{h.ChecksumCRC32, h.ChecksumCRC32C, h.ChecksumCRC64NVME, h.ChecksumSHA1, h.ChecksumSHA256, ""}
			a, err := s.client.GetObjectAttributes(ctx, &s3.GetObjectAttributesInput{Bucket: b, Key: k, ObjectAttributes: []types.ObjectAttributes{types.ObjectAttributesObjectParts}})
			if err != nil {
				t.Fatalf("GetObjectAttributes parts of %s: %v", key, err)
			}
			var gotParts []string
			if a.ObjectParts != nil {
				for _, p := range a.ObjectParts.Parts {
					gotParts = append(gotParts, checksums{p.ChecksumCRC32, p.ChecksumCRC32C, p.ChecksumCRC64NVME, p.ChecksumSHA1, p.ChecksumSHA256, ""}.String())
				}
			}
			wantPart, wantParts := checksums{}, []string(nil)
			if s.name == MinIO {
				wantPart = only(c.alg, fullObject(c.alg, part1), "")
				wantParts = []string{wantPart.String(), only(c.alg, fullObject(c.alg, part2), "").String()}
			}
			if !gotPart.equal(wantPart) {
				t.Errorf("%s: HEAD part 1: %v, want %v", key, gotPart, wantPart)
			}
			if !slices.Equal(gotParts, wantParts) {
				t.Errorf("%s: GetObjectAttributes parts: %v, want %v", key, gotParts, wantParts)
			}
		}
	})
}
