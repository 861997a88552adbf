package s3io

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"hash"
)

// PackingVersion names the planner's packing algorithm. It is digested into every split ID,
// so a change to how objects are packed can never make a new split collide with an old one.
const PackingVersion = "s3io-pack-v1"

// Member is one object of a split descriptor, as the planner listed it.
type Member struct {
	Key  string
	Size int64
	// ETag is the object's entity tag as listed, quotes included; every read of the object
	// is pinned to it with If-Match.
	ETag string
}

// SplitDescriptor is one unit of planned work: a batch of whole objects, self-contained so
// that readers never list. It is the element type of the PCollection Plan returns.
type SplitDescriptor struct {
	// ID is SplitID(Bucket, Members): equal descriptors have equal IDs across replans, and a
	// changed object (new ETag) changes the ID of the split it falls in.
	ID      string
	Bucket  string
	Members []Member
}

// Size returns the total stored bytes of d's members.
func (d SplitDescriptor) Size() int64 {
	var n int64
	for _, m := range d.Members {
		n += m.Size
	}
	return n
}

// SplitID returns the deterministic ID of a split of bucket holding members: the hex SHA-256
// of PackingVersion, the bucket and every member's key and ETag, in order. Lengths are
// digested before each string so that no two member lists share an ID by concatenation.
func SplitID(bucket string, members []Member) string {
	h := sha256.New()
	writeString(h, PackingVersion)
	writeString(h, bucket)
	for _, m := range members {
		writeString(h, m.Key)
		writeString(h, m.ETag)
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

func writeString(h hash.Hash, s string) {
	var n [binary.MaxVarintLen64]byte
	h.Write(n[:binary.PutUvarint(n[:], uint64(len(s)))])
	h.Write([]byte(s))
}
