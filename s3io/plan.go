package s3io

import (
	"context"
	"fmt"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
)

// PlanStats says what planning listed and planned.
type PlanStats struct {
	// ListPrefix is the Prefix the LIST requests asked for: the longer of the prefix and
	// Config.Match's literal prefix.
	ListPrefix string
	// KeysListed and BytesListed count the keys the listing returned, and their sizes,
	// before selection.
	KeysListed, BytesListed int64
	// ListRequests counts the LIST requests sent: pages and delimiter probes.
	ListRequests int64
	// VersionsListed counts, with Config.Versions, the versions and delete markers the
	// listing decoded, of which KeysListed kept one per key; with ListParallelism above 1,
	// those past a range's end are decoded again by the next range.
	VersionsListed int64
	// ProbeRequests and ProbeBytes count the pinned GETs the planner sent to decide how to
	// cut large objects into segments (magic bytes, unit starts, seek tables), and the bytes
	// they asked for (or received, if more).
	ProbeRequests, ProbeBytes int64
	// Objects and Bytes are what was planned; Segments the members that are segments of
	// large objects.
	Objects, Bytes int64
	Descriptors    int64
	Segments       int64
	// Archived counts planned objects in an archive storage class and not restored: each
	// will be a Failure with reason "archived". SkippedArchived counts those that
	// Config.SkipArchived left out instead.
	Archived        int64
	SkippedArchived int64
	// Skipped counts listed objects that Match or the time window left out (directory
	// markers, zero-byte keys ending in "/", are not objects and are not counted).
	Skipped int64
	// FoldersSkipped counts folders that a delimiter listing found and that were never
	// listed, because Match cannot select any key under them.
	FoldersSkipped int64
	// StorageClasses counts planned objects by the storage class the listing gave
	// ("STANDARD" when it gave none).
	StorageClasses map[string]int64
}

// PlanDescriptors plans cfg's bucket and prefix outside a pipeline, as Plan does inside one,
// handing the descriptors to emit in key order, when Plan would emit them; an error from
// emit stops planning and is returned. The descriptors and their IDs are those Plan would
// give. Use it to preview, store or hand out a plan; cmd/s3io-plan is built on it.
func PlanDescriptors(ctx context.Context, cfg Config, emit func(SplitDescriptor) error) (PlanStats, error) {
	if err := cfg.Validate(); err != nil {
		return PlanStats{}, err
	}
	cfg = cfg.WithDefaults()
	p, err := newPlanner(ctx, cfg)
	if err != nil {
		return PlanStats{}, err
	}
	return p.plan(ctx, cfg.Bucket, cfg.Prefix, emit)
}

// plan lists bucket/prefix in parallel and emits its descriptors in key order.
func (p *planner) plan(ctx context.Context, bucket, prefix string, emit func(SplitDescriptor) error) (PlanStats, error) {
	return p.scan(ctx, bucket, prefix, newPackSink(ctx, p, bucket, emit))
}

// Plan lists cfg's prefix once and returns a PCollection<SplitDescriptor>: the objects
// under it that Match, StartAfter and the time window select, sorted by key and packed into
// descriptors of about cfg.SplitTargetBytes, a larger object cut into segments where its
// format allows (see Config.SplitTargetBytes). Listing runs on a worker when the pipeline runs,
// with the worker's AWS credentials, cfg.ListParallelism requests at a time. The
// descriptors leave the planner when the listing ends, each with the plan's totals
// (SplitDescriptor.PlanObjects, PlanBytes); those of a plan too large to hold (about
// 200,000 objects) leave as they are packed, without them. Replanning an unchanged prefix
// yields the same descriptors and IDs, whatever the parallelism. It panics if cfg does not
// validate.
func Plan(s beam.Scope, cfg Config) beam.PCollection {
	return planPrefix(s, prepare(cfg))
}

// planPrefix plans cfg's bucket and prefix; cfg is prepared.
func planPrefix(s beam.Scope, cfg Config) beam.PCollection {
	s = s.Scope("s3io.Plan")
	return planAll(s, cfg, beam.Create(s, "s3://"+cfg.Bucket+"/"+cfg.Prefix))
}

// PlanAll plans every s3://bucket/prefix URL of a PCollection<string> as Plan plans
// cfg.Bucket and cfg.Prefix (which are not used here), with cfg's other settings, and
// returns the descriptors of all of them. A URL that is not s3://bucket[/prefix] fails the
// job, naming it. This is how s3io reads what another transform lists or computes. It
// panics if cfg does not validate.
func PlanAll(s beam.Scope, cfg Config, urls beam.PCollection) beam.PCollection {
	return planAll(s, readingConfig(cfg), urls)
}

// planAll plans the URLs; cfg is prepared.
func planAll(s beam.Scope, cfg Config, urls beam.PCollection) beam.PCollection {
	return beam.ParDo(s.Scope("s3io.PlanAll"), &planFn{Cfg: cfg}, urls)
}

// planFn plans each s3:// URL it is given, on a worker.
type planFn struct {
	Cfg Config

	planner *planner
}

func (fn *planFn) Setup(ctx context.Context) (err error) {
	fn.planner, err = newPlanner(ctx, fn.Cfg)
	return err
}

func (fn *planFn) ProcessElement(ctx context.Context, u string, emit func(SplitDescriptor)) error {
	bucket, prefix, err := parseS3URL(u)
	if err != nil {
		return err
	}
	_, err = fn.planner.plan(ctx, bucket, prefix, func(d SplitDescriptor) error {
		emit(d)
		return nil
	})
	return err
}

// parseS3URL splits s3://bucket/prefix. The prefix is taken as written: S3 keys are not
// URL-escaped here.
func parseS3URL(u string) (bucket, prefix string, err error) {
	rest, ok := strings.CutPrefix(u, "s3://")
	if !ok {
		return "", "", fmt.Errorf("s3io: %q is not an s3:// URL; ReadAll and PlanAll take URLs such as s3://bucket/prefix/", u)
	}
	bucket, prefix, _ = strings.Cut(rest, "/")
	if err := validateBucketName(bucket); err != nil {
		return "", "", fmt.Errorf("s3io: the URL %q does not name a valid bucket: %w", u, err)
	}
	return bucket, prefix, nil
}
