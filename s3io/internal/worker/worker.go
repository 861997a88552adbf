// Package worker holds what the DoFn instances of one worker process share, whichever
// instance made it: the S3 clients' retryers and rate limiters, the part pools, the reader
// instances that report what their fetchers transferred. Each lives in a Shared or a Set
// keyed by a struct of what makes two instances share it, so that keys compare field by
// field instead of being formatted into strings, and no registry repeats the lock, the
// lazily made map and the reference count.
package worker

import (
	"slices"
	"sync"
)

// Shared holds one value per key for the worker process, made on first use.
type Shared[K comparable, V any] struct {
	mu sync.Mutex
	m  map[K]*held[V]
}

type held[V any] struct {
	v    V
	refs int
}

// get returns k's entry, made with make if there is none; s.mu is held.
func (s *Shared[K, V]) get(k K, make func() V) *held[V] {
	if s.m == nil {
		s.m = map[K]*held[V]{}
	}
	h := s.m[k]
	if h == nil {
		h = &held[V]{v: make()}
		s.m[k] = h
	}
	return h
}

// Get returns k's value, made with make on its first use; it lives as long as the process.
func (s *Shared[K, V]) Get(k K, make func() V) V {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.get(k, make).v
}

// Acquire returns k's value, made with make on first use, and the function that gives it
// back (once, however often it is called): when its last holder gives it back, free is
// called with it, and the next Acquire makes a new one.
func (s *Shared[K, V]) Acquire(k K, make func() V, free func(V)) (V, func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.get(k, make)
	h.refs++
	var once sync.Once
	return h.v, func() {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			if h.refs--; h.refs == 0 {
				delete(s.m, k)
				free(h.v)
			}
		})
	}
}

// Set holds the worker's values by key, several per key, in the order added.
type Set[K comparable, V comparable] struct {
	mu sync.Mutex
	m  map[K][]V
}

// Add adds v under k.
func (s *Set[K, V]) Add(k K, v V) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[K][]V{}
	}
	s.m[k] = append(s.m[k], v)
}

// Remove removes v from under k, if it is there.
func (s *Set[K, V]) Remove(k K, v V) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.m[k]
	if i := slices.Index(l, v); i >= 0 {
		l = slices.Delete(l, i, i+1)
	}
	if len(l) == 0 {
		delete(s.m, k)
		return
	}
	s.m[k] = l
}

// Of returns a copy of the values under k.
func (s *Set[K, V]) Of(k K) []V {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.m[k])
}
