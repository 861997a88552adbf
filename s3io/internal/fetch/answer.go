package fetch

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// ErrOtherVersion marks an answer that carries another version of the object than the one
// planned: its ETag, or the object size its Content-Range or Content-Length gives, differs
// from the listing's. It means what a 412 to the pinned GET means (the object was
// overwritten since planning), from a server that ignored If-Match.
var ErrOtherVersion = errors.New("s3io: the server sent another version of the object")

// ErrBadAnswer marks an answer that does not answer the request: a range other than the one
// asked for, a status other than 200 or 206, a missing length or ETag. The server is at fault,
// not the object; the read is not retried, since the same server would answer the same.
var ErrBadAnswer = errors.New("s3io: the server's answer does not match the request")

// answer is what the checks of one GET's response decided about its body.
type answer struct {
	// skip is how many leading body bytes precede the requested range: the server sent the
	// whole object (200) for a ranged request.
	skip int64
	// whole is true when the body is the whole object although a range was asked for; the
	// reader then stops at the range's end itself.
	whole bool
}

// checkAnswer checks the response to a GET of [pos, limit) of o before any byte of its body
// is used. Every GET a PinnedReader makes goes through it: parts, whole objects, body
// resumes, range tails and the planner's magic probe alike, since a server or an
// intermediary may ignore If-Match (and send the current version) or Range (and send the
// whole object with 200, which HTTP allows).
//
//   - The ETag must be the planned one: otherwise the body is another version
//     (ErrOtherVersion), exactly what a 412 would have said; an answer without one cannot be
//     checked (ErrBadAnswer).
//   - A 206 must carry Content-Range "bytes pos-(limit-1)/size" with the planned size: another
//     size is another version (ErrOtherVersion); another range is ErrBadAnswer.
//   - A 416 (Range Not Satisfiable, seen by request as the SDK's error) is another version
//     too: every range asked for lies within the planned size, so the object is shorter now.
//   - A 200 must carry Content-Length equal to the planned size (else ErrOtherVersion). To a
//     ranged request it is the whole object: it is used, not refused, by discarding the
//     bytes before pos and stopping at limit. Refusing it would fail every read behind such
//     a server, and a body resumed mid-object would fail after records were emitted, not
//     "refused with no record emitted"; reading the object's prefix again costs bytes, never
//     correctness.
//
// An object planned without an ETag (a listing that gave none) is not pinned, and its ETag
// is not compared.
func checkAnswer(bucket string, o Object, pos, limit int64, ranged bool, out *s3.GetObjectOutput) (answer, error) {
	// Only a refused answer needs its description: a GET that passes allocates nothing here.
	where := func() string {
		if ranged {
			return fmt.Sprintf("GET s3://%s/%s bytes=%d-%d", bucket, o.Key, pos, limit-1)
		}
		return fmt.Sprintf("GET s3://%s/%s", bucket, o.Key)
	}
	if o.ETag != "" {
		got := derefString(out.ETag)
		switch {
		case got == "":
			return answer{}, fmt.Errorf("%s: %w: no ETag, planned %s: the version sent cannot be checked", where(), ErrBadAnswer, o.ETag)
		case unquote(got) != unquote(o.ETag):
			return answer{}, fmt.Errorf("%s: %w: ETag %s, planned %s (the server ignored If-Match)", where(), ErrOtherVersion, got, o.ETag)
		}
	}
	status := statusOf(out)
	switch status {
	case http.StatusPartialContent:
		cr := derefString(out.ContentRange)
		first, last, size, ok := parseContentRange(cr)
		switch {
		case !ok:
			return answer{}, fmt.Errorf("%s: %w: 206 with Content-Range %q", where(), ErrBadAnswer, cr)
		case size != o.Size:
			return answer{}, fmt.Errorf("%s: %w: Content-Range %q names an object of %d bytes, planned %d", where(), ErrOtherVersion, cr, size, o.Size)
		case first != pos || last != limit-1:
			return answer{}, fmt.Errorf("%s: %w: 206 with Content-Range %q", where(), ErrBadAnswer, cr)
		case out.ContentLength != nil && *out.ContentLength != last-first+1:
			return answer{}, fmt.Errorf("%s: %w: Content-Range %q with Content-Length %d", where(), ErrBadAnswer, cr, *out.ContentLength)
		}
		return answer{}, nil
	case http.StatusOK:
		switch {
		case out.ContentLength == nil:
			return answer{}, fmt.Errorf("%s: %w: 200 without Content-Length", where(), ErrBadAnswer)
		case *out.ContentLength != o.Size:
			return answer{}, fmt.Errorf("%s: %w: 200 with %d bytes, planned %d", where(), ErrOtherVersion, *out.ContentLength, o.Size)
		}
		if ranged {
			return answer{skip: pos, whole: true}, nil
		}
		return answer{}, nil
	}
	return answer{}, fmt.Errorf("%s: %w: status %d", where(), ErrBadAnswer, status)
}

// refusedRange reports whether err is a GET's 416 Range Not Satisfiable answer.
func refusedRange(err error) bool {
	var re *smithyhttp.ResponseError
	return errors.As(err, &re) && re.HTTPStatusCode() == http.StatusRequestedRangeNotSatisfiable
}

// statusOf returns the HTTP status of the response out came from. The SDK keeps the raw
// response in the output's metadata; without it, a Content-Range is taken to mean 206.
func statusOf(out *s3.GetObjectOutput) int {
	if raw, ok := awsmiddleware.GetRawResponse(out.ResultMetadata).(*smithyhttp.Response); ok && raw != nil && raw.Response != nil {
		return raw.StatusCode
	}
	if out.ContentRange != nil {
		return http.StatusPartialContent
	}
	return http.StatusOK
}

// parseContentRange parses "bytes first-last/size" with a known size.
func parseContentRange(s string) (first, last, size int64, ok bool) {
	rest, found := strings.CutPrefix(s, "bytes ")
	if !found {
		return 0, 0, 0, false
	}
	span, total, found := strings.Cut(rest, "/")
	if !found {
		return 0, 0, 0, false
	}
	a, b, found := strings.Cut(span, "-")
	if !found {
		return 0, 0, 0, false
	}
	var err1, err2, err3 error
	first, err1 = strconv.ParseInt(a, 10, 64)
	last, err2 = strconv.ParseInt(b, 10, 64)
	size, err3 = strconv.ParseInt(total, 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || first < 0 || last < first || size <= last {
		return 0, 0, 0, false
	}
	return first, last, size, true
}

// unquote drops the quotes around an ETag: listings and GET headers agree on them on S3,
// not on every S3-compatible server.
func unquote(etag string) string { return strings.Trim(etag, `"`) }

func derefString(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
