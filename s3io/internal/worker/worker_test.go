package worker

import (
	"slices"
	"testing"
)

type key struct {
	endpoint string
	n        int
}

// TestSharedGet: one value per key, made once; keys compare by every field.
func TestSharedGet(t *testing.T) {
	var s Shared[key, *int]
	made := 0
	mk := func() *int { made++; v := made; return &v }
	a, b := s.Get(key{"e", 1}, mk), s.Get(key{"e", 1}, mk)
	c := s.Get(key{"e", 2}, mk)
	if a != b || a == c || made != 2 {
		t.Fatalf("Get: %p %p %p after %d makes; want the first two equal, the third apart, 2 makes", a, b, c, made)
	}
}

// TestSharedAcquire: the last holder to give a value back frees it, once, whatever the
// number of calls to its give-back; the next Acquire makes a new one.
func TestSharedAcquire(t *testing.T) {
	var s Shared[int64, *int]
	made, freed := 0, 0
	mk := func() *int { made++; v := made; return &v }
	free := func(*int) { freed++ }
	v1, rel1 := s.Acquire(8, mk, free)
	v2, rel2 := s.Acquire(8, mk, free)
	if v1 != v2 {
		t.Fatal("two holders of one key got different values")
	}
	rel1()
	rel1() // a second call gives back nothing more
	if freed != 0 {
		t.Fatalf("freed %d times while a holder remains", freed)
	}
	rel2()
	if freed != 1 {
		t.Fatalf("freed %d times after the last holder, want 1", freed)
	}
	if v3, rel3 := s.Acquire(8, mk, free); v3 == v1 || made != 2 {
		t.Fatalf("after the last give-back: same value %v, %d makes; want a new one", v3 == v1, made)
	} else {
		rel3()
	}
}

// TestSet: values by key in the order added; Of returns a copy.
func TestSet(t *testing.T) {
	var s Set[string, int]
	s.Add("a", 1)
	s.Add("a", 2)
	s.Add("b", 3)
	got := s.Of("a")
	got[0] = 99
	if want := []int{1, 2}; !slices.Equal(s.Of("a"), want) {
		t.Fatalf("Of(a) = %v, want %v", s.Of("a"), want)
	}
	s.Remove("a", 1)
	s.Remove("a", 7)
	if want := []int{2}; !slices.Equal(s.Of("a"), want) {
		t.Fatalf("after Remove: Of(a) = %v, want %v", s.Of("a"), want)
	}
	s.Remove("a", 2)
	if s.Of("a") != nil || !slices.Equal(s.Of("b"), []int{3}) {
		t.Fatalf("Of(a) = %v, Of(b) = %v", s.Of("a"), s.Of("b"))
	}
}
