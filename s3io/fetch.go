package s3io

import (
	"context"
	"fmt"
	"io"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// pinnedReader streams one object as it was when planned: every GET carries
// If-Match: <planned ETag>, so an object overwritten since planning fails with 412
// PreconditionFailed instead of splicing new bytes into the output, and a deleted one with
// 404 NoSuchKey. The body is streamed, never buffered whole.
type pinnedReader struct {
	ctx     context.Context
	client  *s3.Client
	bucket  string
	member  Member
	verify  bool
	body    io.ReadCloser
	offset  int64 // raw bytes delivered so far
	counted *int64
}

// open issues the pinned GET.
func (r *pinnedReader) open() error {
	in := &s3.GetObjectInput{
		Bucket:  aws.String(r.bucket),
		Key:     aws.String(r.member.Key),
		IfMatch: aws.String(r.member.ETag),
	}
	if r.verify {
		in.ChecksumMode = types.ChecksumModeEnabled
	}
	out, err := r.client.GetObject(r.ctx, in)
	if err != nil {
		return describeS3Error(err, "pinned GET")
	}
	r.body = out.Body
	return nil
}

func (r *pinnedReader) Read(p []byte) (int, error) {
	n, err := r.body.Read(p)
	r.offset += int64(n)
	*r.counted += int64(n)
	if err != nil && err != io.EOF {
		return n, &sourceReadError{offset: r.offset, err: err}
	}
	return n, err
}

func (r *pinnedReader) Close() error {
	if r.body == nil {
		return nil
	}
	return r.body.Close()
}

// sourceReadError is a failure to read the object's bytes from S3, as opposed to a failure
// to decode them: decompressors pass it through instead of calling the object corrupt.
type sourceReadError struct {
	offset int64
	err    error
}

func (e *sourceReadError) Error() string {
	return fmt.Sprintf("reading the body at byte %d: %v", e.offset, e.err)
}

func (e *sourceReadError) Unwrap() error { return e.err }
