package checksum

import (
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
)

// Type is how a stored checksum covers its object (x-amz-checksum-type).
type Type string

// The checksum types S3 stores.
const (
	// FullObject: the value is the algorithm's checksum of the whole object, whether it
	// was uploaded whole or in parts.
	FullObject Type = "FULL_OBJECT"
	// Composite: the object was uploaded in N parts and the value, "<base64>-N", is the
	// algorithm's checksum of the parts' checksums, each as its big-endian bytes, in
	// part order.
	Composite Type = "COMPOSITE"
)

// Stored is the checksum S3 stores for one object.
type Stored struct {
	Algorithm Algorithm
	Type      Type
	// Value is the value as S3 carries it: base64, with "-N" after a composite's.
	Value string
	// Parts are a composite object's upload parts in order, each with its stored value
	// where the server gives one ("" where not: the composite value then checks them).
	Parts []Part
}

// Part is one part of a multipart upload.
type Part struct {
	Size  int64
	Value string
}

// PartCount returns the N of a composite value "<base64>-N", or 0.
func (s *Stored) PartCount() int {
	i := strings.LastIndexByte(s.Value, '-')
	if s.Type != Composite || i < 0 {
		return 0
	}
	n, err := strconv.Atoi(s.Value[i+1:])
	if err != nil || n < 1 {
		return 0
	}
	return n
}

// Check reports whether s can be verified over an object of size bytes: a value of its
// algorithm's size, and for a composite one its parts' sizes, adding up to size.
func (s *Stored) Check(size int64) error {
	value := s.Value
	if s.Type == Composite {
		value = value[:max(strings.LastIndexByte(value, '-'), 0)]
	}
	if b, err := base64.StdEncoding.DecodeString(value); err != nil || s.Algorithm.Size() == 0 || len(b) != s.Algorithm.Size() {
		return fmt.Errorf("checksum: %q is not a %s value", s.Value, s.Algorithm)
	}
	if s.Type != Composite {
		return nil
	}
	n := s.PartCount()
	if n == 0 {
		return fmt.Errorf("checksum: composite value %q names no part count", s.Value)
	}
	if len(s.Parts) != n {
		return fmt.Errorf("checksum: composite value %q names %d parts, %d known", s.Value, n, len(s.Parts))
	}
	var total int64
	for _, p := range s.Parts {
		total += p.Size
	}
	if total != size {
		return fmt.Errorf("checksum: %d parts of %d bytes in an object of %d", n, total, size)
	}
	return nil
}

// Ends returns the object offsets where a composite object's parts end, nil for a
// full-object checksum: the offsets that hashing must cut pieces at.
func (s *Stored) Ends() []int64 {
	if s.Type != Composite {
		return nil
	}
	ends := make([]int64, len(s.Parts))
	var at int64
	for i, p := range s.Parts {
		at += p.Size
		ends[i] = at
	}
	return ends
}
