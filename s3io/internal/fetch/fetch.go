// Package fetch reads the bytes of planned S3 objects: pinned GETs (If-Match on the planned
// ETag, every answer checked against its request, broken bodies resumed from the next
// byte), and a Fetcher that keeps ranged parts of a reader's objects in flight within the
// byte bound of one part Pool.
package fetch

import "time"

// Object is one object as the planner listed it: every read of it is pinned to ETag.
type Object struct {
	Key  string
	ETag string // quotes included, as listed
	// VersionID, when set, is the version every request asks for (as well as ETag).
	VersionID string
	Size      int64
}

// Settings are what the reads of one reader follow.
type Settings struct {
	// ReadTimeout is how long a body may send nothing before its request is abandoned and
	// resumed.
	ReadTimeout time.Duration
	// MaxAttempts bounds the requests that resume one read's broken bodies.
	MaxAttempts int
	// VerifyChecksums checks every read of a whole object against its stored checksum:
	// its parts are hashed as they are fetched and their values combined in order
	// (internal/checksum), against the value one lookup per object finds (stored.go).
	VerifyChecksums bool
	// PartBytes is the size of the ranged GETs a Fetcher cuts objects into.
	PartBytes int64
	// MaxRequestsInFlight bounds a Fetcher's concurrent GETs.
	MaxRequestsInFlight int
}

// Stats are what a Fetcher's requests transferred.
type Stats struct {
	Gets      int64 // GET requests made
	Resumes   int64 // GETs that resumed a broken body
	Received  int64 // body bytes received
	Cancelled int64 // parts whose requests a drop or a split cancelled
	Dropped   int64 // bytes fetched and then dropped unread
	// RangeIgnored counts ranged GETs the server answered with the whole object (200): read
	// correctly, at the cost of the object's bytes before the range (counted in Received).
	RangeIgnored int64
	// With Settings.VerifyChecksums: the requests that looked stored checksums up; the
	// objects whose every byte matched theirs; the objects read to their end with none
	// stored; and the reads that could not be checked (part of an object).
	ChecksumLookups, ChecksumsVerified, ChecksumsMissing, ChecksumsUnchecked int64
}

// Since returns what was transferred after s0 was taken.
func (s Stats) Since(s0 Stats) Stats {
	return s.Plus(s0.neg())
}

func (s Stats) neg() Stats {
	return Stats{Gets: -s.Gets, Resumes: -s.Resumes, Received: -s.Received, Cancelled: -s.Cancelled, Dropped: -s.Dropped,
		RangeIgnored: -s.RangeIgnored, ChecksumLookups: -s.ChecksumLookups, ChecksumsVerified: -s.ChecksumsVerified,
		ChecksumsMissing: -s.ChecksumsMissing, ChecksumsUnchecked: -s.ChecksumsUnchecked}
}

// Plus returns the sum of s and t.
func (s Stats) Plus(t Stats) Stats {
	return Stats{Gets: s.Gets + t.Gets, Resumes: s.Resumes + t.Resumes, Received: s.Received + t.Received,
		Cancelled: s.Cancelled + t.Cancelled, Dropped: s.Dropped + t.Dropped, RangeIgnored: s.RangeIgnored + t.RangeIgnored,
		ChecksumLookups: s.ChecksumLookups + t.ChecksumLookups, ChecksumsVerified: s.ChecksumsVerified + t.ChecksumsVerified,
		ChecksumsMissing: s.ChecksumsMissing + t.ChecksumsMissing, ChecksumsUnchecked: s.ChecksumsUnchecked + t.ChecksumsUnchecked}
}
