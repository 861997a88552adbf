package dirbucket

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// object answers GetObject and HeadObject: If-Match first (412 PreconditionFailed), then
// Range (206 with Content-Range; 416 InvalidRange past the end).
func (s *Server) object(w http.ResponseWriter, r *http.Request, key string) {
	s.mu.Lock()
	o := s.objects[key]
	if r.Method == http.MethodHead {
		s.counts.Heads++
	} else {
		s.counts.Gets++
	}
	s.mu.Unlock()
	if o == nil {
		s.fail(w, http.StatusNotFound, "NoSuchKey", "The specified key does not exist.")
		return
	}
	if m := r.Header.Get("If-Match"); m != "" && m != o.etag {
		s.fail(w, http.StatusPreconditionFailed, "PreconditionFailed", "At least one of the pre-conditions you specified did not hold")
		return
	}
	size := int64(len(o.data))
	lo, hi := int64(0), size-1
	status := http.StatusOK
	if rng := r.Header.Get("Range"); rng != "" {
		var ok bool
		lo, hi, ok = parseRange(rng, size)
		if !ok {
			w.Header().Set("Content-Range", fmt.Sprintf("bytes */%d", size))
			s.fail(w, http.StatusRequestedRangeNotSatisfiable, "InvalidRange", "The requested range is not satisfiable")
			return
		}
		status = http.StatusPartialContent
		w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", lo, hi, size))
	}
	h := w.Header()
	h.Set("ETag", o.etag)
	h.Set("Last-Modified", o.modified.Format(http.TimeFormat))
	h.Set("Accept-Ranges", "bytes")
	h.Set("Content-Length", strconv.FormatInt(hi-lo+1, 10))
	h.Set("x-amz-storage-class", "EXPRESS_ONEZONE")
	w.WriteHeader(status)
	if r.Method == http.MethodGet && hi >= lo {
		w.Write(o.data[lo : hi+1])
	}
}

// parseRange reads one "bytes=a-b", "bytes=a-" or "bytes=-n" range of an object of size
// bytes, clamped to its end.
func parseRange(rng string, size int64) (lo, hi int64, ok bool) {
	spec, found := strings.CutPrefix(rng, "bytes=")
	a, b, dash := strings.Cut(spec, "-")
	if !found || !dash || strings.Contains(spec, ",") {
		return 0, 0, false
	}
	if a == "" {
		n, err := strconv.ParseInt(b, 10, 64)
		if err != nil || n <= 0 || size == 0 {
			return 0, 0, false
		}
		return max(0, size-n), size - 1, true
	}
	lo, err := strconv.ParseInt(a, 10, 64)
	if err != nil || lo >= size {
		return 0, 0, false
	}
	hi = size - 1
	if b != "" {
		if hi, err = strconv.ParseInt(b, 10, 64); err != nil || hi < lo {
			return 0, 0, false
		}
		hi = min(hi, size-1)
	}
	return lo, hi, true
}
