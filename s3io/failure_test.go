package s3io

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/spate-io/beam-s3/s3io/internal/decode"
	"github.com/spate-io/beam-s3/s3io/internal/fetch"
	"github.com/spate-io/beam-s3/s3io/internal/s3client"
)

func apiErr(code string, status int) error {
	return &smithy.OperationError{ServiceID: "S3", OperationName: "GetObject", Err: &smithyhttp.ResponseError{
		Response: &smithyhttp.Response{Response: &http.Response{StatusCode: status}},
		Err:      &smithy.GenericAPIError{Code: code, Message: "m"},
	}}
}

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		err    error
		fatal  bool
		reason Reason
	}{
		{apiErr("NoSuchKey", 404), false, ReasonDeleted},
		{apiErr("", 404), false, ReasonDeleted},
		{apiErr("PreconditionFailed", 412), false, ReasonOverwritten},
		{apiErr("", 412), false, ReasonOverwritten},
		{apiErr("AccessDenied", 403), true, ""},
		{apiErr("", 403), true, ""},
		{apiErr("InvalidAccessKeyId", 403), true, ""},
		{apiErr("SignatureDoesNotMatch", 403), true, ""},
		{apiErr("NoSuchBucket", 404), true, ""},
		{apiErr("PermanentRedirect", 301), true, ""},
		{apiErr("InvalidObjectState", 403), false, ReasonArchived},
		{apiErr("RequestTimeTooSkewed", 403), true, ""},
		{fmt.Errorf("%w: GLACIER", errArchived), false, ReasonArchived},
		{apiErr("SlowDown", 503), false, ReasonUnreadable},
		{apiErr("InternalError", 500), false, ReasonUnreadable},
		{&fetch.ReadError{Attempts: 8, Err: io.ErrUnexpectedEOF}, false, ReasonUnreadable},
		{fmt.Errorf("GET s3://b/k: %w: ETag \"new\", planned \"old\"", fetch.ErrOtherVersion), false, ReasonOverwritten},
		{fmt.Errorf("GET s3://b/k bytes=0-9: %w: Content-Range \"bytes 0-9/11\" names an object of 11 bytes, planned 10", fetch.ErrOtherVersion), false, ReasonOverwritten},
		{fmt.Errorf("GET s3://b/k bytes=5-9: %w: 206 with Content-Range \"bytes 0-4/10\"", fetch.ErrBadAnswer), false, ReasonUnreadable},
		{fmt.Errorf("pinned GET s3://b/k at byte 5: %w: 416 to a range within the planned 10 bytes: %w", fetch.ErrOtherVersion, apiErr("InvalidRange", 416)), false, ReasonOverwritten},
		{fmt.Errorf("%w: gzip: %v", decode.ErrCorrupt, errors.New("invalid header")), false, ReasonCorrupt},
		{fmt.Errorf("%w: x", decode.ErrTruncatedRecord), false, ReasonCorrupt},
		{fmt.Errorf("%w at byte 3: %w", decode.ErrFramer, errors.New("custom framer says no")), false, ReasonCorrupt},
		{fmt.Errorf("%w: big", decode.ErrRecordTooLarge), false, ReasonRecordTooLarge},
		{fmt.Errorf("get identity: get credentials: %w", s3client.ErrCredentials), true, ""},
		{context.Canceled, true, ""},
	} {
		wrapped := &objectError{ObjectRef: ObjectRef{Key: "k"}, Err: tc.err}
		fatal, reason := classify(wrapped)
		if fatal != tc.fatal || reason != tc.reason {
			t.Errorf("classify(%v) = %v, %q; want %v, %q", tc.err, fatal, reason, tc.fatal, tc.reason)
		}
	}
}

func TestFailJobMessage(t *testing.T) {
	var acc failureSummary
	c := &summarizeFailures{}
	for _, k := range []string{"k7", "k3", "k1", "k9", "k5", "k2", "k8"} {
		acc = c.AddInput(acc, Failure{ObjectRef: ObjectRef{Bucket: "b", Key: k}, Reason: ReasonCorrupt, Message: "bad"})
	}
	if err := failJob(failureSummary{}); err != nil {
		t.Fatalf("failJob with no failures = %v", err)
	}
	err := failJob(acc)
	if err == nil {
		t.Fatal("failJob with failures = nil")
	}
	msg := err.Error()
	for _, want := range []string{"7 object read(s) failed", "s3://b/k1", "s3://b/k5", "and 2 more", "ReadWithFailures"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks %q: %s", want, msg)
		}
	}
	if strings.Contains(msg, "s3://b/k8") || strings.Contains(msg, "s3://b/k9") {
		t.Errorf("message lists more than the first %d keys: %s", maxListedFailures, msg)
	}
}
