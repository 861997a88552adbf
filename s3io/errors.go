package s3io

import (
	"errors"
	"fmt"

	"github.com/aws/smithy-go"
)

// ObjectError is the failure of reading one member of a split: it names the object, the
// ETag the read was pinned to, and how far the read got.
type ObjectError struct {
	SplitID string
	Bucket  string
	Key     string
	ETag    string
	// Member is the object's ordinal in the split; Record the index of the record being
	// read when the failure happened (records before it were emitted).
	Member int
	Record int64
	Err    error
}

func (e *ObjectError) Error() string {
	return fmt.Sprintf("s3io: s3://%s/%s (ETag %s, member %d of split %s) at record %d: %v",
		e.Bucket, e.Key, e.ETag, e.Member, e.SplitID, e.Record, e.Err)
}

func (e *ObjectError) Unwrap() error { return e.Err }

// hints says what to check for the S3 error codes a configuration mistake produces.
var hints = map[string]string{
	"AccessDenied":                 "the worker's AWS credentials are not allowed to read this bucket; check the IAM policy (s3:ListBucket, s3:GetObject) and Config.Region",
	"InvalidAccessKeyId":           "the worker's AWS access key is unknown to the server; check the credentials the workers get (AWS_ACCESS_KEY_ID, profile, role)",
	"SignatureDoesNotMatch":        "the worker's AWS secret key does not match its access key; check the credentials the workers get (AWS_SECRET_ACCESS_KEY, profile, role)",
	"NoSuchBucket":                 "the bucket does not exist; check Config.Bucket, Config.Endpoint and Config.Region",
	"PermanentRedirect":            "the bucket is in another region; set Config.Region to the bucket's region",
	"AuthorizationHeaderMalformed": "the request was signed for the wrong region; set Config.Region to the bucket's region",
	"PreconditionFailed":           "the object was overwritten since planning: its ETag no longer matches the planned one",
	"NoSuchKey":                    "the object was deleted since planning",
}

// describeS3Error wraps an S3 error with the operation and, for well-known codes, with what
// to check.
func describeS3Error(err error, op string) error {
	var api smithy.APIError
	if errors.As(err, &api) {
		if h, ok := hints[api.ErrorCode()]; ok {
			return fmt.Errorf("%s: %w (%s)", op, err, h)
		}
	}
	return fmt.Errorf("%s: %w", op, err)
}
