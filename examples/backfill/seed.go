package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

// The embedded server's location and the credentials the workers find in the environment.
// gofakes3 does not check signatures, so any key pair works; these only have to be present
// for the AWS SDK to sign at all.
const (
	embeddedBucket = "backfill-events"
	embeddedPrefix = "events/2026/11/01/"
	embeddedRegion = "us-east-1"
	embeddedKeyID  = "backfill-example"
	embeddedSecret = "backfill-example-secret"
)

type eventType struct {
	name   string
	weight int
	paths  []string // a %d stands for a random ID
}

// eventTypes are the seeded event types with their relative frequencies, skewed the way
// clickstreams are (mostly views, rarely purchases) so that the table looks like real
// traffic while the rarest type still gets thousands of records at the default size.
var eventTypes = []eventType{
	{"page_view", 540, []string{"/", "/products", "/products/%d", "/blog/%d", "/about"}},
	{"click", 200, []string{"/products/%d", "/products", "/"}},
	{"scroll", 120, []string{"/blog/%d", "/products/%d"}},
	{"search", 80, []string{"/search"}},
	{"add_to_cart", 40, []string{"/cart"}},
	{"purchase", 20, []string{"/checkout/complete"}},
}

// pickEventType draws an event type with probability proportional to its weight.
func pickEventType(rng *rand.Rand) eventType {
	total := 0
	for _, t := range eventTypes {
		total += t.weight
	}
	pick := rng.IntN(total)
	for _, t := range eventTypes[:len(eventTypes)-1] {
		if pick < t.weight {
			return t
		}
		pick -= t.weight
	}
	return eventTypes[len(eventTypes)-1]
}

// objectsPerDay is one object per hour of the seeded day, as a log shipper rotating hourly
// would write them.
const objectsPerDay = 24

// seedSummary is what seed wrote: the expected answer of the pipeline.
type seedSummary struct {
	Objects      int
	Records      int64
	StoredBytes  int64            // bytes as stored, what s3io counts as raw_bytes
	PlainBytes   int64            // bytes after decompression, what s3io frames
	Kinds        map[string]int   // objects per compression kind
	CountsByType map[string]int64 // records per event type
}

// embeddedS3 is an in-process S3-compatible server on a random loopback port.
type embeddedS3 struct {
	URL    string
	srv    *http.Server
	client *s3.Client
}

// startEmbeddedS3 starts gofakes3 with its in-memory backend. The listener is bound before
// the call returns, so the server accepts requests as soon as Serve's goroutine runs.
func startEmbeddedS3() (*embeddedS3, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listening for the embedded S3 server: %w", err)
	}
	srv := &http.Server{
		Handler:           gofakes3.New(s3mem.New()).Server(),
		ReadHeaderTimeout: 10 * time.Second,
	}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintf(os.Stderr, "backfill: embedded S3 server stopped: %v\n", err)
		}
	}()
	url := "http://" + ln.Addr().String()
	return &embeddedS3{
		URL: url,
		srv: srv,
		// The seeding client is built explicitly rather than from the environment, so that
		// seeding works whatever the user's AWS configuration says.
		client: s3.New(s3.Options{
			Region:       embeddedRegion,
			BaseEndpoint: aws.String(url),
			UsePathStyle: true,
			Credentials:  credentials.NewStaticCredentialsProvider(embeddedKeyID, embeddedSecret, ""),
		}),
	}, nil
}

func (e *embeddedS3) Close() error { return e.srv.Close() }

// seed creates the bucket and writes n records spread over one day of hourly objects, a
// third each plain, gzip and zstd. The same n always yields the same bytes.
func (e *embeddedS3) seed(ctx context.Context, n int64) (seedSummary, error) {
	sum := seedSummary{Kinds: map[string]int{}, CountsByType: map[string]int64{}}
	if _, err := e.client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(embeddedBucket)}); err != nil {
		return sum, fmt.Errorf("creating bucket %s: %w", embeddedBucket, err)
	}
	rng := rand.New(rand.NewPCG(2026, 11))

	kinds := make([]string, objectsPerDay)
	for i := range kinds {
		kinds[i] = []string{"plain", "gzip", "zstd"}[i%3]
	}
	rng.Shuffle(len(kinds), func(i, j int) { kinds[i], kinds[j] = kinds[j], kinds[i] })

	zw, err := zstd.NewWriter(nil)
	if err != nil {
		return sum, err
	}
	defer zw.Close()

	day := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	counts := hourlyCounts(rng, n)
	var plain bytes.Buffer
	for hour, count := range counts {
		plain.Reset()
		start := day.Add(time.Duration(hour) * time.Hour)
		for i := range count {
			// Spread the hour's events evenly so that timestamps ascend within an object.
			ts := start.Add(time.Duration(i*3600/count) * time.Second)
			sum.CountsByType[writeEvent(&plain, rng, ts)]++
		}

		key := fmt.Sprintf("%s%02d.ndjson", embeddedPrefix, hour)
		body := plain.Bytes()
		switch kinds[hour] {
		case "gzip":
			key += ".gz"
			var gz bytes.Buffer
			w := gzip.NewWriter(&gz)
			if _, err := w.Write(body); err != nil {
				return sum, err
			}
			if err := w.Close(); err != nil {
				return sum, err
			}
			body = gz.Bytes()
		case "zstd":
			key += ".zst"
			body = zw.EncodeAll(body, nil)
		}
		if _, err := e.client.PutObject(ctx, &s3.PutObjectInput{
			Bucket: aws.String(embeddedBucket),
			Key:    aws.String(key),
			Body:   bytes.NewReader(body),
		}); err != nil {
			return sum, fmt.Errorf("putting s3://%s/%s: %w", embeddedBucket, key, err)
		}
		sum.Objects++
		sum.Records += count
		sum.StoredBytes += int64(len(body))
		sum.PlainBytes += int64(plain.Len())
		sum.Kinds[kinds[hour]]++
	}
	return sum, nil
}

// hourlyCounts divides n records over the day's hours following a diurnal curve (quiet at
// 04:00, busy at 16:00) with some jitter, so object sizes vary by an order of magnitude.
func hourlyCounts(rng *rand.Rand, n int64) []int64 {
	weights := make([]float64, objectsPerDay)
	var total float64
	for h := range weights {
		diurnal := 0.5 - 0.5*math.Cos(2*math.Pi*float64(h-4)/objectsPerDay)
		weights[h] = (0.1 + diurnal) * (0.8 + 0.4*rng.Float64())
		total += weights[h]
	}
	counts := make([]int64, objectsPerDay)
	var assigned int64
	for h, w := range weights {
		counts[h] = int64(float64(n) * w / total)
		assigned += counts[h]
	}
	// Rounding down leaves fewer than objectsPerDay records over: hand them out one per hour.
	for h := 0; assigned < n; h++ {
		counts[h]++
		assigned++
	}
	return counts
}

// writeEvent appends one NDJSON event at ts to buf and returns its type.
func writeEvent(buf *bytes.Buffer, rng *rand.Rand, ts time.Time) string {
	et := pickEventType(rng)
	path := et.paths[rng.IntN(len(et.paths))]
	if strings.Contains(path, "%d") {
		path = fmt.Sprintf(path, 1000+rng.IntN(9000))
	}
	// Latencies are roughly exponential: many fast responses, a long tail.
	ms := 2 + int(rng.ExpFloat64()*40)
	fmt.Fprintf(buf, `{"ts":%q,"type":%q,"user":"u%d","path":%q,"ms":%d}`+"\n",
		ts.Format(time.RFC3339), et.name, 1+rng.IntN(50000), path, ms)
	return et.name
}
