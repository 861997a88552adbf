package s3io

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// bodyResumeBackoff is the first wait before resuming a broken body; it doubles per resume
// up to retryMaxBackoff. The SDK's retryer covers a failed request, but not a response body
// that breaks or stalls after the headers arrived: that is resumed here, with a ranged GET
// from the next byte, pinned like the first.
const bodyResumeBackoff = 100 * time.Millisecond

// pinnedGets makes the pinned reads of one bucket: it owns the client and the settings every
// such read follows, so that no read can be started with a setting missing.
type pinnedGets struct {
	client          *s3.Client
	bucket          string
	readTimeout     time.Duration // see Config.ReadTimeout
	maxAttempts     int           // see Config.MaxAttempts; bounds body resumes
	verifyChecksums bool          // see Config.VerifyChecksums
}

func newPinnedGets(client *s3.Client, cfg *Config, bucket string) *pinnedGets {
	return &pinnedGets{client: client, bucket: bucket, readTimeout: cfg.ReadTimeout,
		maxAttempts: cfg.MaxAttempts, verifyChecksums: cfg.VerifyChecksums}
}

// open returns a reader of the bytes [pos, end) of member, in one request unless its body
// breaks.
func (g *pinnedGets) open(ctx context.Context, member Member, pos, end int64) *pinnedReader {
	return &pinnedReader{ctx: ctx, g: g, member: member, pos: pos, end: end}
}

// openWindowed returns a reader of the bytes [pos, end) of member whose first request ends
// at firstLimit, and whose later ones cover window bytes each: a segment needs its own
// range plus the tail of the record that straddles its end, not the rest of the object.
func (g *pinnedGets) openWindowed(ctx context.Context, member Member, pos, end, firstLimit, window int64) *pinnedReader {
	r := g.open(ctx, member, pos, end)
	r.firstLimit, r.window = firstLimit, window
	return r
}

// pinnedReader streams the bytes [pos, end) of one object as it was when planned: every GET
// carries If-Match: <planned ETag>, so an object overwritten since planning fails with 412
// PreconditionFailed instead of splicing new bytes into the output, and a deleted one with
// 404 NoSuchKey. The body is streamed, never buffered whole, and a body that breaks is
// resumed where it broke.
type pinnedReader struct {
	ctx    context.Context
	g      *pinnedGets
	member Member

	pos int64 // object offset of the next byte Read returns
	end int64 // object offset where the read stops

	// firstLimit, when > 0, ends the first request there instead of at end, and later
	// requests cover window bytes each (see openWindowed).
	firstLimit int64
	window     int64

	body     io.ReadCloser
	cancel   context.CancelFunc // ends the current request
	stall    *time.Timer        // fires when the body sends nothing for the read timeout
	timedOut atomic.Bool
	reqEnd   int64 // end of the current request's range
	gets     int   // GET requests made
	resumes  int   // requests made to resume a broken body
	raw      int64 // bytes received
}

// request issues a pinned GET for [r.pos, limit).
func (r *pinnedReader) request(limit int64) error {
	in := &s3.GetObjectInput{
		Bucket:  aws.String(r.g.bucket),
		Key:     aws.String(r.member.Key),
		IfMatch: aws.String(r.member.ETag),
	}
	// A whole-object GET sends no Range: S3 answers "bytes=0-" on an empty object with 416.
	if r.pos > 0 || limit < r.member.Size {
		in.Range = aws.String("bytes=" + strconv.FormatInt(r.pos, 10) + "-" + strconv.FormatInt(limit-1, 10))
	} else if r.g.verifyChecksums {
		// Checksums cover whole objects only; a ranged GET cannot be validated.
		in.ChecksumMode = types.ChecksumModeEnabled
	}
	r.gets++
	ctx, cancel := context.WithCancel(r.ctx)
	out, err := r.g.client.GetObject(ctx, in)
	if err != nil {
		cancel()
		return describeS3Error(err, "pinned GET")
	}
	r.body, r.reqEnd, r.cancel = out.Body, limit, cancel
	// A body that stops sending would block Read forever: the timer ends the request, and
	// the read error it causes is resumed like a dropped connection.
	r.timedOut.Store(false)
	r.stall = time.AfterFunc(r.g.readTimeout, func() {
		r.timedOut.Store(true)
		cancel()
	})
	return nil
}

func (r *pinnedReader) nextLimit() int64 {
	if r.firstLimit > 0 {
		if r.gets == 0 {
			return min(r.firstLimit, r.end)
		}
		return min(r.pos+r.window, r.end)
	}
	return r.end
}

func (r *pinnedReader) Read(p []byte) (int, error) {
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
		r.stall.Reset(r.g.readTimeout)
		n, err := r.body.Read(p)
		r.pos += int64(n)
		r.raw += int64(n)
		switch {
		case err == nil:
			return n, nil
		case err == io.EOF && r.pos >= r.reqEnd:
			r.Close()
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
			err = fmt.Errorf("no bytes for %v: %w", r.g.readTimeout, errBodyStalled)
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

// readFull fills buf with the bytes [r.pos, r.end), which must be len(buf) long. An empty
// range still makes its request, so that an empty object's pin is checked.
func (r *pinnedReader) readFull(buf []byte) error {
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
			return &sourceReadError{offset: r.pos, attempts: r.resumes + 1, err: io.ErrUnexpectedEOF}
		case err == io.EOF:
			return nil
		case err != nil:
			return err
		}
	}
}

// waitToResume decides whether a broken body is resumed, and waits out the backoff.
func (r *pinnedReader) waitToResume(cause error) error {
	if !resumableBodyError(cause) || r.resumes+1 >= r.g.maxAttempts {
		return &sourceReadError{offset: r.pos, attempts: r.resumes + 1, err: cause}
	}
	wait := min(bodyResumeBackoff<<r.resumes, retryMaxBackoff)
	wait = wait/2 + rand.N(wait/2+1) // jitter, so that a fleet does not retry in step
	r.resumes++
	select {
	case <-time.After(wait):
		return nil
	case <-r.ctx.Done():
		return &sourceReadError{offset: r.pos, attempts: r.resumes, err: r.ctx.Err()}
	}
}

// resumableBodyError reports whether a body read error is the connection's fault.
func resumableBodyError(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var ne net.Error
	return errors.Is(err, errBodyStalled) || errors.Is(err, io.ErrUnexpectedEOF) || errors.As(err, &ne) || errors.Is(err, net.ErrClosed) ||
		isConnReset(err)
}

func isConnReset(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNABORTED)
}

func (r *pinnedReader) Close() error {
	if r.body == nil {
		return nil
	}
	r.stall.Stop()
	err := r.body.Close()
	r.cancel()
	r.body = nil
	return err
}

// sourceReadError is a failure to read the object's bytes from S3, as opposed to a failure
// to decode them: decompressors pass it through instead of calling the object corrupt.
type sourceReadError struct {
	offset   int64
	attempts int
	err      error
}

func (e *sourceReadError) Error() string {
	return fmt.Sprintf("reading the body at byte %d (%d attempts): %v", e.offset, e.attempts, e.err)
}

func (e *sourceReadError) Unwrap() error { return e.err }
