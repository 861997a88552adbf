package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"sync/atomic"
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
	embeddedBucket = "incremental-events"
	embeddedPrefix = "events/2026/11/02/"
	embeddedRegion = "us-east-1"
	embeddedKeyID  = "incremental-example"
	embeddedSecret = "incremental-example-secret"
)

// object is what the bucket holds under one key, as this program wrote it: the expected
// answer of any read of that key.
type object struct {
	Kind    string // plain, gzip or zstd
	Records int64  // records a read yields; 0 for a corrupt object
	Corrupt bool
	ETag    string // as PutObject returned it, quotes included
	Stored  int64
}

// embeddedS3 is an in-process S3-compatible server on a random loopback port, with a switch
// that makes it fail every GET of one key, and a client that writes to it.
type embeddedS3 struct {
	URL    string
	srv    *http.Server
	inner  http.Handler
	client *s3.Client

	failKey    atomic.Pointer[string]
	failedGets atomic.Int64

	zw      *zstd.Encoder
	objects map[string]object
	rng     *rand.Rand
}

// startEmbeddedS3 starts gofakes3 with its in-memory backend, creates the bucket, and
// returns once the listener is bound, so the server accepts requests as soon as Serve's
// goroutine runs.
func startEmbeddedS3(ctx context.Context) (*embeddedS3, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listening for the embedded S3 server: %w", err)
	}
	zw, err := zstd.NewWriter(nil)
	if err != nil {
		return nil, err
	}
	url := "http://" + ln.Addr().String()
	e := &embeddedS3{
		URL:   url,
		inner: gofakes3.New(s3mem.New()).Server(),
		// The seeding client is built explicitly rather than from the environment, so that
		// seeding works whatever the user's AWS configuration says.
		client: s3.New(s3.Options{
			Region:       embeddedRegion,
			BaseEndpoint: aws.String(url),
			UsePathStyle: true,
			Credentials:  credentials.NewStaticCredentialsProvider(embeddedKeyID, embeddedSecret, ""),
		}),
		zw:      zw,
		objects: map[string]object{},
		rng:     rand.New(rand.NewPCG(2026, 11)),
	}
	e.srv = &http.Server{Handler: e, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := e.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintf(os.Stderr, "incremental: embedded S3 server stopped: %v\n", err)
		}
	}()
	if _, err := e.client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(embeddedBucket)}); err != nil {
		e.Close()
		return nil, fmt.Errorf("creating bucket %s: %w", embeddedBucket, err)
	}
	return e, nil
}

func (e *embeddedS3) Close() error {
	e.zw.Close()
	return e.srv.Close()
}

// ServeHTTP answers a GET of the failing key with 500 InternalError, as S3 does on a bad
// day, and passes every other request to gofakes3. Listing is unaffected, so the key is
// planned; only its read fails, and s3io quarantines it as "unreadable" once
// Config.MaxAttempts attempts have failed.
func (e *embeddedS3) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if k := e.failKey.Load(); k != nil && r.Method == http.MethodGet && r.URL.Path == "/"+embeddedBucket+"/"+*k {
		e.failedGets.Add(1)
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusInternalServerError)
		io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?>`+
			`<Error><Code>InternalError</Code><Message>We encountered an internal error. Please try again.</Message></Error>`)
		return
	}
	e.inner.ServeHTTP(w, r)
}

// failGets makes every GET of key fail from now on; an empty key ends the fault.
func (e *embeddedS3) failGets(key string) {
	if key == "" {
		e.failKey.Store(nil)
		return
	}
	e.failKey.Store(&key)
}

// put writes records fresh NDJSON events to key, compressed as kind says, and records what
// it wrote. The events come from one seeded generator, so a run always writes the same bytes.
func (e *embeddedS3) put(ctx context.Context, key, kind string, records int) error {
	var plain bytes.Buffer
	start := time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC).Add(time.Duration(e.rng.IntN(86400)) * time.Second)
	for i := range records {
		writeEvent(&plain, e.rng, start.Add(time.Duration(i)*time.Second))
	}
	body, err := e.encode(kind, plain.Bytes())
	if err != nil {
		return err
	}
	return e.putBytes(ctx, key, object{Kind: kind, Records: int64(records)}, body)
}

// putCorrupt writes bytes that are not gzip under a .gz key: the reader fails on the gzip
// header, before any record, and quarantines the object as "corrupt".
func (e *embeddedS3) putCorrupt(ctx context.Context, key string) error {
	body := make([]byte, 2048)
	for i := range body {
		body[i] = byte(e.rng.IntN(256))
	}
	body[0], body[1] = 'N', 'O' // never the gzip magic, whatever the generator drew
	return e.putBytes(ctx, key, object{Kind: "gzip", Corrupt: true}, body)
}

func (e *embeddedS3) putBytes(ctx context.Context, key string, o object, body []byte) error {
	out, err := e.client.PutObject(ctx, &s3.PutObjectInput{
		Bucket: aws.String(embeddedBucket),
		Key:    aws.String(key),
		Body:   bytes.NewReader(body),
	})
	if err != nil {
		return fmt.Errorf("putting s3://%s/%s: %w", embeddedBucket, key, err)
	}
	o.ETag, o.Stored = aws.ToString(out.ETag), int64(len(body))
	e.objects[key] = o
	return nil
}

func (e *embeddedS3) delete(ctx context.Context, key string) error {
	if _, err := e.client.DeleteObject(ctx, &s3.DeleteObjectInput{
		Bucket: aws.String(embeddedBucket),
		Key:    aws.String(key),
	}); err != nil {
		return fmt.Errorf("deleting s3://%s/%s: %w", embeddedBucket, key, err)
	}
	delete(e.objects, key)
	return nil
}

func (e *embeddedS3) encode(kind string, plain []byte) ([]byte, error) {
	switch kind {
	case "gzip":
		var gz bytes.Buffer
		w := gzip.NewWriter(&gz)
		if _, err := w.Write(plain); err != nil {
			return nil, err
		}
		if err := w.Close(); err != nil {
			return nil, err
		}
		return gz.Bytes(), nil
	case "zstd":
		return e.zw.EncodeAll(plain, nil), nil
	}
	return plain, nil
}

// extension is the key suffix s3io's automatic decompression recognises for kind.
func extension(kind string) string {
	switch kind {
	case "gzip":
		return ".ndjson.gz"
	case "zstd":
		return ".ndjson.zst"
	}
	return ".ndjson"
}

var eventTypes = []string{"page_view", "page_view", "page_view", "click", "click", "scroll", "search", "add_to_cart", "purchase"}

// writeEvent appends one NDJSON event at ts to buf.
func writeEvent(buf *bytes.Buffer, rng *rand.Rand, ts time.Time) {
	fmt.Fprintf(buf, `{"ts":%q,"type":%q,"user":"u%d","path":"/products/%d","ms":%d}`+"\n",
		ts.Format(time.RFC3339), eventTypes[rng.IntN(len(eventTypes))], 1+rng.IntN(50000), 1000+rng.IntN(9000), 2+int(rng.ExpFloat64()*40))
}
