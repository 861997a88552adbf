package s3io

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"sync/atomic"
	"testing"

	"github.com/spate-io/beam-s3/internal/s3test"
)

var nameSeq atomic.Int64

func uniqueName(prefix string) string {
	return fmt.Sprintf("%s-%d-%d", prefix, nameSeq.Add(1), rand.Int64())
}

func panics(f func()) (msg any) {
	defer func() { msg = recover() }()
	f()
	return nil
}

func TestRegisterFramer(t *testing.T) {
	name := uniqueName("framer-test-custom")
	if _, ok := lookupFramer(name); ok {
		t.Fatalf("%q registered before the test", name)
	}
	if err := (Config{Bucket: "my-bucket", Framer: name}).Validate(); err == nil {
		t.Fatalf("Validate accepted unregistered framer %q", name)
	}
	commas := func() RecordFramer {
		return FramerFunc(func(data []byte, atEOF bool) (int, []byte, error) {
			if i := bytes.IndexByte(data, ','); i >= 0 {
				return i + 1, data[:i:i], nil
			}
			if atEOF && len(data) > 0 {
				return len(data), data[:len(data):len(data)], nil
			}
			return 0, nil, nil
		})
	}
	RegisterFramer(name, commas)
	newF, ok := lookupFramer(name)
	if !ok {
		t.Fatalf("lookupFramer(%q) after RegisterFramer: not found", name)
	}
	got, err := s3test.FrameAll(t, newF(), []byte("a,b,,c"))
	if err != nil || !reflect.DeepEqual(got, []string{"a", "b", "", "c"}) {
		t.Errorf("custom framer = %q, %v", got, err)
	}
	if err := (Config{Bucket: "my-bucket", Framer: name}).Validate(); err != nil {
		t.Errorf("Validate with registered framer %q: %v", name, err)
	}
	found := false
	for _, n := range framerNames() {
		found = found || n == name
	}
	if !found {
		t.Errorf("framerNames() = %v, missing %q", framerNames(), name)
	}

	// Duplicates panic, including the built-in names, and leave the registration alone.
	for _, dup := range []string{name, "lines", "ndjson", "u32be"} {
		if panics(func() { RegisterFramer(dup, commas) }) == nil {
			t.Errorf("RegisterFramer(%q) twice did not panic", dup)
		}
	}
	if f, _ := lookupFramer("lines"); f == nil {
		t.Fatal("lines framer lost")
	} else if got, _ := s3test.FrameAll(t, f(), []byte("a,b\nc")); !reflect.DeepEqual(got, []string{"a,b", "c"}) {
		t.Errorf("lines framer replaced by a duplicate registration: %q", got)
	}

	if panics(func() { RegisterFramer("", commas) }) == nil {
		t.Error("RegisterFramer(\"\") did not panic")
	}
	if _, ok := lookupFramer(""); ok {
		t.Error("empty name registered")
	}
	nilName := uniqueName("framer-test-nil")
	if panics(func() { RegisterFramer(nilName, nil) }) == nil {
		t.Error("RegisterFramer with a nil constructor did not panic")
	}
	if _, ok := lookupFramer(nilName); ok {
		t.Error("nil constructor registered")
	}
}
