package s3io

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/spate-io/beam-s3/s3io/internal/checksum"
	"github.com/spate-io/beam-s3/s3io/internal/decode"
	"github.com/spate-io/beam-s3/s3io/internal/fetch"
	"github.com/spate-io/beam-s3/s3io/internal/s3client"
)

// Every error value of the package, and how a failed read is classified: fatal (the job
// fails at once), or quarantined for a Reason.

// Reason says why an object was quarantined: a closed set. Each also names a counter,
// objects_failed_<reason>, beside the total objects_failed.
type Reason string

// The reasons a Failure gives.
const (
	// ReasonDeleted: the object was deleted after planning (404 NoSuchKey), or, with
	// Config.Versions, the planned version was deleted permanently (404 NoSuchVersion).
	ReasonDeleted Reason = "deleted"
	// ReasonOverwritten: the object was overwritten after planning; its pinned GET got
	// 412 PreconditionFailed or, from a server that ignores If-Match, an answer of another
	// version: an ETag other than the planned one, or an object size (Content-Range,
	// Content-Length) other than the listed one, or a 416 to a range within the listed
	// size. The answer is refused before any of its bytes is used, so none of the new
	// content was read.
	ReasonOverwritten Reason = "overwritten"
	// ReasonCorrupt: the compressed stream, the archive or the framing is broken (the
	// message names the byte offset where the framer found it broken). An object is
	// clean only when every check its format carries has passed: after its last record
	// the stream is read to its end (a tar's end-of-archive marker is followed by zero
	// padding only; a JSON array by whitespace), and the codec's trailer is verified.
	//
	// A check covers the bytes before it, so records framed from those bytes may be
	// emitted before it fails (bytes a decoder returns with its error are not framed).
	// At most these precede a corrupt Failure:
	//   - gzip: the records of the member whose CRC-32 or length fails (a member is the
	//     whole object for gzip and pigz, 64 KiB for bgzip); earlier members' are checked;
	//   - zstd: those of the frame whose content checksum fails (the zstd CLI writes one
	//     frame, with a checksum unless --no-check; pzstd a frame per chunk);
	//   - bzip2: those of the block (at most 900 kB before run-length encoding) whose CRC
	//     fails, or of the stream whose combined CRC fails;
	//   - xz: those of the block whose check (CRC-32, CRC-64, SHA-256) fails, or of the
	//     stream whose index or footer fails (xz writes one block, xz -T one per 3 x the
	//     dictionary);
	//   - lz4: those of the frame whose content checksum fails (the lz4 CLI writes one);
	//     with block checksums (lz4 -BX), of the block;
	//   - zlib: those of the whole stream (one Adler-32 at its end); raw deflate and
	//     brotli carry no checksum, so only their structure is checked;
	//   - the Snappy framing format checks each chunk before its bytes are used: none;
	//   - a tar: its codec's rule, and every header's checksum before the entry's records;
	//     bytes after the end-of-archive marker fail after the archive's last record;
	//   - a zip: those of the entry whose CRC-32 fails;
	//   - framing (a record cut short, malformed JSON, a bad length prefix): the records
	//     before the byte offset the message names.
	//
	//   - Config.VerifyChecksums: an object's stored checksum is checked when its last
	//     part has been fetched, before that part's bytes are decoded: the records of
	//     every part before it (a composite checksum's parts are checked each at its end:
	//     the records of the upload parts before the failing one). The message names the
	//     algorithm and both values.
	//
	// Every record of an object a check refuses is bytes a decoder produced from the
	// object's stored bytes, never one a framer invented; the Failure's position says
	// where the records that follow it would have been.
	ReasonCorrupt Reason = "corrupt"
	// ReasonUnsupported: the object is in a format s3io does not read — 7z, rar, .lzma,
	// .Z, lzip, lzop, legacy lz4, a zstd frame needing a dictionary, an encrypted zip
	// entry, an xz filter s3io does not decode, an archive inside an archive, a tar entry
	// type s3io does not read — or asks for a decoder window above
	// Config.MaxDecoderWindowBytes. The message names the format and what to do. It is
	// never framed as if it were text. What the object's first bytes, its first frame or
	// block header, or a zip's central directory tell is refused before any record is
	// emitted; what a stream tells only further on (a later zstd frame or xz block, a tar
	// entry after others, an entry's own format) fails after the records before it.
	ReasonUnsupported Reason = "unsupported"
	// ReasonRecordTooLarge: a record exceeds Config.MaxRecordBytes.
	ReasonRecordTooLarge Reason = "record_too_large"
	// ReasonUnreadable: the object could not be read within Config.MaxAttempts, or the
	// server answered something other than what was asked: a 206 for another range, a
	// status other than 200 or 206, no length (the error names the answer).
	ReasonUnreadable Reason = "unreadable"
	// ReasonArchived: the object is in an archive storage class and not restored: the
	// listing said so (GLACIER, DEEP_ARCHIVE), or its GET was answered 403
	// InvalidObjectState (archived after planning, or in an Intelligent-Tiering archive
	// tier, which listings do not show).
	ReasonArchived Reason = "archived"
)

var reasons = []Reason{ReasonDeleted, ReasonOverwritten, ReasonCorrupt, ReasonUnsupported, ReasonRecordTooLarge, ReasonUnreadable, ReasonArchived}

// errArchived is the cause of a Failure with reason "archived" that the listing foresaw.
var errArchived = errors.New("s3io: the object is archived")

// ObjectRef names one member of a split as read: the object, the ETag its reads were
// pinned to, and where it sits in which split. Failure and objectError share it.
type ObjectRef struct {
	SplitID string
	Bucket  string
	Key     string
	ETag    string
	// VersionID is the version its reads asked for (Config.Versions); empty otherwise.
	VersionID string
	// Member is the object's ordinal in the split.
	Member int
}

// pin renders what the object's reads were pinned to.
func (r ObjectRef) pin() string {
	if r.VersionID == "" {
		return "ETag " + r.ETag
	}
	return "ETag " + r.ETag + ", version " + r.VersionID
}

// objectError is the failure of reading one member of a split: it names the object and
// how far the read got.
type objectError struct {
	ObjectRef
	// Index is the index of the record being read when the failure happened (records
	// before it were emitted).
	Index int64
	Err   error
}

// Error names the object, its pinned ETag and the record the read failed at.
func (e *objectError) Error() string {
	return fmt.Sprintf("s3io: s3://%s/%s (%s, member %d of split %s) at record %d: %v",
		e.Bucket, e.Key, e.pin(), e.Member, e.SplitID, e.Index, e.Err)
}

// Unwrap returns the cause, for errors.Is and errors.As.
func (e *objectError) Unwrap() error { return e.Err }

// fatalHints says what to check for the S3 error codes a configuration mistake produces.
// These fail the job at once: retrying or reading on cannot help.
var fatalHints = map[string]string{
	"AccessDenied":                 "the workers' AWS credentials may not read this bucket, or Config.ExpectedBucketOwner is not its owner; check the IAM policy (s3:ListBucket, s3:GetObject), the bucket policy and Config.Region",
	"AllAccessDisabled":            "all access to this bucket has been disabled",
	"InvalidAccessKeyId":           "the workers' AWS access key is unknown to the server; check the credentials they get (AWS_ACCESS_KEY_ID, profile, role)",
	"SignatureDoesNotMatch":        "the workers' AWS secret key does not match their access key; check the credentials they get (AWS_SECRET_ACCESS_KEY, profile, role)",
	"InvalidToken":                 "the workers' AWS session token is invalid; check their credentials",
	"ExpiredToken":                 "the workers' AWS session token has expired; check how they refresh credentials",
	"NoSuchBucket":                 "the bucket does not exist; check Config.Bucket, Config.Endpoint and Config.Region",
	"PermanentRedirect":            "the bucket is in another region; set Config.Region to the bucket's region",
	"AuthorizationHeaderMalformed": "the request was signed for the wrong region; set Config.Region to the bucket's region",
	"InvalidBucketName":            "the server rejects the bucket name; check Config.Bucket",
	"RequestTimeTooSkewed":         "the workers' clocks differ from the server's by more than 15 minutes; synchronise them (NTP)",
}

// objectHints explains the per-object codes.
var objectHints = map[string]string{
	"PreconditionFailed": "the object was overwritten since planning: its ETag no longer matches the planned one",
	"NoSuchKey":          "the object was deleted since planning",
	"NoSuchVersion":      "the planned version was deleted permanently since planning",
	"InvalidObjectState": "the object is in an archive storage class or tier and not restored; restore it and read it again",
}

// describeS3Error wraps an S3 error with the operation and, for well-known codes, with what
// to check.
func describeS3Error(err error, op string) error {
	var api smithy.APIError
	if errors.As(err, &api) {
		if h, ok := fatalHints[api.ErrorCode()]; ok {
			return fmt.Errorf("%s: %w (%s)", op, err, h)
		}
		if h, ok := objectHints[api.ErrorCode()]; ok {
			return fmt.Errorf("%s: %w (%s)", op, err, h)
		}
	}
	if errors.Is(err, s3client.ErrCredentials) {
		return fmt.Errorf("%s: %w (the workers found no usable AWS credentials: set AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, a profile, or a role)", op, err)
	}
	return fmt.Errorf("%s: %w", op, err)
}

// withS3Hint adds to a failed read's error what to check, when S3 refused the read (the
// fetch layer reports the SDK's error as it is, with the request's context).
func withS3Hint(err error) error {
	var api smithy.APIError
	if errors.As(err, &api) || errors.Is(err, s3client.ErrCredentials) {
		return describeS3Error(err, "s3io")
	}
	return err
}

// classify tells what a failed member read means: fatal (the job must fail now, with
// err's message) or the reason to quarantine the object for.
func classify(err error) (fatal bool, reason Reason) {
	var api smithy.APIError
	if errors.As(err, &api) {
		code := api.ErrorCode()
		if _, ok := fatalHints[code]; ok {
			return true, ""
		}
		switch code {
		case "NoSuchKey", "NoSuchVersion":
			return false, ReasonDeleted
		case "PreconditionFailed":
			return false, ReasonOverwritten
		case "InvalidObjectState":
			// A 403, but about this object, not about access: the rest of the job can go on.
			return false, ReasonArchived
		}
	}
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) {
		switch re.HTTPStatusCode() {
		case http.StatusForbidden:
			return true, ""
		case http.StatusNotFound:
			return false, ReasonDeleted
		case http.StatusPreconditionFailed:
			return false, ReasonOverwritten
		}
	}
	var mismatch *checksum.Mismatch
	switch {
	case errors.As(err, &mismatch):
		return false, ReasonCorrupt
	case errors.Is(err, s3client.ErrCredentials), errors.Is(err, context.Canceled):
		return true, ""
	case errors.Is(err, decode.ErrUnsupported):
		return false, ReasonUnsupported
	case errors.Is(err, decode.ErrCorrupt), errors.Is(err, decode.ErrTruncatedRecord), errors.Is(err, decode.ErrFramer):
		return false, ReasonCorrupt
	case errors.Is(err, fetch.ErrOtherVersion):
		return false, ReasonOverwritten
	case errors.Is(err, fetch.ErrBadAnswer):
		return false, ReasonUnreadable
	case errors.Is(err, decode.ErrRecordTooLarge):
		return false, ReasonRecordTooLarge
	case errors.Is(err, errArchived):
		return false, ReasonArchived
	}
	return false, ReasonUnreadable
}

// attemptsOf returns how many attempts the failed read made.
func attemptsOf(err error) int {
	var src *fetch.ReadError
	if errors.As(err, &src) {
		return src.Attempts
	}
	var m *retry.MaxAttemptsError
	if errors.As(err, &m) {
		return m.Attempt
	}
	return 1
}

// ConfigError is a Config that does not validate. Field names the offending field as Go
// spells it ("ReadTimeout", or "Versions.AsOf" for a nested one), so that a caller that
// takes its settings under other names, such as the expansion service's snake_case
// configuration fields, can name the setting its user wrote.
type ConfigError struct {
	Field string
	err   error
}

func (e *ConfigError) Error() string { return e.err.Error() }

// Unwrap returns the cause, where there is one (a malformed Match pattern).
func (e *ConfigError) Unwrap() error { return errors.Unwrap(e.err) }

// configErrorf is a ConfigError about field, its message formatted as by fmt.Errorf.
func configErrorf(field, format string, args ...any) error {
	return &ConfigError{Field: field, err: fmt.Errorf(format, args...)}
}
