package checksum

import (
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"hash"
)

// Sequential checks one object's bytes, given in object order from its first byte, against
// a stored SHA-1 or SHA-256 checksum. These do not combine across byte ranges, so the
// bytes are hashed in order as the reader takes them, on its goroutine: the parts are
// still fetched in parallel, but the hashing is one stream (the CRCs hash on the
// fetching goroutines, Verifier). A composite value is the hash of the parts' digests.
type Sequential struct {
	st    *Stored
	size  int64
	ends  []int64
	pos   int64
	part  int
	h     hash.Hash // the current part's bytes (the object's, for a full-object checksum)
	outer hash.Hash // the parts' digests, for a composite checksum
}

// NewSequential returns the checker of an object of size bytes, whose stored SHA-1 or
// SHA-256 checksum st passed st.Check(size).
func NewSequential(st *Stored, size int64) *Sequential {
	newHash := sha256.New
	if st.Algorithm == SHA1 {
		newHash = sha1.New
	}
	s := &Sequential{st: st, size: size, ends: st.Ends(), h: newHash()}
	if st.Type == Composite {
		s.outer = newHash()
	}
	return s
}

// Write hashes the object's next bytes and checks what they complete.
func (s *Sequential) Write(b []byte) error {
	for {
		n := int64(len(b))
		if s.part < len(s.ends) && s.ends[s.part]-s.pos < n {
			n = s.ends[s.part] - s.pos
		}
		s.h.Write(b[:n])
		s.pos += n
		b = b[n:]
		if err := s.reached(); err != nil || len(b) == 0 {
			return err
		}
	}
}

// reached checks the part or the object that ends at s.pos, if one does.
func (s *Sequential) reached() error {
	if s.st.Type != Composite {
		if s.pos == s.size {
			return s.compare(0, s.st.Value, s.h.Sum(nil))
		}
		return nil
	}
	if s.part >= len(s.ends) || s.pos != s.ends[s.part] {
		return nil
	}
	digest := s.h.Sum(nil)
	if want := s.st.Parts[s.part].Value; want != "" {
		if err := s.compare(s.part+1, want, digest); err != nil {
			return err
		}
	}
	s.outer.Write(digest)
	s.h.Reset()
	s.part++
	if s.part == len(s.ends) {
		return s.compare(0, s.st.Value, s.outer.Sum(nil))
	}
	return nil
}

// Done reports whether every byte of the object has been hashed.
func (s *Sequential) Done() bool { return s.pos == s.size }

func (s *Sequential) compare(part int, want string, digest []byte) error {
	computed := base64.StdEncoding.EncodeToString(digest)
	if part == 0 && s.st.Type == Composite {
		computed += fmt.Sprintf("-%d", len(s.ends))
	}
	if computed == want {
		return nil
	}
	return &Mismatch{Algorithm: s.st.Algorithm, Type: s.st.Type, Part: part, Expected: want, Computed: computed}
}
