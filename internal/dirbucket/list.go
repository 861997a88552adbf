package dirbucket

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/xml"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// maxKeys is the most entries a page holds, and the default MaxKeys.
const maxKeys = 1000

// entry is a key or a common prefix of a listing.
type entry struct {
	name   string
	folder bool
}

type listContents struct {
	Key          string
	LastModified string
	ETag         string
	Size         int64
	StorageClass string
}

type listResult struct {
	XMLName               xml.Name `xml:"http://s3.amazonaws.com/doc/2006-03-01/ ListBucketResult"`
	Name                  string
	Prefix                string
	Delimiter             string `xml:",omitempty"`
	MaxKeys               int
	KeyCount              int
	IsTruncated           bool
	EncodingType          string `xml:",omitempty"`
	ContinuationToken     string `xml:",omitempty"`
	NextContinuationToken string `xml:",omitempty"`
	StartAfter            string `xml:",omitempty"`
	Contents              []listContents
	CommonPrefixes        []struct{ Prefix string }
}

// list answers ListObjectsV2.
func (s *Server) list(w http.ResponseWriter, r *http.Request, q url.Values) {
	prefix, delim, after, token := q.Get("prefix"), q.Get("delimiter"), q.Get("start-after"), q.Get("continuation-token")
	if !s.general {
		// What S3 Express refuses of a ListObjectsV2 request.
		switch {
		case q.Has("start-after"):
			s.fail(w, http.StatusBadRequest, "InvalidArgument", "StartAfter is not supported for directory buckets")
			return
		case delim != "" && delim != "/":
			s.fail(w, http.StatusBadRequest, "InvalidArgument", "Directory buckets support only / as a delimiter")
			return
		case prefix != "" && !strings.HasSuffix(prefix, "/"):
			s.fail(w, http.StatusBadRequest, "InvalidRequest", "This bucket does not support a prefix that does not end in a delimiter. Specify a prefix path ending with a delimiter and try again.")
			return
		case r.Header.Get("X-Amz-Optional-Object-Attributes") != "":
			s.fail(w, http.StatusBadRequest, "InvalidArgument", "OptionalObjectAttributes is not supported for directory buckets")
			return
		}
	}
	if s.latency > 0 {
		time.Sleep(s.latency)
	}
	limit := maxKeys
	if v := q.Get("max-keys"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			s.fail(w, http.StatusBadRequest, "InvalidArgument", "max-keys must be a non-negative integer")
			return
		}
		limit = min(n, maxKeys)
	}
	encode := q.Get("encoding-type") == "url"
	res := listResult{Name: s.Bucket, Prefix: prefix, Delimiter: delim, MaxKeys: limit, ContinuationToken: token, StartAfter: after}
	if encode {
		res.EncodingType = "url"
	}

	s.mu.Lock()
	var page []entry
	var next string
	var ok bool
	if s.general {
		page, next, ok = s.sortedPage(prefix, delim, after, token, limit)
	} else {
		page, next, ok = s.shuffledPage(prefix, delim, token, limit)
	}
	if !ok {
		s.mu.Unlock()
		s.fail(w, http.StatusBadRequest, "InvalidArgument", "The continuation token provided is incorrect")
		return
	}
	enc := func(v string) string {
		if encode {
			return url.QueryEscape(v)
		}
		return v
	}
	for _, e := range page {
		if e.folder {
			res.CommonPrefixes = append(res.CommonPrefixes, struct{ Prefix string }{enc(e.name)})
			continue
		}
		o := s.objects[e.name]
		class := "STANDARD"
		if !s.general {
			class = "EXPRESS_ONEZONE"
		}
		res.Contents = append(res.Contents, listContents{Key: enc(e.name), LastModified: o.modified.Format(time.RFC3339), ETag: o.etag, Size: int64(len(o.data)), StorageClass: class})
	}
	res.KeyCount, res.IsTruncated, res.NextContinuationToken = len(page), next != "", next
	s.counts.Lists++
	s.lists = append(s.lists, ListRequest{Prefix: prefix, Delimiter: delim, Continued: token != "", Entries: len(page)})
	s.mu.Unlock()

	w.Header().Set("Content-Type", "application/xml")
	w.Write([]byte(xml.Header))
	xml.NewEncoder(w).Encode(res)
}

// entries returns the keys and common prefixes under prefix from s.keys[from:], in key
// order, until stop says so. Called with s.mu held.
func (s *Server) entries(prefix, delim string, from int, stop func(n int) bool) []entry {
	var out []entry
	for i := from; i < len(s.keys) && !stop(len(out)); {
		k := s.keys[i]
		if !strings.HasPrefix(k, prefix) {
			break
		}
		j := -1
		if delim != "" {
			j = strings.Index(k[len(prefix):], delim)
		}
		if j < 0 {
			out = append(out, entry{name: k})
			i++
			continue
		}
		cp := k[:len(prefix)+j+len(delim)]
		out = append(out, entry{name: cp, folder: true})
		i += sort.Search(len(s.keys)-i, func(n int) bool { return !strings.HasPrefix(s.keys[i+n], cp) })
	}
	return out
}

// sortedPage is a general-purpose bucket's page: in key order, after StartAfter or the
// token (the kind and name of the page's last entry). Called with s.mu held.
func (s *Server) sortedPage(prefix, delim, after, token string, limit int) ([]entry, string, bool) {
	past := func(k string) int { // the index of the first key after k
		i, found := slices.BinarySearch(s.keys, k)
		if found {
			i++
		}
		return i
	}
	i, _ := slices.BinarySearch(s.keys, prefix)
	if after != "" {
		i = max(i, past(after))
	}
	if token != "" {
		b, err := base64.RawURLEncoding.DecodeString(token)
		if err != nil || len(b) < 1 {
			return nil, "", false
		}
		last := string(b[1:])
		i = max(i, past(last))
		if b[0] == 'f' { // a common prefix: past every key under it
			i += sort.Search(len(s.keys)-i, func(n int) bool { return !strings.HasPrefix(s.keys[i+n], last) })
		}
	}
	page := s.entries(prefix, delim, i, func(n int) bool { return n > limit })
	if len(page) <= limit || limit == 0 {
		return page[:min(len(page), limit)], "", true
	}
	page = page[:limit]
	kind := byte('k')
	if page[limit-1].folder {
		kind = 'f'
	}
	return page, base64.RawURLEncoding.EncodeToString(append([]byte{kind}, page[limit-1].name...)), true
}

// shuffledPage is a directory bucket's page: the listing's entries in an order drawn for
// this listing (its seed travels in the token), the page's own entries shuffled again for
// every request. The token is the seed and how many entries came before: every entry is
// listed exactly once, in no order a client could rely on. Called with s.mu held.
func (s *Server) shuffledPage(prefix, delim, token string, limit int) ([]entry, string, bool) {
	var seed, off uint64
	if token != "" {
		b, err := base64.RawURLEncoding.DecodeString(token)
		if err != nil || len(b) != 16 {
			return nil, "", false
		}
		seed, off = binary.BigEndian.Uint64(b), binary.BigEndian.Uint64(b[8:])
	} else {
		seed = rand.Uint64()
	}
	// The listing's order is drawn once and kept until its last page: every page of a
	// large folder costs the server a page, not a sort of the folder.
	orderKey := fmt.Sprintf("%x\x00%s\x00%s", seed, prefix, delim)
	all, ok := s.orders[orderKey]
	if !ok {
		all = s.order(prefix, delim, seed)
		s.orders[orderKey] = all
	}
	if off > uint64(len(all)) {
		return nil, "", false
	}
	end := min(uint64(len(all)), off+uint64(limit))
	var page []entry
	for _, e := range all[off:end] {
		if e.folder || s.objects[e.name] != nil { // not deleted since the listing began
			page = append(page, e)
		}
	}
	rand.Shuffle(len(page), func(a, b int) { page[a], page[b] = page[b], page[a] })
	if end == uint64(len(all)) {
		delete(s.orders, orderKey)
		return page, "", true
	}
	b := binary.BigEndian.AppendUint64(nil, seed)
	b = binary.BigEndian.AppendUint64(b, end)
	return page, base64.RawURLEncoding.EncodeToString(b), true
}

// order returns the entries under prefix in the order seed draws. Called with s.mu held.
func (s *Server) order(prefix, delim string, seed uint64) []entry {
	i, _ := slices.BinarySearch(s.keys, prefix)
	all := s.entries(prefix, delim, i, func(int) bool { return false })
	// Each entry's place in this listing's order: a hash of its name mixed with the seed.
	ranks := make(map[string]uint64, len(all))
	for _, e := range all {
		h := fnv.New64a()
		h.Write([]byte(e.name))
		ranks[e.name] = mix(h.Sum64() ^ seed)
	}
	slices.SortFunc(all, func(a, b entry) int {
		if ra, rb := ranks[a.name], ranks[b.name]; ra != rb {
			if ra < rb {
				return -1
			}
			return 1
		}
		return strings.Compare(a.name, b.name)
	})
	return all
}

// mix is splitmix64's finalizer: every bit of x moves every bit of the result.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}
