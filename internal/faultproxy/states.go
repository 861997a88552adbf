package faultproxy

import (
	"fmt"
	"maps"
	"slices"
	"sync"
)

// States presents a bucket that changes between listings without depending on when the
// reader lists: a test stores every version of every key under a key of its own before the
// pipeline starts, and the proxy answers the k-th ListObjectsV2 request with the k-th state
// (the last state from then on), in which each listed key is one of those stored versions,
// and forwards each pinned GET of a listed key to the stored version whose ETag it names.
//
// Holding the k-th LIST until the test has changed the bucket instead deadlocks a watch on a
// loaded runner: prism may put two refreshes into one bundle, whose outputs go downstream only
// when the bundle ends, so the second refresh's LIST would wait for records that wait for it.
//
// Install it with Proxy.RewriteList = s.Rewrite and Proxy.StoredKey = s.StoredKey, and set
// Proxy.Credentials: a GET sent to another key is signed again.
type States struct {
	mu     sync.Mutex
	states []map[string]string          // per state: listed key → stored key
	etags  map[string]map[string]string // listed key → ETag (quoted, as listed) → stored key
	lists  int
}

// Add appends a state: listed maps each key the state lists to the stored key holding its
// version, and etag gives a stored key's ETag as S3 quotes it. States are listed in the order
// they were added.
func (s *States) Add(listed map[string]string, etag func(stored string) string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.etags == nil {
		s.etags = map[string]map[string]string{}
	}
	for key, stored := range listed {
		if s.etags[key] == nil {
			s.etags[key] = map[string]string{}
		}
		s.etags[key][etag(stored)] = stored
	}
	s.states = append(s.states, listed)
}

// Lists returns how many listings have been answered.
func (s *States) Lists() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lists
}

// Rewrite is a Rewrite answering the next listing with the next state: the listed objects
// are the stored versions the state names, under the keys it lists them by, in key order.
// The prefix must list in one page, and every stored version must be under it.
func (s *States) Rewrite(req ListRequest, body []byte) ([]byte, error) {
	s.mu.Lock()
	if len(s.states) == 0 {
		s.mu.Unlock()
		return nil, fmt.Errorf("faultproxy: States has no state")
	}
	state := s.states[min(s.lists, len(s.states)-1)]
	s.lists++
	s.mu.Unlock()
	if req.ContinuationToken != "" {
		return nil, fmt.Errorf("faultproxy: States answers one-page listings only")
	}
	return editListing(body, func(res *xmlNode) error {
		encoded, err := urlEncoded(res)
		if err != nil {
			return err
		}
		stored := map[string]*xmlNode{}
		var kept []*xmlNode // everything but the objects, in order
		at := -1            // where the objects were
		for _, c := range res.children {
			if !c.elem || c.name != "Contents" {
				kept = append(kept, c)
				continue
			}
			if at < 0 {
				at = len(kept)
			}
			k, err := listedKey(c, encoded)
			if err != nil {
				return err
			}
			stored[k] = c
		}
		var objects []*xmlNode
		for _, key := range slices.Sorted(maps.Keys(state)) {
			c := stored[state[key]]
			if c == nil {
				return fmt.Errorf("faultproxy: the stored version %q of %q is not listed", state[key], key)
			}
			if encoded {
				c.set("Key", S3URLEncode(key))
			} else {
				c.set("Key", key)
			}
			objects = append(objects, c)
		}
		if at < 0 {
			return fmt.Errorf("faultproxy: the listing holds no stored version")
		}
		res.children = slices.Concat(kept[:at], objects, kept[at:])
		res.set("KeyCount", fmt.Sprint(len(objects)))
		return nil
	})
}

// StoredKey returns the stored version a GET of key pinned to ifMatch reads: the one with that
// ETag, or key itself when key has no such stored version.
func (s *States) StoredKey(key, ifMatch string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if stored, ok := s.etags[key][ifMatch]; ok {
		return stored
	}
	return key
}
