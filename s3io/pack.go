package s3io

import (
	"math"
	"slices"
)

// packer packs a key-sorted stream of members into descriptors at content-defined
// boundaries, so that a replan of a prefix that changed a little keeps almost every ID: a
// cut falls after an *anchor*, a member chosen by a hash of its key, never by where the
// previous descriptor happened to end. Greedy packing, where each cut depends on the last,
// would let one object added near the start of a prefix move every later boundary.
//
// The rule, in units of the target size T (a member weighs max(size/T, 2/maxMembers), so
// that many tiny objects also reach a cut):
//   - Every member cut from a large object is a descriptor of its own (a compressed
//     object's are packed in runs: addRun).
//   - A whole member of T bytes or more weighs at least 1, so it is always an anchor and
//     always cuts: it ends the descriptor it joins, after the smaller members since the
//     last cut.
//   - Any other member is an anchor when the hash of its key, as a fraction of 2^64, is below
//     e times its weight: anchors fall on average every T/e of weight.
//   - The packer cuts after an anchor when the weight since the anchor before it (or since a
//     member of its own) is at least T/e. Skipping anchors that follow closely bounds
//     descriptors below by T/e while keeping every decision local: whether to cut after a
//     member depends on the members since the previous anchor only. The mean descriptor then
//     weighs T (e^α·T/e with α = 1).
//   - Bounds: a descriptor is also cut before it would pass 4T bytes (maxTargetMultiple) or
//     maxMembers members. Only these forced cuts depend on where the descriptor began, and
//     the next anchor cut resynchronises.
//
// So adding, removing or changing one member moves at most the anchor decisions at its own
// anchor and the next one: the descriptor that holds it and at most one neighbour change
// IDs, unless a forced cut lies between the edit and the next anchor cut.
//
// The packer holds one descriptor at a time, so planning memory does not grow with the
// listing.
type packer struct {
	bucket     string
	target     int64
	maxMembers int
	emit       func(SplitDescriptor) error

	cur      []Member
	curBytes int64
	// gap is the weight since the last anchor or cut-out member, whatever the cuts.
	gap float64
}

// maxTargetMultiple bounds a descriptor of several members at this many times the target.
const maxTargetMultiple = 4

func (p *packer) add(m Member) error {
	w := m.weight()
	if !m.whole() {
		if err := p.flush(); err != nil {
			return err
		}
		p.cur, p.curBytes, p.gap = append(p.cur, m), w, 0
		return p.flush()
	}
	if len(p.cur) > 0 && (len(p.cur) >= p.maxMembers || p.curBytes+w > maxTargetMultiple*p.target) {
		if err := p.flush(); err != nil {
			return err
		}
	}
	p.cur = append(p.cur, m)
	p.curBytes += w
	u := memberWeight(w, p.target, p.maxMembers)
	p.gap += u
	if anchorPoint(m.Key) < u*math.E {
		cut := p.gap >= 1/math.E
		p.gap = 0
		if cut {
			return p.flush()
		}
	}
	return nil
}

// memberWeight is a member's share of a target-sized descriptor: its bytes, or, for small
// objects, at least 2/maxMembers, so that descriptors of tiny objects average half the
// member bound instead of always hitting it.
func memberWeight(size, target int64, maxMembers int) float64 {
	return max(float64(size)/float64(target), 2/float64(max(maxMembers, 1)))
}

// anchorPoint maps a key to a uniform point in [0, 1): FNV-1a over the key's bytes, then
// MurmurHash3's 64-bit finalizer so that keys differing in their last bytes (part-0001,
// part-0002) land far apart. Both are fixed here, so the point of a key never changes with
// the Go version or the process; the packer's cost stays a few nanoseconds a key.
func anchorPoint(key string) float64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(key); i++ {
		h ^= uint64(key[i])
		h *= 1099511628211
	}
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return float64(h>>11) / (1 << 53)
}

func (p *packer) flush() error {
	if len(p.cur) == 0 {
		return nil
	}
	// The descriptor gets an exact-size copy and p.cur keeps its capacity: appending to a
	// fresh slice per descriptor would copy each member several times as it grew.
	ms := slices.Clone(p.cur)
	d := SplitDescriptor{ID: splitID(p.bucket, ms), Bucket: p.bucket, Members: ms}
	clear(p.cur)
	p.cur, p.curBytes = p.cur[:0], 0
	return p.emit(d)
}
