package s3io_test

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"testing"

	"github.com/spate-io/beam-s3/internal/s3test"
	"github.com/spate-io/beam-s3/s3io"
)

// headerLog is a reverse proxy that records, for every request it forwards, the method and
// the account headers it carried.
type headerLog struct {
	mu   sync.Mutex
	seen []accountRequest
}

type accountRequest struct {
	method, query, owner, payer string
}

func (h *headerLog) proxy(t *testing.T, target string) string {
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		h.seen = append(h.seen, accountRequest{method: r.Method, query: r.URL.RawQuery,
			owner: r.Header.Get("X-Amz-Expected-Bucket-Owner"), payer: r.Header.Get("X-Amz-Request-Payer")})
		h.mu.Unlock()
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestAccountSettingsOnEveryRequest checks that ExpectedBucketOwner and RequesterPays reach
// every request a read makes: the listing's pages, the planner's magic-byte probe and the
// pinned GETs of parts. A request without them would be answered for the wrong account, or
// refused, on a real bucket.
func TestAccountSettingsOnEveryRequest(t *testing.T) {
	f := s3test.New(t)
	f.CreateBucket(t, "acct")
	var want []string
	for _, key := range []string{"a.ndjson", "b-no-extension", "c.ndjson"} {
		text, recs := s3test.NDJSON(key, 2000)
		f.Put(t, "acct", "p/"+key, []byte(text))
		want = append(want, recs...)
	}
	for _, tc := range []struct {
		name         string
		owner, payer string
	}{
		{"set", "123456789012", "requester"},
		{"unset", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var log headerLog
			cfg := s3io.Config{Bucket: "acct", Prefix: "p/", Endpoint: log.proxy(t, f.URL), UsePathStyle: true,
				// Small targets and parts: the object without an extension is larger than a
				// split, so the planner probes its first bytes, and every object takes
				// several part GETs.
				SplitTargetBytes: 16 << 10, PartBytes: 8 << 10,
				ExpectedBucketOwner: tc.owner, RequesterPays: tc.payer != ""}
			runRead(t, cfg, want)

			log.mu.Lock()
			defer log.mu.Unlock()
			lists, gets := 0, 0
			for _, r := range log.seen {
				switch r.method {
				case http.MethodGet:
					if q, _ := url.ParseQuery(r.query); q.Has("list-type") {
						lists++
					} else {
						gets++
					}
				}
				if r.owner != tc.owner || r.payer != tc.payer {
					t.Errorf("%s ?%s carried owner %q, payer %q; want %q, %q", r.method, r.query, r.owner, r.payer, tc.owner, tc.payer)
				}
			}
			// Three objects of ~50 KB in 8 KiB parts, and a probe: far more than one GET each.
			if lists < 1 || gets < 3*6+1 {
				t.Errorf("saw %d LIST and %d GET requests; want at least 1 and %d", lists, gets, 3*6+1)
			}
		})
	}
}
