package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

// generatorVersion changes whenever the record content or the object layout changes, so a
// data directory filled by an older generator is regenerated instead of being measured
// against expectations it no longer meets.
const generatorVersion = 1

// The formats of the main dataset, each under a prefix of its own name, and the prefixes
// only some runs use.
const (
	formatPlain  = "plain"
	formatGzip   = "gzip"
	formatZstd   = "zstd"
	prefixBig    = "big"    // one large plain object, for the memory check
	prefixSmall  = "small"  // many small plain objects (--small), where request latency dominates
	prefixEmpty  = "empty"  // never written: the idle pipeline lists it and finds nothing
	prefixMemory = "memory" // never written: the floor's records, generated in its own memory
)

var allFormats = []string{formatPlain, formatGzip, formatZstd}

// extension is the key suffix of each format; s3io and the loop pick the decompressor by it,
// as most S3 log layouts require.
var extension = map[string]string{
	formatPlain: ".ndjson",
	formatGzip:  ".ndjson.gz",
	formatZstd:  ".ndjson.zst",
	prefixBig:   ".ndjson",
	prefixSmall: ".ndjson",
}

// datasetParams are the flags that determine the dataset's content. The bucket name is
// derived from them, so datasets of different shapes live side by side in one data
// directory and re-running with the same flags finds its own.
type datasetParams struct {
	Generator  int   `json:"generator"`
	Size       int64 `json:"size"`
	ObjectSize int64 `json:"object_size"`
	RecordSize int   `json:"record_size"`
}

func (p datasetParams) bucket() string {
	h := sha256.Sum256(fmt.Appendf(nil, "s3io-bench/%d/%d/%d/%d", p.Generator, p.Size, p.ObjectSize, p.RecordSize))
	return "s3io-bench-" + hex.EncodeToString(h[:4])
}

// objectInfo is one stored object and what reading it must yield.
type objectInfo struct {
	Key     string `json:"key"`
	Stored  int64  `json:"stored"`  // bytes as stored in S3
	Records int64  `json:"records"` // NDJSON records in it
	Bytes   int64  `json:"bytes"`   // decompressed bytes, newlines included
}

// prefixManifest records the exact expectations for one prefix: the benchmark compares
// every run's count against Records and Bytes.
type prefixManifest struct {
	Prefix            string       `json:"prefix"`
	TargetBytes       int64        `json:"target_bytes"` // the size flag it was generated for
	Objects           []objectInfo `json:"objects"`
	Records           int64        `json:"records"`
	DecompressedBytes int64        `json:"decompressed_bytes"`
	StoredBytes       int64        `json:"stored_bytes"`
	GeneratedAt       time.Time    `json:"generated_at"`
	GenerateSeconds   float64      `json:"generate_seconds"`
}

// manifest is the JSON file beside the server's directory that makes a re-run with the same
// flags skip generation and upload.
type manifest struct {
	Params   datasetParams              `json:"params"`
	Bucket   string                     `json:"bucket"`
	Prefixes map[string]*prefixManifest `json:"prefixes"`
}

func manifestPath(dataDir, bucket string) string {
	return filepath.Join(dataDir, bucket+".manifest.json")
}

func loadManifest(dataDir string, params datasetParams) (*manifest, error) {
	bucket := params.bucket()
	m := &manifest{Params: params, Bucket: bucket, Prefixes: map[string]*prefixManifest{}}
	data, err := os.ReadFile(manifestPath(dataDir, bucket))
	if errors.Is(err, os.ErrNotExist) {
		return m, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read manifest: %w", err)
	}
	var old manifest
	if err := json.Unmarshal(data, &old); err != nil {
		return nil, fmt.Errorf("manifest %s is not valid JSON (delete it to regenerate): %w", manifestPath(dataDir, bucket), err)
	}
	if old.Params != params || old.Bucket != bucket {
		return m, nil // another generator version: start afresh
	}
	if old.Prefixes != nil {
		m.Prefixes = old.Prefixes
	}
	return m, nil
}

// save writes the manifest atomically, so an interrupted generation never leaves a manifest
// that claims objects which were not uploaded.
func (m *manifest) save(dataDir string) error {
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	path := manifestPath(dataDir, m.Bucket)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return fmt.Errorf("write manifest: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write manifest: %w", err)
	}
	return nil
}

// storedObjects lists prefix/ and returns each key's size.
func storedObjects(ctx context.Context, client *s3.Client, bucket, prefix string) (map[string]int64, error) {
	out := map[string]int64{}
	pages := s3.NewListObjectsV2Paginator(client, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix + "/")})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("list s3://%s/%s/: %w", bucket, prefix, err)
		}
		for _, o := range page.Contents {
			out[aws.ToString(o.Key)] = aws.ToInt64(o.Size)
		}
	}
	return out, nil
}

// upToDate reports whether the manifest lists objects objects of target bytes in all for
// prefix, and the server holds exactly those objects, with their sizes: a manifest alone is
// not trusted, since the server's directory may have been cleaned separately.
func upToDate(ctx context.Context, client *s3.Client, m *manifest, prefix string, target int64, objects int) (bool, error) {
	pm := m.Prefixes[prefix]
	if pm == nil || pm.TargetBytes != target || len(pm.Objects) != objects {
		return false, nil
	}
	stored, err := storedObjects(ctx, client, m.Bucket, prefix)
	if err != nil {
		return false, err
	}
	if len(stored) != len(pm.Objects) {
		return false, nil
	}
	for _, o := range pm.Objects {
		if size, ok := stored[o.Key]; !ok || size != o.Stored {
			return false, nil
		}
	}
	return true, nil
}

func ensureBucket(ctx context.Context, client *s3.Client, bucket string) error {
	_, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)})
	var owned *types.BucketAlreadyOwnedByYou
	var exists *types.BucketAlreadyExists
	if err == nil || errors.As(err, &owned) || errors.As(err, &exists) {
		return nil
	}
	return fmt.Errorf("create bucket %s: %w", bucket, err)
}

// removeExtra deletes objects under prefix that the new manifest does not list, left over
// from an interrupted or differently sized generation.
func removeExtra(ctx context.Context, client *s3.Client, bucket, prefix string, keep []objectInfo) error {
	stored, err := storedObjects(ctx, client, bucket, prefix)
	if err != nil {
		return err
	}
	for _, o := range keep {
		delete(stored, o.Key)
	}
	for key := range stored {
		if _, err := client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)}); err != nil {
			return fmt.Errorf("delete stale s3://%s/%s: %w", bucket, key, err)
		}
	}
	return nil
}

// The record generator. Record k of object obj is a pure function of (obj, k, recordSize),
// so objects can be generated in parallel and every run of the generator produces the same
// bytes.

var (
	eventTypes = []struct {
		name   string
		weight uint64 // out of 100
	}{{"page_view", 55}, {"click", 20}, {"search", 10}, {"add_to_cart", 6}, {"purchase", 4}, {"signup", 3}, {"logout", 2}}
	pathTemplates = []string{"/products/", "/products/reviews/", "/cart/", "/search?q=item", "/account/orders/", "/category/", "/checkout/step/", "/help/articles/"}
	// padWords give the padding field text-like redundancy: random bytes would not compress
	// at all, a repeated byte would compress absurdly well; log payloads sit in between.
	padWords = []string{
		"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet",
		"kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "romeo", "sierra", "tango",
		"uniform", "victor", "whiskey", "xray", "yankee", "zulu", "amber", "basalt", "cobalt", "dune",
		"ember", "fjord", "granite", "harbor", "iris", "jade", "kelp", "lagoon", "meadow", "nickel",
		"onyx", "pebble", "quartz", "river", "slate", "timber", "umber", "valley", "willow", "yarrow",
		"zephyr", "acorn", "birch", "cedar", "dahlia", "elm", "fern", "grove", "hazel", "ivy",
		"juniper", "laurel", "maple", "oak",
	}
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
func appendRecord(dst []byte, obj, k int64, recordSize int) []byte {
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
	target := recordSize + int((r>>48)%33) - 16
	padLen := target - (len(dst) - start) - len("\"}\n")
	s := r
	for p := 0; p < padLen; {
		s = splitmix64(s)
		word := padWords[s%uint64(len(padWords))]
		n := min(len(word), padLen-p)
		dst = append(dst, word[:n]...)
		p += n
		if p < padLen {
			dst = append(dst, '-')
			p++
		}
	}
	return append(dst, "\"}\n"...)
}

// fillObject appends whole records of object obj to dst (reset) while they fit in limit
// bytes, and returns the object and its record count. An object always holds at least one
// record.
func fillObject(dst []byte, obj int64, limit int64, recordSize int) ([]byte, int64) {
	dst = dst[:0]
	var scratch []byte
	var k int64
	for {
		scratch = appendRecord(scratch[:0], obj, k, recordSize)
		if k > 0 && int64(len(dst)+len(scratch)) > limit {
			return dst, k
		}
		dst = append(dst, scratch...)
		k++
	}
}

// objectCount is how many objects of up to objectSize bytes hold size bytes.
func objectCount(size, objectSize int64) int { return int((size + objectSize - 1) / objectSize) }

// objectLimit is the most decompressed bytes object i of a size-byte dataset may hold.
func objectLimit(i int, size, objectSize int64) int64 {
	return min(objectSize, size-int64(i)*objectSize)
}

// generate generates objectCount(size, objectSize) objects of up to objectSize decompressed
// bytes under each of prefixes (a format's, or small/, which is plain), the same records
// under every prefix, with up to GOMAXPROCS objects generated, compressed and uploaded at
// once.
func generate(ctx context.Context, client *s3.Client, m *manifest, prefixes []string, size, objectSize int64, progress io.Writer) error {
	started := time.Now()
	nObjects := objectCount(size, objectSize)
	type result struct {
		infos map[string]objectInfo
		err   error
	}
	results := make([]result, nObjects)
	jobs := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	done := 0
	workers := min(runtime.GOMAXPROCS(0), nObjects)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var plain, packed []byte
			var gzBuf bytes.Buffer
			gz, _ := gzip.NewWriterLevel(&gzBuf, gzip.DefaultCompression) // fails only on an invalid level
			zs, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithEncoderConcurrency(1))
			if err != nil {
				panic(err) // only invalid options fail here
			}
			defer zs.Close()
			for i := range jobs {
				var records int64
				plain, records = fillObject(plain, int64(i), objectLimit(i, size, objectSize), m.Params.RecordSize)
				infos := map[string]objectInfo{}
				for _, f := range prefixes {
					body := plain
					switch f {
					case formatGzip:
						gzBuf.Reset()
						gz.Reset(&gzBuf)
						gz.Write(plain)
						if err := gz.Close(); err != nil {
							results[i].err = fmt.Errorf("gzip object %d: %w", i, err)
							continue
						}
						body = gzBuf.Bytes()
					case formatZstd:
						packed = zs.EncodeAll(plain, packed[:0])
						body = packed
					}
					key := fmt.Sprintf("%s/part-%05d%s", f, i, extension[f])
					if _, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(m.Bucket), Key: aws.String(key), Body: bytes.NewReader(body)}); err != nil {
						results[i].err = fmt.Errorf("upload s3://%s/%s: %w", m.Bucket, key, err)
						continue
					}
					infos[f] = objectInfo{Key: key, Stored: int64(len(body)), Records: records, Bytes: int64(len(plain))}
				}
				results[i].infos = infos
				mu.Lock()
				done++
				if done%max(1, nObjects/8) == 0 || done == nObjects {
					fmt.Fprintf(progress, "  generated %d/%d objects in %s (%.0fs)\n", done, nObjects, formatList(prefixes), time.Since(started).Seconds())
				}
				mu.Unlock()
			}
		}()
	}
feed:
	for i := 0; i < nObjects; i++ {
		select {
		case jobs <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return err
	}
	for _, r := range results {
		if r.err != nil {
			return r.err
		}
	}
	for _, f := range prefixes {
		pm := &prefixManifest{Prefix: f, TargetBytes: size, GeneratedAt: time.Now().UTC(), GenerateSeconds: time.Since(started).Seconds()}
		for _, r := range results {
			o := r.infos[f]
			pm.Objects = append(pm.Objects, o)
			pm.Records += o.Records
			pm.DecompressedBytes += o.Bytes
			pm.StoredBytes += o.Stored
		}
		if err := removeExtra(ctx, client, m.Bucket, f, pm.Objects); err != nil {
			return err
		}
		m.Prefixes[f] = pm
	}
	return nil
}

// materialize generates the records of the main dataset (every format holds the same ones)
// into memory outside the Go heap, one slice per object, GOMAXPROCS objects at a time. Off
// the heap, gigabytes of records leave the garbage collector's pacing as it is in a reading
// process, whose live heap is small.
func materialize(size, objectSize int64, recordSize int) [][]byte {
	region := offHeap(int(size))
	objects := make([][]byte, objectCount(size, objectSize))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(objects)) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < len(objects); i = int(next.Add(1) - 1) {
				off, limit := int64(i)*objectSize, objectLimit(i, size, objectSize)
				objects[i], _ = fillObject(region[off:off:off+limit], int64(i), limit, recordSize)
			}
		})
	}
	wg.Wait()
	return objects
}

// generateBig writes one plain NDJSON object of about size bytes to a temporary file in
// tmpDir and uploads it as big/part-00000.ndjson: too large to hold in memory while
// uploading, and the file lets the SDK sign the seekable body.
func generateBig(ctx context.Context, client *s3.Client, m *manifest, size int64, tmpDir string) error {
	started := time.Now()
	if err := os.MkdirAll(tmpDir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(tmpDir, "big-*.ndjson")
	if err != nil {
		return fmt.Errorf("big object temporary file: %w", err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	w := bufio.NewWriterSize(f, 4<<20)
	var rec []byte
	var records, written int64
	const bigObject = 100_000 // an object index past the main dataset's, so its records differ
	for written < size {
		rec = appendRecord(rec[:0], bigObject, records, m.Params.RecordSize)
		if records > 0 && written+int64(len(rec)) > size {
			break
		}
		w.Write(rec)
		written += int64(len(rec))
		records++
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("write %s: %w", f.Name(), err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	key := prefixBig + "/part-00000" + extension[prefixBig]
	if _, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(m.Bucket), Key: aws.String(key), Body: f}); err != nil {
		return fmt.Errorf("upload s3://%s/%s (%d bytes): %w", m.Bucket, key, written, err)
	}
	objs := []objectInfo{{Key: key, Stored: written, Records: records, Bytes: written}}
	if err := removeExtra(ctx, client, m.Bucket, prefixBig, objs); err != nil {
		return err
	}
	m.Prefixes[prefixBig] = &prefixManifest{Prefix: prefixBig, TargetBytes: size, Objects: objs, Records: records,
		DecompressedBytes: written, StoredBytes: written, GeneratedAt: time.Now().UTC(), GenerateSeconds: time.Since(started).Seconds()}
	return nil
}
