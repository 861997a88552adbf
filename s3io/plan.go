package s3io

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// packMembers packs a key-sorted listing into descriptors in key order: whole objects,
// greedily, while a descriptor stays within target bytes and maxMembers objects. An object
// of target bytes or more gets a descriptor of its own.
func packMembers(bucket string, objects []Member, target int64, maxMembers int) []SplitDescriptor {
	var out []SplitDescriptor
	var cur []Member
	var curBytes int64
	flush := func() {
		if len(cur) == 0 {
			return
		}
		out = append(out, SplitDescriptor{ID: SplitID(bucket, cur), Bucket: bucket, Members: cur})
		cur, curBytes = nil, 0
	}
	for _, o := range objects {
		if len(cur) > 0 && (curBytes+o.Size > target || len(cur) >= maxMembers) {
			flush()
		}
		cur = append(cur, o)
		curBytes += o.Size
		if curBytes >= target {
			flush()
		}
	}
	flush()
	return out
}

// listObjects lists every object under prefix in one ListObjectsV2 pass, skipping
// zero-byte "directory" markers, and returns them sorted by key.
func listObjects(ctx context.Context, client *s3.Client, cfg Config) ([]Member, error) {
	in := &s3.ListObjectsV2Input{Bucket: aws.String(cfg.Bucket)}
	if cfg.Prefix != "" {
		in.Prefix = aws.String(cfg.Prefix)
	}
	if cfg.ExpectedBucketOwner != "" {
		in.ExpectedBucketOwner = aws.String(cfg.ExpectedBucketOwner)
	}
	if cfg.RequesterPays {
		in.RequestPayer = types.RequestPayerRequester
	}
	var out []Member
	pages := s3.NewListObjectsV2Paginator(client, in)
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, describeS3Error(err, fmt.Sprintf("s3io: list s3://%s/%s", cfg.Bucket, cfg.Prefix))
		}
		for _, o := range page.Contents {
			key, size := aws.ToString(o.Key), aws.ToInt64(o.Size)
			if size == 0 && strings.HasSuffix(key, "/") {
				continue
			}
			etag := aws.ToString(o.ETag)
			if etag == "" {
				return nil, fmt.Errorf("s3io: the listing of s3://%s gives no ETag for %q, so its reads cannot be pinned", cfg.Bucket, key)
			}
			out = append(out, Member{Key: key, Size: size, ETag: etag})
		}
	}
	// S3 lists general-purpose buckets in key order, but directory buckets and some
	// S3-compatible servers do not: plan from a sorted listing so IDs never depend on it.
	if !sort.SliceIsSorted(out, func(i, j int) bool { return out[i].Key < out[j].Key }) {
		sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	}
	return out, nil
}

// planFn lists the prefix once, on one worker, and emits its split descriptors.
type planFn struct {
	Cfg Config

	client *s3.Client
}

func (fn *planFn) Setup(ctx context.Context) error {
	c, err := newClient(ctx, fn.Cfg)
	fn.client = c
	return err
}

func (fn *planFn) ProcessElement(ctx context.Context, _ []byte, emit func(SplitDescriptor)) error {
	objects, err := listObjects(ctx, fn.client, fn.Cfg)
	if err != nil {
		return err
	}
	metricObjectsPlanned.Inc(ctx, int64(len(objects)))
	members := make([]Member, 0, len(objects))
	for _, o := range objects {
		if segSize := max(fn.Cfg.SplitTargetBytes, minSegmentBytes); o.Size > segSize && selfSynchronizing(fn.Cfg.Framer) && fn.storedPlain(ctx, o) {
			segs := segments(o, segSize)
			metricSegmentsPlanned.Inc(ctx, int64(len(segs)))
			members = append(members, segs...)
			continue
		}
		members = append(members, o)
	}
	descs := packMembers(fn.Cfg.Bucket, members, fn.Cfg.SplitTargetBytes, fn.Cfg.MaxSplitMembers)
	metricSplitsPlanned.Inc(ctx, int64(len(descs)))
	for _, d := range descs {
		emit(d)
	}
	return nil
}

// minSegmentBytes keeps a tiny SplitTargetBytes from cutting objects into segments that
// cost more in requests than they save in parallelism.
const minSegmentBytes = 64 << 10

// segments cuts an object into segments of at most target bytes, as even as whole bytes
// allow, so that readers of one large object work in parallel.
func segments(o Member, target int64) []Member {
	n := (o.Size + target - 1) / target
	out := make([]Member, n)
	for i := range n {
		out[i] = o
		out[i].Start, out[i].End = o.Size*i/n, o.Size*(i+1)/n
	}
	return out
}

// storedPlain reports whether o is stored uncompressed, which segmenting needs: a reader
// can only start inside an object whose bytes are its records. In auto mode an object
// without a compressed extension is probed for magic bytes with a 4-byte pinned GET; if
// the probe fails the object stays whole, and its read reports the real problem.
func (fn *planFn) storedPlain(ctx context.Context, o Member) bool {
	if mode := compressionFor(fn.Cfg.Compression, o.Key, nil); mode != CompressionNone {
		return false // forced, or named by its extension
	}
	if fn.Cfg.Compression == CompressionNone {
		return true
	}
	src := &pinnedReader{ctx: ctx, client: fn.client, cfg: &fn.Cfg, bucket: fn.Cfg.Bucket, member: o, end: 4}
	defer src.Close()
	var head [4]byte
	n, err := io.ReadFull(src, head[:])
	if err != nil {
		return false
	}
	return compressionFor(CompressionAuto, o.Key, head[:n]) == CompressionNone
}

// Plan lists cfg's prefix once and returns a PCollection<SplitDescriptor>: the objects
// under it, sorted by key and packed into descriptors of about cfg.SplitTargetBytes. An
// uncompressed object larger than that, framed by lines or ndjson, is cut into segments that
// are read in parallel; other objects stay whole. Listing runs on a worker when the pipeline runs, with the worker's
// AWS credentials. Replanning an unchanged prefix yields the same descriptors and IDs.
//
// It panics if cfg does not validate.
func Plan(s beam.Scope, cfg Config) beam.PCollection {
	mustValidate(cfg)
	s = s.Scope("s3io.Plan")
	return beam.ParDo(s, &planFn{Cfg: cfg.withDefaults()}, beam.Impulse(s))
}

func mustValidate(cfg Config) {
	if err := cfg.Validate(); err != nil {
		panic(err)
	}
}
