package fetch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/spate-io/beam-s3/s3io/internal/s3client"
)

// resumeBackoff spaces the resumes of a broken body. The SDK's retryer covers a failed
// request, but not a response body that breaks or stalls after the headers arrived: that is
// resumed here, with a ranged GET from the next byte, pinned like the first, and waits as
// the retryer waits between two attempts at a request (the same jittered exponential
// policy, capped at the same s3client.MaxBackoff). It holds no per-read state.
var resumeBackoff = retry.NewExponentialJitterBackoff(s3client.MaxBackoff)

// ErrBodyStalled marks a body that sent nothing for Settings.ReadTimeout.
var ErrBodyStalled = errors.New("s3io: response body stalled")

// Gets makes the pinned reads of one bucket: it owns the client and the settings every such
// read follows, so that no read can be started with a setting missing.
type Gets struct {
	client *s3.Client
	bucket string
	set    Settings
}

// NewGets returns the pinned reads of bucket through client.
func NewGets(client *s3.Client, bucket string, set Settings) *Gets {
	return &Gets{client: client, bucket: bucket, set: set}
}

// Open returns a reader of the bytes [pos, end) of o, in one request unless its body breaks.
func (g *Gets) Open(ctx context.Context, o Object, pos, end int64) *PinnedReader {
	return &PinnedReader{ctx: ctx, g: g, obj: o, pos: pos, end: end}
}

// OpenWindowed returns a reader of the bytes [pos, end) of o whose requests cover window
// bytes each: a ranged read needs its own range plus the tail of the record that straddles
// its end, not the rest of the object, and a planner's probe for a unit start the few KiB it
// reads before it finds one.
func (g *Gets) OpenWindowed(ctx context.Context, o Object, pos, end, window int64) *PinnedReader {
	r := g.Open(ctx, o, pos, end)
	r.window = window
	return r
}

// OpenGrowing is OpenWindowed with windows that double from first after each request, up
// to most: a probe that finds what it looks for early costs one small request, one that
// must look far a few requests, not one per window, and what the last request asks past
// what the probe reads stays under most.
func (g *Gets) OpenGrowing(ctx context.Context, o Object, pos, end, first, most int64) *PinnedReader {
	r := g.OpenWindowed(ctx, o, pos, end, first)
	r.grow, r.most = true, max(most, first)
	return r
}

// PinnedReader streams the bytes [pos, end) of one object as it was when planned: every GET
// carries If-Match: <planned ETag>, so an object overwritten since planning fails with 412
// PreconditionFailed instead of splicing new bytes into the output, and a deleted one with
// 404 NoSuchKey. Every answer is also checked against its request before its body is used
// (checkAnswer), for servers that ignore If-Match or Range. The body is streamed, never
// buffered whole, and a body that breaks is resumed where it broke.
type PinnedReader struct {
	ctx context.Context
	g   *Gets
	obj Object

	pos int64 // object offset of the next byte Read returns
	end int64 // object offset where the read stops

	// window, when > 0, ends each request window bytes after its first byte instead of at
	// end (see OpenWindowed).
	window int64
	grow   bool  // the window doubles after each request (OpenGrowing), up to most
	most   int64 // the largest window a growing reader asks for

	body     io.ReadCloser
	cancel   context.CancelFunc // ends the current request
	stall    *time.Timer        // fires when the body sends nothing for the read timeout
	timedOut atomic.Bool
	reqEnd   int64 // end of the current request's range
	// skip and whole follow the current request's answer (see checkAnswer): a whole object
	// sent for a range is read from its first byte, and the skip bytes before r.pos are
	// discarded; the read then stops at reqEnd itself.
	skip  int64
	whole bool

	gets         int   // GET requests made
	resumes      int   // requests made to resume a broken body
	received     int64 // body bytes received
	requested    int64 // bytes the requests' ranges asked for
	rangeIgnored int   // ranged GETs answered with the whole object
	// firstByte is how long the first request took to answer: the request latency a part
	// pays before its body flows.
	firstByte time.Duration
}

// request issues a pinned GET for [r.pos, limit).
func (r *PinnedReader) request(limit int64) error {
	in := &s3.GetObjectInput{
		Bucket:  aws.String(r.g.bucket),
		Key:     aws.String(r.obj.Key),
		IfMatch: aws.String(r.obj.ETag),
	}
	if r.obj.VersionID != "" {
		in.VersionId = aws.String(r.obj.VersionID)
	}
	// A whole-object GET sends no Range: S3 answers "bytes=0-" on an empty object with 416.
	if r.pos > 0 || limit < r.obj.Size {
		in.Range = aws.String("bytes=" + strconv.FormatInt(r.pos, 10) + "-" + strconv.FormatInt(limit-1, 10))
	}
	r.gets++
	r.requested += limit - r.pos
	ctx, cancel := context.WithCancel(r.ctx)
	asked := time.Now()
	out, err := r.g.client.GetObject(ctx, in)
	if r.gets == 1 {
		r.firstByte = time.Since(asked)
	}
	if err != nil {
		cancel()
		if refusedRange(err) {
			// Every range asked for lies within the planned size: the object is shorter now.
			return fmt.Errorf("pinned GET s3://%s/%s at byte %d: %w: 416 to a range within the planned %d bytes (the server ignored If-Match): %w",
				r.g.bucket, r.obj.Key, r.pos, ErrOtherVersion, r.obj.Size, err)
		}
		return fmt.Errorf("pinned GET s3://%s/%s at byte %d: %w", r.g.bucket, r.obj.Key, r.pos, err)
	}
	ans, err := checkAnswer(r.g.bucket, r.obj, r.pos, limit, in.Range != nil, out)
	if err != nil {
		out.Body.Close()
		cancel()
		return err
	}
	if ans.whole {
		r.rangeIgnored++
	}
	r.body, r.reqEnd, r.cancel = out.Body, limit, cancel
	r.skip, r.whole = ans.skip, ans.whole
	// A body that stops sending would block Read forever: the timer ends the request, and
	// the read error it causes is resumed like a dropped connection.
	r.timedOut.Store(false)
	r.stall = time.AfterFunc(r.g.set.ReadTimeout, func() {
		r.timedOut.Store(true)
		cancel()
	})
	return nil
}

func (r *PinnedReader) nextLimit() int64 {
	if r.window > 0 {
		return min(r.pos+r.window, r.end)
	}
	return r.end
}

func (r *PinnedReader) Read(p []byte) (int, error) {
	for {
		// An empty object is still fetched once, so that its pin is checked.
		if r.pos >= r.end && (r.gets > 0 || r.pos > 0) {
			return 0, io.EOF
		}
		if r.body == nil {
			if err := r.request(r.nextLimit()); err != nil {
				return 0, err
			}
		}
		skipping := r.skip > 0
		n, err := r.readBody(p)
		switch {
		case err == nil && skipping && len(p) > 0:
			continue
		case err == nil:
			return n, nil
		case err == io.EOF && r.pos >= r.reqEnd:
			r.Close()
			if r.grow {
				r.window = min(2*r.window, r.most)
			}
			if n > 0 {
				return n, nil
			}
			continue
		}
		// The body ended early, broke or stalled: resume from r.pos with the same pin.
		timedOut := r.timedOut.Load()
		r.Close()
		switch {
		case timedOut:
			err = fmt.Errorf("no bytes for %v: %w", r.g.set.ReadTimeout, ErrBodyStalled)
		case err == io.EOF:
			err = io.ErrUnexpectedEOF
		}
		if rerr := r.waitToResume(err); rerr != nil {
			return n, rerr
		}
		if n > 0 {
			return n, nil
		}
	}
}

// readBody reads the current request's body into p, counting what arrives: bytes before
// r.pos that a whole-object answer sends are read into p as scratch and not returned, and
// the read of a whole-object answer ends at the range asked for.
func (r *PinnedReader) readBody(p []byte) (int, error) {
	r.stall.Reset(r.g.set.ReadTimeout)
	buf, skipping := p, r.skip > 0
	switch {
	case skipping:
		buf = p[:min(int64(len(p)), r.skip)] // p is scratch for bytes never returned
	case r.whole:
		buf = p[:min(int64(len(p)), r.reqEnd-r.pos)]
	}
	n, err := r.body.Read(buf)
	r.received += int64(n)
	processReceived.Add(int64(n))
	if skipping {
		r.skip -= int64(n)
		n = 0
	} else {
		r.pos += int64(n)
	}
	if r.whole && err == nil && r.pos >= r.reqEnd {
		err = io.EOF // the range asked for is read; the rest of the object is not wanted
	}
	return n, err
}

// answer makes the first request, if the read needs one, and returns once it is answered,
// its body not yet read: a part is given its buffer only then. The body's stall timer
// waits for the first Read, so that a part waiting for room is not taken for a stalled
// connection.
func (r *PinnedReader) answer() error {
	if r.body != nil || r.pos >= r.end && (r.gets > 0 || r.pos > 0) {
		return nil
	}
	if err := r.request(r.nextLimit()); err != nil {
		return err
	}
	r.stall.Stop()
	return nil
}

// readFull fills buf with the bytes [r.pos, r.end), which must be len(buf) long. An empty
// range still makes its request, so that an empty object's pin is checked.
func (r *PinnedReader) readFull(buf []byte) error {
	var scratch [1]byte
	off := 0
	for {
		dst := buf[off:]
		if len(dst) == 0 {
			if len(buf) > 0 {
				return nil
			}
			dst = scratch[:]
		}
		n, err := r.Read(dst)
		off += n
		switch {
		case err == io.EOF && off < len(buf):
			return &ReadError{Offset: r.pos, Attempts: r.resumes + 1, Err: io.ErrUnexpectedEOF}
		case err == io.EOF:
			return nil
		case err != nil:
			return err
		}
	}
}

// waitToResume decides whether a broken body is resumed, and waits out the backoff.
func (r *PinnedReader) waitToResume(cause error) error {
	if !resumableBodyError(cause) || r.resumes+1 >= r.g.set.MaxAttempts {
		return &ReadError{Offset: r.pos, Attempts: r.resumes + 1, Err: cause}
	}
	wait, err := resumeBackoff.BackoffDelay(r.resumes+1, cause)
	if err != nil {
		return &ReadError{Offset: r.pos, Attempts: r.resumes + 1, Err: err}
	}
	r.resumes++
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-r.ctx.Done():
		return &ReadError{Offset: r.pos, Attempts: r.resumes, Err: r.ctx.Err()}
	}
}

// resumableBodyError reports whether a body read error is the connection's fault.
func resumableBodyError(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var ne net.Error
	return errors.Is(err, ErrBodyStalled) || errors.Is(err, io.ErrUnexpectedEOF) || errors.As(err, &ne) || errors.Is(err, net.ErrClosed) ||
		isConnReset(err)
}

func isConnReset(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNABORTED)
}

// Transferred returns the GET requests the reader made and the body bytes it received,
// those a server sent and the read dropped included: what the reads cost.
func (r *PinnedReader) Transferred() (gets int, received int64) { return r.gets, r.received }

// Requested returns the bytes the reader's requests asked for. A reader closed before its
// last body ends has received less, but the server was asked for, and over a network with
// any delay has sent, most of it: what a probe that stops early costs.
func (r *PinnedReader) Requested() int64 { return r.requested }

// Close ends the current request, if any.
func (r *PinnedReader) Close() error {
	if r.body == nil {
		return nil
	}
	r.stall.Stop()
	err := r.body.Close()
	r.cancel()
	r.body = nil
	return err
}

// ReadError is a failure to read the object's bytes from S3, as opposed to a failure to
// decode them: decompressors pass it through instead of calling the object corrupt.
type ReadError struct {
	Offset   int64 // object offset the read had reached
	Attempts int   // requests made for the bytes from there
	Err      error
}

func (e *ReadError) Error() string {
	return fmt.Sprintf("reading the body at byte %d (%d attempts): %v", e.Offset, e.Attempts, e.Err)
}

func (e *ReadError) Unwrap() error { return e.Err }
