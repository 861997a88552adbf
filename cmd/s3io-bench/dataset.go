package main

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/spate-io/beam-s3/internal/s3test"
)

// generatorVersion changes whenever the record content or the object layout changes; it is
// part of the bucket name, so data from an older generator is never measured.
const generatorVersion = 1

// The formats of the main dataset, each under a prefix of its own name, and the prefixes
// only some runs use.
const (
	formatPlain  = "plain"
	formatGzip   = "gzip"
	formatZstd   = "zstd"
	prefixBig    = "big"    // one 2 GiB plain object (--big)
	prefixSmall  = "small"  // many 64 KiB plain objects (--small), where request latency dominates
	prefixEmpty  = "empty"  // never written: the idle pipeline lists it and finds nothing
	prefixMemory = "memory" // never written: the floor's records, generated in its own memory
)

// objectKey names object i of prefix; s3io and the loop pick the decompressor by the suffix.
func objectKey(prefix string, i int) string {
	ext := map[string]string{formatGzip: ".ndjson.gz", formatZstd: ".ndjson.zst"}[prefix]
	if c := codecOf(prefix); c != nil {
		ext = ".ndjson" + c.ext
	}
	return fmt.Sprintf("%s/part-%05d%s", prefix, i, cmp.Or(ext, ".ndjson"))
}

// bucketName is derived from the dataset's sizes, so datasets of different sizes live side by
// side in one data directory.
func bucketName(size, objectSize int64) string {
	h := sha256.Sum256(fmt.Appendf(nil, "s3io-bench/%d/%d/%d/%d", generatorVersion, size, objectSize, recordSize))
	return "s3io-bench-" + hex.EncodeToString(h[:4])
}

// prefixData is what one prefix holds: every run's count is compared with Records and
// DecompressedBytes. The manifest, a JSON file beside the server's directory, keeps it
// between invocations, so that a re-run skips generation.
type prefixData struct {
	TargetBytes       int64 `json:"target_bytes"` // the size it was generated for
	Records           int64 `json:"records"`
	DecompressedBytes int64 `json:"decompressed_bytes"` // newlines included
	StoredBytes       int64 `json:"stored_bytes"`
	objects           int
}

type manifest struct {
	Prefixes map[string]*prefixData `json:"prefixes"`
}

// layout is how the objects of some prefixes are generated: the formats hold the same
// records; big/'s are those of an object index past the main dataset's, so they differ.
type layout struct {
	prefixes         []string
	size, objectSize int64
	firstObject      int64
}

// prepareData makes sure the server holds every prefix the runs read, generating and
// uploading the prefixes whose objects differ from the manifest.
func (b *benchRun) prepareData(ctx context.Context) error {
	o, client := b.opts, b.gw.Client()
	path := filepath.Join(o.dataDir, b.bucket+".manifest.json")
	var m manifest
	if data, err := os.ReadFile(path); err == nil {
		json.Unmarshal(data, &m) // an unreadable manifest means regenerating
	}
	if b.data = m.Prefixes; b.data == nil {
		b.data = map[string]*prefixData{}
	}
	if _, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(b.bucket)}); err != nil {
		var owned *types.BucketAlreadyOwnedByYou
		if !errors.As(err, &owned) {
			return fmt.Errorf("create bucket %s: %w", b.bucket, err)
		}
	}
	layouts := []layout{{o.formats, o.size, o.objectSize, 0}}
	if cp := o.codecPrefixes(); len(cp) > 0 {
		// The first --codec-size bytes of the main dataset's records: object i of a codec
		// prefix holds object i of plain/ (the last one cut shorter when the sizes differ).
		layouts = append(layouts, layout{cp, o.codecSize, o.objectSize, 0})
	}
	if o.small {
		layouts = append(layouts, layout{[]string{prefixSmall}, int64(o.smallCount) * smallSize, smallSize, 0})
	}
	if o.big {
		layouts = append(layouts, layout{[]string{prefixBig}, bigSize, bigSize, 100_000})
	}
	start := time.Now()
	for _, l := range layouts {
		var stale []string
		for _, p := range l.prefixes {
			ok, err := b.upToDate(ctx, client, p, l)
			if err != nil {
				return err
			}
			if !ok {
				stale = append(stale, p)
			}
		}
		if len(stale) == 0 {
			continue
		}
		fmt.Fprintf(os.Stderr, "generating %.1f MiB of NDJSON in objects of up to %.1f MiB under %s/\n", float64(l.size)/(1<<20), float64(l.objectSize)/(1<<20), strings.Join(stale, "/, "))
		if err := b.generate(ctx, client, stale, l); err != nil {
			return fmt.Errorf("generate %s: %w", strings.Join(stale, ", "), err)
		}
		data, _ := json.MarshalIndent(manifest{b.data}, "", "  ")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			return err
		}
		b.generated = append(b.generated, stale...)
	}
	b.genTime = time.Since(start)
	fmt.Fprintf(os.Stderr, "dataset s3://%s in %s: %s\n", b.bucket, o.dataDir, b.datasetState())
	return nil
}

// upToDate reports whether the server holds l's objects under prefix, with the bytes the
// manifest says were stored: the manifest alone is not trusted, the server's directory may
// have been cleaned separately.
func (b *benchRun) upToDate(ctx context.Context, client *s3.Client, prefix string, l layout) (bool, error) {
	objects, err := list(ctx, client, b.bucket, prefix)
	var stored int64
	for _, o := range objects {
		stored += aws.ToInt64(o.Size)
	}
	d, n := b.data[prefix], objectCount(l.size, l.objectSize)
	if err != nil || d == nil || d.TargetBytes != l.size || len(objects) != n || stored != d.StoredBytes {
		return false, err
	}
	d.objects = n
	return true, nil
}

// list lists prefix/.
func list(ctx context.Context, client *s3.Client, bucket, prefix string) ([]types.Object, error) {
	var out []types.Object
	pages := s3.NewListObjectsV2Paginator(client, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix + "/")})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("list s3://%s/%s/: %w", bucket, prefix, err)
		}
		out = append(out, page.Contents...)
	}
	return out, nil
}

// generate uploads l's objects under each of prefixes, the same records under each,
// compressed at the default levels under gzip/ and zstd/ and by the codec's command-line
// tool under codec-NAME/, GOMAXPROCS objects at a time.
func (b *benchRun) generate(ctx context.Context, client *s3.Client, prefixes []string, l layout) error {
	for _, prefix := range prefixes { // what is there was generated for other sizes, or partly
		objects, err := list(ctx, client, b.bucket, prefix)
		for _, o := range objects {
			if err == nil {
				_, err = client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(b.bucket), Key: o.Key})
			}
		}
		if err != nil {
			return err
		}
	}
	started, n := time.Now(), objectCount(l.size, l.objectSize)
	sums := make([]prefixData, len(prefixes))
	var mu sync.Mutex
	var done atomic.Int64
	errs := make([]error, n)
	forEach(n, func(i int) {
		limit := objectLimit(i, l.size, l.objectSize)
		plain, records := fillObject(make([]byte, 0, limit), l.firstObject+int64(i), limit)
		for p, prefix := range prefixes {
			body := plain
			switch prefix {
			case formatGzip:
				body = s3test.Gzip(string(plain))
			case formatZstd:
				body = s3test.Zstd(string(plain))
			}
			key := objectKey(prefix, i)
			if c := codecOf(prefix); c != nil {
				var err error
				if body, err = c.write(plain); err != nil {
					errs[i] = fmt.Errorf("write %s: %w", key, err)
					return
				}
			}
			if _, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(b.bucket), Key: aws.String(key), Body: bytes.NewReader(body)}); err != nil {
				errs[i] = fmt.Errorf("upload s3://%s/%s: %w", b.bucket, key, err)
				return
			}
			mu.Lock()
			sums[p].Records, sums[p].DecompressedBytes, sums[p].StoredBytes = sums[p].Records+records, sums[p].DecompressedBytes+int64(len(plain)), sums[p].StoredBytes+int64(len(body))
			mu.Unlock()
		}
		if d := int(done.Add(1)); d%max(1, n/8) == 0 || d == n {
			fmt.Fprintf(os.Stderr, "  generated %d/%d objects (%.0fs)\n", d, n, time.Since(started).Seconds())
		}
	})
	for p, prefix := range prefixes {
		sums[p].TargetBytes, sums[p].objects = l.size, n
		b.data[prefix] = &sums[p]
	}
	return errors.Join(append(errs, ctx.Err())...)
}

// forEach calls f(0), ..., f(n-1) on GOMAXPROCS goroutines.
func forEach(n int, f func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), n) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				f(i)
			}
		})
	}
	wg.Wait()
}

// objectCount is how many objects of up to objectSize bytes hold size bytes, and objectLimit
// the most decompressed bytes object i of them may hold.
func objectCount(size, objectSize int64) int { return int((size + objectSize - 1) / objectSize) }

func objectLimit(i int, size, objectSize int64) int64 {
	return min(objectSize, size-int64(i)*objectSize)
}

// materialize generates the main dataset's records (every format holds the same ones) into
// memory outside the Go heap, one slice per object: off the heap, gigabytes of records leave
// the garbage collector's pacing as it is in a reading process, whose live heap is small.
func materialize(size, objectSize int64) [][]byte {
	region := offHeap(int(size))
	objects := make([][]byte, objectCount(size, objectSize))
	forEach(len(objects), func(i int) {
		off, limit := int64(i)*objectSize, objectLimit(i, size, objectSize)
		objects[i], _ = fillObject(region[off:off:off+limit], int64(i), limit)
	})
	return objects
}

// The record generator. Record k of object obj is a pure function of (obj, k), so objects
// can be generated in parallel and every run of the generator produces the same bytes.
var (
	eventTypes = []struct {
		name   string
		weight uint64 // out of 100
	}{{"page_view", 55}, {"click", 20}, {"search", 10}, {"add_to_cart", 6}, {"purchase", 4}, {"signup", 3}, {"logout", 2}}
	pathTemplates = []string{"/products/", "/products/reviews/", "/cart/", "/search?q=item", "/account/orders/", "/category/", "/checkout/step/", "/help/articles/"}
	// padWords give the padding field text-like redundancy: random bytes would not compress
	// at all, a repeated byte would compress absurdly well; log payloads sit in between.
	padWords = strings.Fields(`alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november
		oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu amber basalt cobalt dune ember fjord
		granite harbor iris jade kelp lagoon meadow nickel onyx pebble quartz river slate timber umber valley willow yarrow
		zephyr acorn birch cedar dahlia elm fern grove hazel ivy juniper laurel maple oak`)
	baseTime = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
)

// splitmix64 is a small, fast, well-mixed hash of one 64-bit state.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// appendRecord appends record k of object obj and its newline to dst. Its length is
// recordSize ± 16 bytes (at least the fixed fields), averaging recordSize.
func appendRecord(dst []byte, obj, k int64) []byte {
	r := splitmix64(uint64(obj)<<32 ^ uint64(k))
	start := len(dst)
	dst = append(dst, `{"ts":"`...)
	dst = time.UnixMilli(baseTime+obj*3_600_000+k*7).UTC().AppendFormat(dst, "2006-01-02T15:04:05.000Z")
	dst = append(dst, `","type":"`...)
	w := r % 100
	for _, t := range eventTypes {
		if w < t.weight {
			dst = append(dst, t.name...)
			break
		}
		w -= t.weight
	}
	dst = append(dst, `","user":"u`...)
	dst = strconv.AppendUint(dst, (r>>8)%50_000, 10)
	dst = append(dst, `","path":"`...)
	dst = append(dst, pathTemplates[(r>>24)%uint64(len(pathTemplates))]...)
	dst = strconv.AppendUint(dst, (r>>32)%10_000, 10)
	dst = append(dst, `","pad":"`...)
	padLen := recordSize + int((r>>48)%33) - 16 - (len(dst) - start) - len("\"}\n")
	for p, s := 0, r; p < padLen; {
		s = splitmix64(s)
		word := padWords[s%uint64(len(padWords))]
		n := min(len(word), padLen-p)
		dst = append(dst, word[:n]...)
		if p += n; p < padLen {
			dst = append(dst, '-')
			p++
		}
	}
	return append(dst, "\"}\n"...)
}

// fillObject appends whole records of object obj to dst while they fit in limit bytes, and
// returns them and their count. An object always holds at least one record.
func fillObject(dst []byte, obj int64, limit int64) ([]byte, int64) {
	var rec []byte
	for k := int64(0); ; k++ {
		rec = appendRecord(rec[:0], obj, k)
		if k > 0 && int64(len(dst)+len(rec)) > limit {
			return dst, k
		}
		dst = append(dst, rec...)
	}
}
