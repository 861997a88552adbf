package listing

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/spate-io/beam-s3/internal/fakelist"
)

// fakeVersion is one entry of a key's history, as ListObjectVersions lists it.
type fakeVersion struct {
	id       string
	marker   bool
	modified time.Time
	size     int64
}

// versionServer answers ListObjectVersions from histories (each key's entries newest
// first) as S3 documents it: keys in order, each key's versions newest first, MaxKeys counting
// versions, delete markers and folders, KeyMarker exclusive, VersionIdMarker resuming inside
// its key, and the Next markers of a truncated page naming its last entry.
type versionServer struct {
	*httptest.Server
	keys     []string
	hist     map[string][]fakeVersion
	requests atomic.Int64
	mu       sync.Mutex
	markers  int // requests that resumed inside a key (VersionIdMarker)
	// versitygw's ways (v1.8.0): a page lists its delete markers before its versions, and
	// KeyMarker without VersionIdMarker includes its key.
	markersFirst, inclusiveKeyMarker bool
}

func newVersionServer(t *testing.T, hist map[string][]fakeVersion) *versionServer {
	s := &versionServer{hist: hist}
	for k := range hist {
		s.keys = append(s.keys, k)
	}
	slices.Sort(s.keys)
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

func (s *versionServer) serve(w http.ResponseWriter, r *http.Request) {
	s.requests.Add(1)
	q := r.URL.Query()
	if _, ok := q["versions"]; !ok {
		http.Error(w, "only ListObjectVersions here", http.StatusNotImplemented)
		return
	}
	prefix, delim, keyMarker, vidMarker := q.Get("prefix"), q.Get("delimiter"), q.Get("key-marker"), q.Get("version-id-marker")
	maxKeys := 1000
	if v := q.Get("max-keys"); v != "" {
		maxKeys, _ = strconv.Atoi(v)
	}
	if vidMarker != "" {
		s.mu.Lock()
		s.markers++
		s.mu.Unlock()
	}
	enc := func(v string) string { return url.QueryEscape(v) }
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?><ListVersionsResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>b</Name><EncodingType>url</EncodingType>`)
	n := 0
	var lastKey, lastVid string
	truncated := false
	var lastFolder string
	var versions strings.Builder // the versions, written after the markers when markersFirst
	i, _ := slices.BinarySearch(s.keys, keyMarker)
loop:
	for ; i < len(s.keys); i++ {
		k := s.keys[i]
		if !strings.HasPrefix(k, prefix) {
			continue
		}
		if delim != "" {
			if j := strings.Index(k[len(prefix):], delim); j >= 0 {
				f := k[:len(prefix)+j+len(delim)]
				if f == lastFolder || keyMarker != "" && strings.HasPrefix(keyMarker, f) {
					continue
				}
				if n == maxKeys {
					truncated = true
					break
				}
				lastFolder = f
				fmt.Fprintf(&b, "<CommonPrefixes><Prefix>%s</Prefix></CommonPrefixes>", enc(f))
				n++
				lastKey, lastVid = f, ""
				continue
			}
		}
		h := s.hist[k]
		start := 0
		if k == keyMarker {
			if vidMarker == "" && !s.inclusiveKeyMarker {
				continue // KeyMarker alone is exclusive
			}
			start = slices.IndexFunc(h, func(v fakeVersion) bool { return v.id == vidMarker }) + 1
		}
		for vi := start; vi < len(h); vi++ {
			if n == maxKeys {
				truncated = true
				break loop
			}
			v := h[vi]
			el, w := "Version", &b
			if v.marker {
				el = "DeleteMarker"
			} else if s.markersFirst {
				w = &versions
			}
			fmt.Fprintf(w, "<%s><Key>%s</Key><VersionId>%s</VersionId><IsLatest>%t</IsLatest><LastModified>%s</LastModified>", el, enc(k), v.id, vi == 0, v.modified.UTC().Format("2006-01-02T15:04:05.000Z"))
			if !v.marker {
				fmt.Fprintf(w, `<ETag>"%s"</ETag><Size>%d</Size><StorageClass>STANDARD</StorageClass>`, v.id, v.size)
			}
			fmt.Fprintf(w, "</%s>", el)
			n++
			lastKey, lastVid = k, v.id
		}
	}
	b.WriteString(versions.String())
	fmt.Fprintf(&b, "<IsTruncated>%t</IsTruncated>", truncated)
	if truncated {
		fmt.Fprintf(&b, "<NextKeyMarker>%s</NextKeyMarker>", enc(lastKey))
		if lastVid != "" {
			fmt.Fprintf(&b, "<NextVersionIdMarker>%s</NextVersionIdMarker>", lastVid)
		}
	}
	b.WriteString("</ListVersionsResult>")
	w.Header().Set("Content-Type", "application/xml")
	w.Write([]byte(b.String()))
}

// histories gives each key a random history: one to four entries, some of them delete
// markers, times in whole seconds (as S3 lists them) so that some tie; a few keys have more
// versions than a page holds.
func histories(rng *rand.Rand, keys []string, base time.Time) map[string][]fakeVersion {
	hist := map[string][]fakeVersion{}
	id := 0
	for i, k := range keys {
		n := 1 + rng.IntN(4)
		if i%97 == 5 {
			n = 40
		}
		t := base.Add(time.Duration(rng.IntN(100)) * time.Second)
		var h []fakeVersion
		for range n {
			id++
			h = append(h, fakeVersion{id: fmt.Sprintf("v%06d", id), marker: rng.IntN(5) == 0, modified: t, size: int64(1 + rng.IntN(1000))})
			t = t.Add(time.Duration(rng.IntN(3)) * time.Second) // 0: the same second
		}
		slices.Reverse(h) // newest first
		hist[k] = h
	}
	return hist
}

// wantVersions is what a listing of hist should hand on: each key's selected version.
func wantVersions(hist map[string][]fakeVersion, keys []string, asOf time.Time) []string {
	var want []string
	for _, k := range keys {
		for _, v := range hist[k] {
			if asOf.IsZero() || !v.modified.After(asOf) {
				if !v.marker {
					want = append(want, k+"@"+v.id)
				}
				break
			}
		}
	}
	return want
}

// TestVersionListingSelectsOneVersionPerKey: whatever the parallelism and the page size
// (smaller than some keys' histories), a version listing hands on, in key order, each key's
// latest version, or the one current at AsOf, leaving out keys whose pick is a delete marker.
func TestVersionListingSelectsOneVersionPerKey(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	base := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	for name, keys := range fakelist.Layouts(rng) {
		if len(keys) > 3000 {
			keys = keys[:3000]
		}
		keys = slices.Compact(slices.Sorted(slices.Values(append(keys, "data/sp ace+%", "data/\x01ctl"))))
		t.Run(name, func(t *testing.T) {
			hist := histories(rng, keys, base)
			srv := newVersionServer(t, hist)
			srv.markersFirst, srv.inclusiveKeyMarker = name == "flat", name == "flat" || name == "deep"
			client := s3.New(s3.Options{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL), UsePathStyle: true,
				Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")})
			for _, asOf := range []time.Time{{}, base.Add(50 * time.Second), base.Add(-time.Second)} {
				if srv.markersFirst && !asOf.IsZero() {
					// Listed apart, a delete marker and a version of the same second cannot be
					// ordered; IsLatest still says which is the latest.
					continue
				}
				want := wantVersions(hist, keys, asOf)
				for _, p := range []int{1, 3, 16} {
					for _, page := range []int32{7, 50} {
						opts := Options{Client: client, Bucket: "b", Versions: &Versions{AsOf: asOf}}
						l := testListing(t, opts, "data/", "", p, page)
						var got []string
						ctx := t.Context()
						sent := srv.requests.Load()
						l.Run(ctx)
						for {
							objs, err := l.Next()
							if err != nil {
								t.Fatal(err)
							}
							if objs == nil {
								break
							}
							for _, o := range objs {
								got = append(got, o.Key+"@"+o.VersionID)
								if want := hist[o.Key]; o.ETag != `"`+o.VersionID+`"` || o.Size == 0 || want == nil {
									t.Fatalf("%s: ETag %s, size %d", o.Key, o.ETag, o.Size)
								}
							}
						}
						if !slices.Equal(got, want) {
							t.Fatalf("as of %v, parallelism %d, pages of %d: %d versions, want %d; first difference at %d", asOf, p, page, len(got), len(want), firstDiff(got, want))
						}
						// The requests counted are the requests the server answered.
						if n, sent := l.Stats().Requests, srv.requests.Load()-sent; n != sent {
							t.Fatalf("parallelism %d, pages of %d: %d LIST requests counted, %d sent", p, page, n, sent)
						}
					}
				}
			}
			if srv.markers == 0 {
				t.Errorf("no page resumed inside a key's versions: the long histories were not exercised")
			}
		})
	}
}

// TestElementOrder: the interleaving of versions and delete markers is read from the tags
// alone, whatever the keys hold.
func TestElementOrder(t *testing.T) {
	doc := []byte(`<ListVersionsResult><Version><Key>a&lt;Version&gt;</Key><VersionId>1</VersionId></Version><DeleteMarker><Key>a</Key></DeleteMarker><Version><Key>b</Key></Version><VersionIdMarker>x</VersionIdMarker></ListVersionsResult>`)
	if got := elementOrder(doc); !slices.Equal(got, []bool{false, true, false}) {
		t.Fatalf("order %v", got)
	}
}
