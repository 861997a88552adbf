package s3io

import (
	"bytes"
	"context"
	"io"
	"iter"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/sdf"

	"github.com/spate-io/beam-s3/s3io/internal/member"
)

// RecordBatch is consecutive records of one object, in order, as ReadBatches emits them:
// Record(i) is the record whose identity is (SplitID, Member, Index+i), the same in every
// run over the same plan, as ReadWithPositions' Record. A batch never spans two objects,
// nor two entries of an archive.
//
// The records lie back to back in Data, which is the batch's own: a batch and its records
// may be kept downstream as long as needed, and are never written again. Data and Ends are
// the layout of a columnar binary array (Arrow's, with the leading 0 left out), so a
// columnar step takes them as they are; Record and All hand out the records one by one
// without copying.
type RecordBatch struct {
	SplitID string
	Key     string
	Member  int
	// Index is the index of the batch's first record among the object's records.
	Index int64
	// Entry names the archive entry (tar or zip) the records came from; "" outside
	// archives. Indexes run on across an archive's entries.
	Entry string
	// Data holds the records back to back, with no separators between them.
	Data []byte
	// Ends[i] is the offset in Data just past record i, which starts where record i-1
	// ends (record 0 at 0). A batch holds at most 1 GiB (Config.BatchBytes, or one record
	// of at most Config.MaxRecordBytes).
	Ends []int32
}

// Len is the number of records in b.
func (b RecordBatch) Len() int { return len(b.Ends) }

// Record returns record i of b, 0 ≤ i < b.Len(), as a sub-slice of b.Data capped at its
// end, so that appending to it copies instead of writing over the next record.
func (b RecordBatch) Record(i int) []byte {
	start := int32(0)
	if i > 0 {
		start = b.Ends[i-1]
	}
	return b.Data[start:b.Ends[i]:b.Ends[i]]
}

// All yields each record of b with its index among the object's records (b.Index + i),
// as Record does.
func (b RecordBatch) All() iter.Seq2[int64, []byte] {
	return func(yield func(int64, []byte) bool) {
		start := int32(0)
		for i, end := range b.Ends {
			if !yield(b.Index+int64(i), b.Data[start:end:end]) {
				return
			}
			start = end
		}
	}
}

// ReadBatches is Read emitting a PCollection<RecordBatch>: the same records, in batches of
// consecutive records of one object of at most Config.BatchRecords records and
// Config.BatchBytes bytes. Beam's cost is per element, so a next step that takes records in
// bulk (a bulk writer, a count, a columnar conversion, a batched RPC) reads several times
// faster in batches; a per-record DoFn gains nothing (docs/performance.md, "Batches").
//
// A runner splits and checkpoints between batches; a batch cut by a split ends at the split
// point. The job fails after reading if any object was quarantined, as with Read. It panics
// if cfg does not validate.
func ReadBatches(s beam.Scope, cfg Config) beam.PCollection {
	s = s.Scope("s3io.ReadBatches")
	batches, failures := readPrefix(s, prepare(cfg), outBatches)
	failOnFailures(s, failures)
	return batches
}

// ReadBatchesWithFailures is ReadBatches returning the quarantined objects as a
// PCollection<Failure> instead of failing the job. The batches of an object read before it
// failed are kept.
func ReadBatchesWithFailures(s beam.Scope, cfg Config) (batches, failures beam.PCollection) {
	return readPrefix(s.Scope("s3io.ReadBatchesWithFailures"), prepare(cfg), outBatches)
}

// ReadSplitBatches is ReadSplits emitting a PCollection<RecordBatch>, as ReadBatches does.
// cfg.Bucket and cfg.Prefix are not used. It panics if cfg does not validate.
func ReadSplitBatches(s beam.Scope, cfg Config, descriptors beam.PCollection) beam.PCollection {
	batches, failures := readSplits(s, readingConfig(cfg), descriptors, outBatches)
	failOnFailures(s, failures)
	return batches
}

// ReadSplitBatchesWithFailures is ReadSplitBatches returning the quarantined objects as a
// PCollection<Failure> instead of failing the job.
func ReadSplitBatchesWithFailures(s beam.Scope, cfg Config, descriptors beam.PCollection) (batches, failures beam.PCollection) {
	return readSplits(s, readingConfig(cfg), descriptors, outBatches)
}

// readBatchesFn emits records in RecordBatches.
type readBatchesFn struct{ reader }

func (fn *readBatchesFn) Setup(ctx context.Context) error {
	fn.copiesRecords = true
	return fn.reader.Setup(ctx)
}

func (fn *readBatchesFn) ProcessElement(ctx context.Context, rt *sdf.LockRTracker, d SplitDescriptor, emit func(RecordBatch), fail func(Failure)) error {
	return fn.readRestriction(ctx, rt, d, fn.emitBatches(d, emit), fail)
}

func (fn *readBatchesFn) FinishBundle(ctx context.Context, _ func(RecordBatch), _ func(Failure)) {
	fn.finishBundle(ctx)
}

// batcher gathers the records of one member into batches, claims each with one claimRun
// and emits the granted prefix. The pending record slices point into the framer's slabs,
// which are never written again, so they stay valid after their member.Batch is recycled.
type batcher struct {
	d                 SplitDescriptor
	emit              func(RecordBatch)
	maxRecs, maxBytes int
	hint              bool // the framer resumes at byte offsets: claims carry end offsets

	m             int
	owned         int64 // the last record of m claimed: the member's opening claim took the first
	storedOffsets bool
	log           *member.Log // the resume points of m's read
	emitted       int64

	recs         [][]byte
	ends, stored []int64
	start        int64 // index of recs[0]
	entry        string
	bytes        int
	claim        runClaim
}

func (fn *reader) newBatcher(d SplitDescriptor, emit func(RecordBatch)) *batcher {
	n := fn.Cfg.BatchRecords
	return &batcher{d: d, emit: emit, maxRecs: n, maxBytes: fn.Cfg.BatchBytes, hint: fn.resumable,
		recs: make([][]byte, 0, min(n, 4096)), ends: make([]int64, 0, min(n, 4096)), stored: make([]int64, 0, min(n, 4096))}
}

// open starts member m, whose record first the caller has claimed.
func (b *batcher) open(m int, first int64) {
	b.m, b.owned, b.emitted = m, first, 0
	b.reset()
}

func (b *batcher) reset() {
	b.recs, b.ends, b.stored, b.bytes = b.recs[:0], b.ends[:0], b.stored[:0], 0
}

// add appends record idx (the record after the last one added), framed from entry, ending
// at stream offset end when the decoder had taken stored bytes; it flushes first when rec
// would not fit the batch, and after when the batch is full. It reports whether a claim was
// cut short: the reader must stop.
func (b *batcher) add(rt *sdf.LockRTracker, idx int64, entry string, rec []byte, end, stored int64) (cut bool) {
	if len(b.recs) > 0 && (b.entry != entry || b.bytes+len(rec) > b.maxBytes) {
		if b.flush(rt) {
			return true
		}
	}
	if len(b.recs) == 0 {
		b.start, b.entry = idx, entry
	}
	b.recs = append(b.recs, rec)
	b.ends = append(b.ends, end)
	b.stored = append(b.stored, stored)
	b.bytes += len(rec)
	if len(b.recs) >= b.maxRecs || b.bytes >= b.maxBytes {
		return b.flush(rt)
	}
	return false
}

// flush claims the pending records and emits the prefix granted as one batch; it reports
// whether the claim was cut short.
func (b *batcher) flush(rt *sdf.LockRTracker) (cut bool) {
	n := len(b.recs)
	if n == 0 {
		return false
	}
	skip := int(min(max(b.owned-b.start+1, 0), int64(n))) // claimed already: the opening claim
	granted := skip
	if skip < n {
		c := &b.claim
		*c = runClaim{Member: b.m, From: b.start + int64(skip), Ends: b.ends[skip:], Stored: b.stored[skip:], Hint: b.hint, StoredOffsets: b.storedOffsets, Log: b.log}
		granted += claimRunLocked(rt, c)
	}
	if granted > 0 {
		b.emit(copyBatch(b.d, b.m, b.start, b.entry, b.recs[:granted]))
		b.emitted += int64(granted)
		workerProgress.records.Add(int64(granted))
		b.owned = b.start + int64(granted) - 1
	}
	b.reset()
	return granted < n
}

// emitBatches is the memberEmitter of ReadBatches. It hands a batch on early when the next
// framed records are not ready, so that what was framed is claimed, emitted and counted as
// progress while the reader waits: a stalled GET must not hold back records that a
// checkpoint would otherwise leave to a residual to read again.
func (fn *reader) emitBatches(d SplitDescriptor, emit func(RecordBatch)) memberEmitter {
	bt := fn.newBatcher(d, emit)
	// held are the slabs earlier framer batches retired: once no record of those batches
	// is pending (none is, or the pending ones all come from the current batch), every
	// record in them was copied out. cur are the current batch's own, which its records
	// still being added may live in.
	var held, cur [][]byte
	return func(ctx context.Context, rt *sdf.LockRTracker, rd *restrictionRead, mr *memberRead, first int64, mc *memberCount) (bool, error) {
		idx := mc.next
		bt.open(mr.m, first)
		defer func() {
			mc.next, mc.emitted = idx, bt.emitted
			// What was not copied is dropped: nothing reads them now.
			member.ReleaseSlabs(held)
			member.ReleaseSlabs(cur)
			held, cur = held[:0], nil
		}()
		for {
			b := mr.r.Next()
			mr.framed(b)
			from := idx // the index of b's first record
			cur = b.Retired
			bt.storedOffsets, bt.log = mr.r.StoredOffsets(), mr.r.Log()
			for i, rec := range b.Records {
				if idx < first {
					mc.skipped, mc.skippedEnd = mc.skipped+1, b.Ends[i]
					idx++
					continue
				}
				if bt.add(rt, idx, b.Entries[i], rec, b.Ends[i], b.Consumed) {
					idx = bt.owned + 1
					return true, nil
				}
				if len(held) > 0 && (len(bt.recs) == 0 || bt.start >= from) {
					member.ReleaseSlabs(held)
					held = held[:0]
				}
				idx++
			}
			if (b.Err != nil || !mr.r.Ready()) && bt.flush(rt) {
				idx = bt.owned + 1
				return true, nil
			}
			switch {
			case b.Err == io.EOF:
				return false, nil
			case b.Err != nil:
				return false, b.Err
			}
			held, cur = append(held, cur...), nil
			if len(bt.recs) == 0 {
				member.ReleaseSlabs(held)
				held = held[:0]
			}
			mr.r.Recycle(b)
			rd.followSplit(ctx, rt)
		}
	}
}

// claimRunLocked claims c on rt's tracker under rt's mutex, so that no TrySplit can run
// between choosing the granted prefix and recording it.
func claimRunLocked(rt *sdf.LockRTracker, c *runClaim) int {
	rt.Mu.Lock()
	defer rt.Mu.Unlock()
	return rt.Rt.(*tracker).claimRun(c) // CreateTracker makes every tracker a *tracker
}

// copyBatch returns recs, the records from index start of member m, as a RecordBatch that
// owns a copy of them: two allocations per batch, both free of pointers (nothing for the
// collector to scan), none per record, and nothing downstream keeps a framer's slab alive.
func copyBatch(d SplitDescriptor, m int, start int64, entry string, recs [][]byte) RecordBatch {
	data := bytes.Join(recs, nil) // allocated without zeroing: every byte is written
	ends := make([]int32, len(recs))
	off := int32(0)
	for i, r := range recs {
		off += int32(len(r))
		ends[i] = off
	}
	return RecordBatch{SplitID: d.ID, Key: d.Members[m].Key, Member: m, Index: start, Entry: entry, Data: data, Ends: ends}
}
