package s3io

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"

	"github.com/spate-io/beam-s3/s3io/internal/member"
)

// PackingVersion names the planner's packing algorithm. It is digested into every split ID,
// so a change to how objects are packed can never make a new split collide with an old one.
const PackingVersion = "s3io-pack-v4"

// Member is one object of a split descriptor, as the planner listed it, or one segment of a
// large object (uncompressed, or compressed in units the planner proved; see Codec).
type Member struct {
	Key  string
	Size int64
	// ETag is the object's entity tag as listed, quotes included; every read of the object
	// is pinned to it with If-Match.
	ETag string
	// VersionID is the object version the plan read the key at (Config.Versions): every
	// read of it asks for that version. Empty for a plan of current objects.
	VersionID string
	// Start and End delimit a segment (Config.SplitTargetBytes says which objects have
	// them): the member owns the records that start at a byte offset in [Start, End). Both
	// zero means the whole object.
	Start, End int64
	// Codec, for a segment of a compressed object, names its compression ("gzip", "zstd",
	// "bzip2"): Start and End are stored offsets of unit starts (gzip members, zstd frames,
	// bzip2 streams) the planner proved, and the segment owns the records that start after
	// its first unit's first byte (or at it, for the first segment) and at or before the
	// next segment's. Empty for an uncompressed segment and a whole object.
	Codec string
	// Archived is the archive storage class (GLACIER, DEEP_ARCHIVE) the listing showed the
	// object in, not restored; empty for an object that can be read. Such a member is
	// reported as a Failure with reason "archived" without a request. It is not part of the
	// split ID: restoring an object does not change what it holds.
	Archived string
}

// plan is what reading m plans, resuming where h says.
func (m Member) plan(h resumeHint) member.Plan {
	return member.Plan{Key: m.Key, Size: m.Size, Start: m.Start, End: m.End, Codec: m.Codec, Resume: h}
}

// span returns the byte range whose records m owns.
func (m Member) span() (start, end int64) { return m.plan(resumeHint{}).Span() }

// whole reports whether m is all of its object, not a segment of it.
func (m Member) whole() bool { return !m.plan(resumeHint{}).IsPart() }

// endsObject reports whether m holds its object's last bytes: all of it, or its last segment.
func (m Member) endsObject() bool {
	_, end := m.span()
	return end == m.Size
}

// weight is m's share of the object's stored bytes: what reading it costs.
func (m Member) weight() int64 {
	start, end := m.span()
	return end - start
}

// SplitDescriptor is one unit of planned work: a batch of objects (or one segment of a
// large one), self-contained so that readers never list. It is the element type of the PCollection Plan returns.
type SplitDescriptor struct {
	// ID digests PackingVersion, Bucket and every member's key, ETag, version ID and byte range: equal
	// descriptors have equal IDs across replans, and a changed object (new ETag) changes the
	// ID of the split it falls in.
	ID      string
	Bucket  string
	Members []Member
	// PlanObjects and PlanBytes are the totals of the whole plan the descriptor belongs to,
	// its objects and their stored bytes (PlanStats.Objects and Bytes), so that a worker
	// reading it can say how much of the plan its reads are: they travel with the work
	// because a worker sees nothing else of the plan. Both are zero when the planner did not
	// know them yet: it holds a plan's descriptors until its listing ends, and sends those
	// of a plan too large to hold as they are packed, the last one excepted (Plan says
	// when); ReadContinuously's have none. They are not digested into ID: the same objects
	// keep their descriptor's ID in a plan that grew or shrank elsewhere. Except passes
	// them on as they are: the totals stay the whole plan's.
	PlanObjects, PlanBytes int64
}

// ref names member m of d.
func (d SplitDescriptor) ref(m int) ObjectRef {
	mb := &d.Members[m]
	return ObjectRef{SplitID: d.ID, Bucket: d.Bucket, Key: mb.Key, ETag: mb.ETag, VersionID: mb.VersionID, Member: m}
}

// Size returns the stored bytes d's members own (a segment counts its own range).
func (d SplitDescriptor) Size() int64 {
	var n int64
	for _, m := range d.Members {
		n += m.weight()
	}
	return n
}

// splitID returns the deterministic ID of a split of bucket holding members: the hex SHA-256
// (first 16 bytes) of PackingVersion, the bucket and every member's key, ETag, version ID,
// byte range and codec, in order. Lengths are digested before each string so that no two
// member lists share an ID by concatenation. A versioned member's ETag length carries
// versionedETag, which no ETag's length has, and its version ID follows the ETag: a plan of
// current objects keeps the IDs it had before versions could be planned, and no versioned
// member digests like an unversioned one.
func splitID(bucket string, members []Member) string {
	// One buffer hashed at once: writing each field to a hash.Hash would allocate for
	// every field (the interface call makes the bytes escape).
	n := len(PackingVersion) + len(bucket) + 2*binary.MaxVarintLen64
	for _, m := range members {
		n += len(m.Key) + len(m.ETag) + len(m.VersionID) + len(m.Codec) + 6*binary.MaxVarintLen64
	}
	b := make([]byte, 0, n)
	b = appendString(b, PackingVersion)
	b = appendString(b, bucket)
	for _, m := range members {
		b = appendString(b, m.Key)
		if m.VersionID == "" {
			b = appendString(b, m.ETag)
		} else {
			b = binary.AppendUvarint(b, uint64(len(m.ETag))|versionedETag)
			b = appendString(append(b, m.ETag...), m.VersionID)
		}
		start, end := m.span()
		b = binary.AppendUvarint(b, uint64(start))
		b = binary.AppendUvarint(b, uint64(end))
		b = appendString(b, m.Codec)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}

// versionedETag marks the ETag length of a member with a version ID in its split's digest.
const versionedETag = 1 << 62

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}
