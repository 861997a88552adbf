package s3io

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/log"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/spate-io/beam-s3/s3io/internal/decode"
	"github.com/spate-io/beam-s3/s3io/internal/fetch"
)

// PlanStats says what planning listed and planned.
type PlanStats struct {
	// ListPrefix is the Prefix the LIST requests asked for: the longer of the prefix and
	// Config.Match's literal prefix.
	ListPrefix string
	// KeysListed and BytesListed count the keys the listing returned, and their sizes,
	// before selection.
	KeysListed, BytesListed int64
	// ListRequests counts the ListObjectsV2 requests sent: pages and delimiter probes.
	ListRequests int64
	// Objects and Bytes are what was planned; Segments the members that are segments of
	// large uncompressed objects.
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
// handing each descriptor to emit as soon as its key range is listed; an error from emit
// stops planning and is returned. The descriptors and their IDs are those Plan would give.
// Use it to preview, store or hand out a plan; cmd/s3io-plan is built on it.
func PlanDescriptors(ctx context.Context, cfg Config, emit func(SplitDescriptor) error) (PlanStats, error) {
	if err := cfg.Validate(); err != nil {
		return PlanStats{}, err
	}
	cfg = cfg.withDefaults()
	p, err := newPlanner(ctx, cfg)
	if err != nil {
		return PlanStats{}, err
	}
	return p.plan(ctx, cfg.Bucket, cfg.Prefix, emit)
}

// planner lists prefixes and packs what it selects into descriptors.
type planner struct {
	cfg    Config
	client *s3.Client
	glob   *glob
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

// archiveClasses are the storage classes whose objects must be restored before a GET. The
// Intelligent-Tiering archive tiers are listed as INTELLIGENT_TIERING, so only their GET
// (403 InvalidObjectState) tells; it is quarantined as archived too.
var archiveClasses = map[string]bool{"GLACIER": true, "DEEP_ARCHIVE": true}

// planProgressEvery spaces the planner's progress log lines.
const planProgressEvery = 5 * time.Second

// plan lists bucket/prefix in parallel and emits its descriptors in key order.
func (p *planner) plan(ctx context.Context, bucket, prefix string, emit func(SplitDescriptor) error) (PlanStats, error) {
	cfg := &p.cfg
	lp, err := cfg.listPrefix(prefix)
	if err != nil {
		return PlanStats{}, err
	}
	run := &planRun{planner: p, bucket: bucket, prefix: prefix, st: PlanStats{ListPrefix: lp}}
	run.pk = &packer{bucket: bucket, target: cfg.SplitTargetBytes, maxMembers: cfg.MaxSplitMembers, emit: func(d SplitDescriptor) error {
		run.st.Descriptors++
		metricSplitsPlanned.Inc(ctx, 1)
		return emit(d)
	}}
	return run.list(ctx)
}

// list lists the run's prefix to its end, selecting from each page and packing (or handing
// on) what it selects, and reports.
func (run *planRun) list(ctx context.Context) (PlanStats, error) {
	cfg, bucket, lp := &run.cfg, run.bucket, run.st.ListPrefix
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	l := newListing(run.client, cfg, bucket, lp, cfg.StartAfter)
	if g := run.glob; g != nil {
		l.skipFolder = func(f string) bool { return !g.mayMatchUnder(f) }
	}
	l.run(ctx)
	began, lastLog := time.Now(), time.Now()
	for {
		page, err := l.next()
		if err != nil {
			return run.st, err
		}
		if page == nil {
			break
		}
		if err := run.page(ctx, page); err != nil {
			return run.st, err
		}
		if time.Since(lastLog) >= planProgressEvery {
			lastLog = time.Now()
			st := &run.st
			log.Infof(ctx, "s3io: planning s3://%s/%s: %d keys (%d bytes) listed (%.0f keys/s), %d objects (%d bytes) in %d descriptors so far", bucket, lp, st.KeysListed, st.BytesListed, float64(st.KeysListed)/time.Since(began).Seconds(), st.Objects, st.Bytes, st.Descriptors)
		}
	}
	if run.pk != nil {
		if err := run.pk.flush(); err != nil {
			return run.st, err
		}
	}
	l.mu.Lock()
	run.st.ListRequests, run.st.FoldersSkipped = l.stats.requests, l.stats.skippedFolders
	l.mu.Unlock()
	run.report(ctx, time.Since(began))
	return run.st, nil
}

// planRun is the state of planning one prefix.
type planRun struct {
	*planner
	bucket, prefix string
	pk             *packer
	// each, when set, is given every selected object instead of the packer: a watch
	// compares them with what it read before.
	each            func(m Member, lastModified time.Time) error
	st              PlanStats
	skippedArchived []string // the first few keys SkipArchived left out, for the log
}

// page selects and packs one page of the listing, in key order.
func (run *planRun) page(ctx context.Context, page []listedObject) error {
	st := &run.st
	var pageBytes int64
	for _, o := range page {
		pageBytes += o.Size
	}
	st.KeysListed += int64(len(page))
	st.BytesListed += pageBytes
	metricKeysListed.Inc(ctx, int64(len(page)))
	metricBytesListed.Inc(ctx, pageBytes)
	selected := make([]Member, 0, len(page))
	for _, o := range page {
		if !strings.HasPrefix(o.Key, run.prefix) || o.Size == 0 && strings.HasSuffix(o.Key, "/") {
			continue
		}
		if !run.selects(o) {
			st.Skipped++
			continue
		}
		if o.ETag == "" {
			return fmt.Errorf("s3io: the listing of s3://%s gives no ETag for %q, so its reads cannot be pinned", run.bucket, o.Key)
		}
		m := Member{Key: o.Key, Size: o.Size, ETag: o.ETag}
		if archiveClasses[o.StorageClass] && !o.Restored {
			if run.cfg.SkipArchived {
				st.SkippedArchived++
				if len(run.skippedArchived) < maxListedFailures {
					run.skippedArchived = append(run.skippedArchived, o.Key)
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
		if run.each != nil {
			if err := run.each(m, o.LastModified); err != nil {
				return err
			}
			continue
		}
		selected = append(selected, m)
	}
	for i, seg := range run.segmentable(ctx, run.bucket, selected) {
		if err := run.addMember(ctx, selected[i], seg, run.pk, st); err != nil {
			return err
		}
	}
	return nil
}

// report counts and logs what planning did.
func (run *planRun) report(ctx context.Context, took time.Duration) {
	st := &run.st
	if run.each == nil {
		metricObjectsPlanned.Inc(ctx, st.Objects)
	}
	metricListRequests.Inc(ctx, st.ListRequests)
	metricObjectsSkipped.Inc(ctx, st.Skipped)
	metricSkippedArchived.Inc(ctx, st.SkippedArchived)
	where := "s3://" + run.bucket + "/" + st.ListPrefix
	if st.SkippedArchived > 0 {
		log.Warnf(ctx, "s3io: planning %s left out %d archived objects (Config.SkipArchived), such as %s", where, st.SkippedArchived, strings.Join(run.skippedArchived, ", "))
	}
	if run.each != nil {
		log.Infof(ctx, "s3io: refresh listed %s: %d keys with %d requests in %v; %d objects (%d bytes, %d archived) selected; %d left out by selection, %d folders not listed", where, st.KeysListed, st.ListRequests, took.Round(time.Millisecond), st.Objects, st.Bytes, st.Archived, st.Skipped, st.FoldersSkipped)
		return
	}
	log.Infof(ctx, "s3io: planned %s: %d keys listed with %d requests in %v; %d objects (%d bytes, %d archived) in %d descriptors; %d left out by selection, %d folders not listed", where, st.KeysListed, st.ListRequests, took.Round(time.Millisecond), st.Objects, st.Bytes, st.Archived, st.Descriptors, st.Skipped, st.FoldersSkipped)
}

// selects applies Match and the time window.
func (p *planner) selects(o listedObject) bool {
	if p.glob != nil && !p.glob.match(o.Key) {
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

// segmentable reports which members are cut into segments: large uncompressed objects
// framed by a self-synchronising framer. The magic-byte probes that tell an object of unknown
// compression is uncompressed run ListParallelism at a time: one after another, a prefix of
// thousands of large objects would cost a request's latency per object to plan.
func (p *planner) segmentable(ctx context.Context, bucket string, ms []Member) []bool {
	out := make([]bool, len(ms))
	if !selfSynchronizing(p.cfg.Framer) {
		return out
	}
	segSize := max(p.cfg.SplitTargetBytes, minSegmentBytes)
	sem := make(chan struct{}, max(p.cfg.ListParallelism, 1))
	var wg sync.WaitGroup
	for i, m := range ms {
		if m.Archived != "" || m.Size <= segSize {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			out[i] = p.storedPlain(ctx, bucket, m)
			<-sem
		}()
	}
	wg.Wait()
	return out
}

// addMember packs m, cut into segments when seg says so.
func (p *planner) addMember(ctx context.Context, m Member, seg bool, pk *packer, st *PlanStats) error {
	if seg {
		segs := segments(m, max(p.cfg.SplitTargetBytes, minSegmentBytes))
		st.Segments += int64(len(segs))
		metricSegmentsPlanned.Inc(ctx, int64(len(segs)))
		for _, s := range segs {
			if err := pk.add(s); err != nil {
				return err
			}
		}
		return nil
	}
	return pk.add(m)
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
// without a compressed extension is probed for magic bytes with a pinned GET of its first bytes; if
// the probe fails the object stays whole, and its read reports the real problem.
func (p *planner) storedPlain(ctx context.Context, bucket string, o Member) bool {
	mode := decode.Compression(p.cfg.Compression)
	if decode.Detect(mode, o.Key, nil) != decode.None {
		return false // forced, or named by its extension
	}
	if mode == decode.None {
		return true
	}
	head, err := fetch.NewGets(p.client, bucket, p.cfg.fetchSettings()).ReadPrefix(ctx, o.object(), decode.MagicLen)
	return err == nil && decode.Detect(decode.Auto, o.Key, head) == decode.None
}

// Plan lists cfg's prefix once and returns a PCollection<SplitDescriptor>: the objects
// under it that Match, StartAfter and the time window select, sorted by key and packed into
// descriptors of about cfg.SplitTargetBytes. An uncompressed object larger than that,
// framed by lines or ndjson, is cut into segments that are read in parallel; other objects
// stay whole. Listing runs on a worker when the pipeline runs, with the worker's AWS
// credentials, cfg.ListParallelism requests at a time, and descriptors leave the planner as
// their key range is listed. Replanning an unchanged prefix yields the same descriptors and
// IDs, whatever the parallelism.
//
// It panics if cfg does not validate.
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
// job, naming it. This is how s3io reads what another transform lists or computes.
//
// It panics if cfg does not validate.
func PlanAll(s beam.Scope, cfg Config, urls beam.PCollection) beam.PCollection {
	return planAll(s, readingConfig(cfg), urls)
}

// planAll plans the URLs; cfg is prepared.
func planAll(s beam.Scope, cfg Config, urls beam.PCollection) beam.PCollection {
	return beam.ParDo(s.Scope("s3io.PlanAll"), &planFn{Cfg: cfg}, urls)
}
