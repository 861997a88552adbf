package fetch

import (
	"fmt"

	"github.com/spate-io/beam-s3/s3io/internal/checksum"
)

// ChecksumError is a read whose bytes do not match the object's stored checksum (the
// object is corrupt): what checksum.Mismatch says, with the object.
type ChecksumError struct {
	Bucket, Key, ETag string
	Mismatch          *checksum.Mismatch
}

func (e *ChecksumError) Error() string {
	return fmt.Sprintf("s3://%s/%s (ETag %s): %v", e.Bucket, e.Key, e.ETag, e.Mismatch)
}

func (e *ChecksumError) Unwrap() error { return e.Mismatch }

// objectCheck follows one stream's bytes against its object's stored checksum: the parts'
// pieces, folded in object order. Only an ObjectFetch of a whole object looks its
// checksum up, and its planned parts then cover it (no tail is read past them); a
// stream consumes its parts once, in order, and a resumed body fills its part once.
type objectCheck struct {
	v     *checksum.Verifier   // a CRC's: the parts' pieces
	seq   *checksum.Sequential // a SHA's: the parts' bytes, hashed here in order
	ended bool                 // verified, failed, or known not to be verifiable: nothing more to do
	next  int64                // the object offset the next part must start at
	// settled is set once the object is verified or found corrupt: counted then.
	settled, closed bool
	// finished is set once the stream's read framed every record it wants (Stream.End):
	// only such a read is counted when it closes unverified.
	finished bool
}

// parts folds the pieces of pt, the next part of of, in.
func (c *objectCheck) parts(of *ObjectFetch, pt *part) error {
	if !c.start(of) {
		return nil
	}
	if pt.off != c.next {
		// Not the object's bytes from its first, in order (a stream over parts another
		// stream began): nothing it reads can be checked.
		c.ended = true
		return nil
	}
	c.next += pt.n
	if c.seq != nil {
		err := c.seq.Write(pt.buf)
		return c.result(of, err, c.seq.Done())
	}
	if pt.n == 0 {
		// An empty object: its value is the empty string's.
		return c.add(of, checksum.Piece{})
	}
	for _, pc := range pt.pieces {
		if err := c.add(of, pc); err != nil {
			return err
		}
	}
	return nil
}

// start reports whether of's bytes are being verified; the first call decides (a part's
// lookup ended before its pieces were computed).
func (c *objectCheck) start(of *ObjectFetch) bool {
	if c.ended {
		return false
	}
	if c.v != nil || c.seq != nil {
		return true
	}
	if of.sum == nil || of.sum.wait(of.ctx) != nil || of.sum.st == nil {
		c.ended = true
		return false
	}
	if !of.sum.usable {
		c.ended = true
		return false
	}
	if of.sum.st.Algorithm.Combinable() {
		c.v = checksum.NewVerifier(of.sum.st, of.obj.Size)
	} else {
		c.seq = checksum.NewSequential(of.sum.st, of.obj.Size)
	}
	return true
}

func (c *objectCheck) add(of *ObjectFetch, pc checksum.Piece) error {
	err := c.v.Add(pc)
	return c.result(of, err, c.v.Done())
}

// result ends the check on a mismatch, or counts the object verified once done.
func (c *objectCheck) result(of *ObjectFetch, err error, done bool) error {
	if err != nil {
		c.ended, c.settled = true, true
		return &ChecksumError{Bucket: of.reads().bucket, Key: of.obj.Key, ETag: of.obj.ETag, Mismatch: err.(*checksum.Mismatch)}
	}
	if done {
		c.ended, c.settled = true, true
		of.fetcher().checksumsVerified.Add(1)
	}
	return nil
}

// close counts what the stream's read of its object leaves unverified, when it ends: an
// object read to its end without a stored checksum is missing one; a read of part of an
// object (a segment, a restriction that starts inside it), or of a checksum s3io does not
// compute, is unchecked. A read that stopped before its records' end counts nothing: it
// was dropped (a decoding ahead, or a handover, that no restriction took: a read that
// takes the object again counts it) or it failed (its Failure says so). Counting it
// would report an object verified by a later read as unchecked too.
func (c *objectCheck) close(of *ObjectFetch) {
	if c.closed {
		return
	}
	c.closed = true
	f := of.fetcher()
	switch {
	case !f.set.VerifyChecksums || c.settled || !c.finished:
	case of.sum != nil && isDone(of.sum.done) && of.sum.err == nil && of.sum.st == nil:
		f.checksumsMissing.Add(1)
	default:
		f.checksumsUnchecked.Add(1)
	}
	c.ended = true
}

func isDone(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
