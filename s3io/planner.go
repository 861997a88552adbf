package s3io

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/log"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/spate-io/beam-s3/s3io/internal/listing"
)

// planner lists prefixes and selects their objects by Config.Match, StartAfter, the time
// window and the storage class. One scan loop serves both users of a listing: a packSink
// packs the selection into descriptors (PlanDescriptors, Plan, PlanAll), a watchSink hands
// each selected object to ReadContinuously's watch.
type planner struct {
	cfg    Config
	client *s3.Client
	glob   *listing.Glob
}

// newPlanner builds the planner of cfg, with this process's S3 client.
func newPlanner(ctx context.Context, cfg Config) (*planner, error) {
	g, err := cfg.glob()
	if err != nil {
		return nil, err
	}
	client, err := newClient(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return &planner{cfg: cfg, client: client, glob: g}, nil
}

// A sink takes a scan's selection, one page of the listing at a time, in key order, and
// counts what it makes of it in st.
type sink interface {
	take(ctx context.Context, page []selected, st *PlanStats) error
	// finish runs after the last page.
	finish() error
	// report counts and logs what the scan of where (s3://bucket/prefix) did.
	report(ctx context.Context, where string, st *PlanStats, took time.Duration)
}

// selected is an object a scan selected, with its LastModified.
type selected struct {
	Member
	LastModified time.Time
}

// archiveClasses are the storage classes whose objects must be restored before a GET. The
// Intelligent-Tiering archive tiers are listed as INTELLIGENT_TIERING, so only their GET
// (403 InvalidObjectState) tells; it is quarantined as archived too.
var archiveClasses = map[string]bool{"GLACIER": true, "DEEP_ARCHIVE": true}

// planProgressEvery spaces the planner's progress log lines.
const planProgressEvery = 5 * time.Second

// skippedNamed is how many of the keys Config.SkipArchived left out the log names.
const skippedNamed = 5

// scan lists bucket/prefix to its end, selecting from each page and handing the selection to
// out, and returns what it listed and selected.
func (p *planner) scan(ctx context.Context, bucket, prefix string, out sink) (PlanStats, error) {
	lp, err := p.cfg.listPrefix(prefix)
	if err != nil {
		return PlanStats{}, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if p.cfg.Versions.enabled() {
		if listing.IsDirectoryBucket(bucket) {
			return PlanStats{}, fmt.Errorf("s3io: Config.Versions needs a versioned bucket, and s3://%s is an S3 Express directory bucket, which has no versions: plan it without Config.Versions", bucket)
		}
		if err := checkVersioning(ctx, p.client, bucket, p.cfg.Versions); err != nil {
			return PlanStats{}, err
		}
	}
	opts := listing.Options{Client: p.client, Bucket: bucket, Prefix: lp, StartAfter: p.cfg.StartAfter, Parallelism: p.cfg.ListParallelism, Versions: p.cfg.Versions.listing(),
		Warnf: func(format string, args ...any) { log.Warnf(ctx, format, args...) }}
	if g := p.glob; g != nil {
		opts.SkipFolder = func(f string) bool { return !g.MayMatchUnder(f) }
	}
	l := listing.Open(opts)
	l.Run(ctx)
	sc := &scanState{st: PlanStats{ListPrefix: lp}}
	began, lastLog := time.Now(), time.Now()
	for {
		page, err := l.Next()
		if err != nil {
			var le *listing.Error
			if errors.As(err, &le) {
				err = describeS3Error(le.Err, fmt.Sprintf("s3io: list s3://%s/%s", le.Bucket, le.Prefix))
			}
			return sc.st, err
		}
		if page == nil {
			break
		}
		sel, err := p.selectPage(ctx, bucket, prefix, page, sc)
		if err != nil {
			return sc.st, err
		}
		if err := out.take(ctx, sel, &sc.st); err != nil {
			return sc.st, err
		}
		if time.Since(lastLog) >= planProgressEvery {
			lastLog = time.Now()
			st := &sc.st
			log.Infof(ctx, "s3io: planning s3://%s/%s: %d keys (%d bytes) listed (%.0f keys/s), %d objects (%d bytes) in %d descriptors so far", bucket, lp, st.KeysListed, st.BytesListed, float64(st.KeysListed)/time.Since(began).Seconds(), st.Objects, st.Bytes, st.Descriptors)
		}
	}
	if err := out.finish(); err != nil {
		return sc.st, err
	}
	ls := l.Stats()
	sc.st.ListRequests, sc.st.FoldersSkipped, sc.st.VersionsListed = ls.Requests, ls.SkippedFolders, ls.Versions
	where := "s3://" + bucket + "/" + lp
	metricListRequests.Inc(ctx, sc.st.ListRequests)
	metricVersionsListed.Inc(ctx, sc.st.VersionsListed)
	metricObjectsSkipped.Inc(ctx, sc.st.Skipped)
	metricSkippedArchived.Inc(ctx, sc.st.SkippedArchived)
	if sc.st.SkippedArchived > 0 {
		log.Warnf(ctx, "s3io: planning %s left out %d archived objects (Config.SkipArchived), such as %s", where, sc.st.SkippedArchived, strings.Join(sc.skippedArchived, ", "))
	}
	out.report(ctx, where, &sc.st, time.Since(began))
	return sc.st, nil
}

// scanState is what a scan has counted so far.
type scanState struct {
	st              PlanStats
	skippedArchived []string // the first few keys SkipArchived left out, for the log
}

// selectPage counts one page of the listing and returns what it selects, in key order.
func (p *planner) selectPage(ctx context.Context, bucket, prefix string, page []listing.Object, sc *scanState) ([]selected, error) {
	st := &sc.st
	var pageBytes int64
	for _, o := range page {
		pageBytes += o.Size
	}
	st.KeysListed += int64(len(page))
	st.BytesListed += pageBytes
	metricKeysListed.Inc(ctx, int64(len(page)))
	metricBytesListed.Inc(ctx, pageBytes)
	sel := make([]selected, 0, len(page))
	for _, o := range page {
		if !strings.HasPrefix(o.Key, prefix) || o.Size == 0 && strings.HasSuffix(o.Key, "/") {
			continue
		}
		if !p.selects(o) {
			st.Skipped++
			continue
		}
		if o.ETag == "" {
			return nil, fmt.Errorf("s3io: the listing of s3://%s gives no ETag for %q, so its reads cannot be pinned", bucket, o.Key)
		}
		m := Member{Key: o.Key, Size: o.Size, ETag: o.ETag, VersionID: o.VersionID}
		if archiveClasses[o.StorageClass] && !o.Restored {
			if p.cfg.SkipArchived {
				st.SkippedArchived++
				if len(sc.skippedArchived) < skippedNamed {
					sc.skippedArchived = append(sc.skippedArchived, o.Key)
				}
				continue
			}
			m.Archived = o.StorageClass
			st.Archived++
		}
		class := o.StorageClass
		if class == "" {
			class = "STANDARD"
		}
		if st.StorageClasses == nil {
			st.StorageClasses = map[string]int64{}
		}
		st.StorageClasses[class]++
		st.Objects++
		st.Bytes += o.Size
		sel = append(sel, selected{Member: m, LastModified: o.LastModified})
	}
	return sel, nil
}

// selects applies Match and the time window.
func (p *planner) selects(o listing.Object) bool {
	if p.glob != nil && !p.glob.Match(o.Key) {
		return false
	}
	if t := p.cfg.ModifiedAfter; !t.IsZero() && o.LastModified.Before(t) {
		return false
	}
	if t := p.cfg.ModifiedBefore; !t.IsZero() && !o.LastModified.Before(t) {
		return false
	}
	return true
}
