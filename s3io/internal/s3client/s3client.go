// Package s3client builds the S3 client of one worker: credentials from the SDK's default
// chain, resolved on the worker and marked ErrCredentials when they fail; one adaptive
// retryer and one request-rate limiter per worker; the account headers on every request.
package s3client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// ErrNoRegion is New's error when neither Options.Region nor the worker's AWS
// configuration names a region, and there is no Endpoint to default one for.
var ErrNoRegion = errors.New("no AWS region is configured")

// Options are the settings a worker's client is built from.
type Options struct {
	// Region is the bucket's region; empty takes the worker's AWS configuration, or
	// us-east-1 when Endpoint is set.
	Region string
	// Endpoint is the URL of an S3-compatible service; empty uses AWS S3.
	Endpoint     string
	UsePathStyle bool
	// MaxAttempts bounds the attempts at one request.
	MaxAttempts int
	// ReadTimeout bounds the wait for response headers.
	ReadTimeout time.Duration
	// MaxRequestsInFlight sizes the pool of idle connections kept between requests.
	MaxRequestsInFlight int
	// MaxRequestsPerSecond caps the attempts per second of this worker to Endpoint and
	// Bucket; 0 is no cap.
	MaxRequestsPerSecond float64
	ExpectedBucketOwner  string
	RequesterPays        bool
	// Bucket keys the rate limiter: a cap is per bucket.
	Bucket string
}

// New builds the S3 client of one worker. Credentials are resolved here, on the worker, by
// the SDK's default chain: they never travel in the pipeline.
func New(ctx context.Context, o Options) (*s3.Client, error) {
	var load []func(*awsconfig.LoadOptions) error
	if o.Region != "" {
		load = append(load, awsconfig.WithRegion(o.Region))
	}
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx, load...)
	if err != nil {
		return nil, fmt.Errorf("loading the AWS configuration of this worker: %w", markConfigError(err))
	}
	if awsCfg.Region == "" {
		if o.Endpoint == "" {
			return nil, ErrNoRegion
		}
		// S3-compatible servers accept any region in the signature; us-east-1 is the
		// conventional one.
		awsCfg.Region = "us-east-1"
	}
	if awsCfg.Credentials != nil {
		awsCfg.Credentials = markedCredentials{awsCfg.Credentials}
	}
	// Reads are pinned to the listed ETag with If-Match, so a checksum cannot catch a
	// version mix-up, and transport integrity is TLS's job. The SDK validates only
	// whole-object GETs, in one stream; s3io's Config.VerifyChecksums checks ranged parts
	// itself (internal/fetch), so no GET asks the SDK to.
	awsCfg.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
	retryer := workerRetryer(o)
	awsCfg.Retryer = func() aws.Retryer { return retryer }
	awsCfg.HTTPClient = awshttp.NewBuildableClient().WithTransportOptions(func(tr *http.Transport) {
		tr.ResponseHeaderTimeout = o.ReadTimeout
		// Every GET a reader keeps in flight is a connection; keep them alive between parts.
		tr.MaxIdleConnsPerHost = max(64, o.MaxRequestsInFlight)
	})
	limiter := workerRateLimiter(o)
	return s3.NewFromConfig(awsCfg, func(so *s3.Options) {
		if o.Endpoint != "" {
			so.BaseEndpoint = aws.String(o.Endpoint)
		}
		so.UsePathStyle = o.UsePathStyle
		so.ExpressCredentials = workerSessions(o)
		so.APIOptions = append(so.APIOptions, accountHeaders(o)...)
		if limiter != nil {
			so.APIOptions = append(so.APIOptions, rateLimit(limiter))
		}
	}), nil
}

// accountHeaders decorates every request the client sends, LIST and GET alike, with the
// account settings of o. They are headers rather than input fields so that no request can
// be built without them.
func accountHeaders(o Options) []func(*middleware.Stack) error {
	var hs []func(*middleware.Stack) error
	if o.ExpectedBucketOwner != "" {
		hs = append(hs, smithyhttp.SetHeaderValue("X-Amz-Expected-Bucket-Owner", o.ExpectedBucketOwner))
	}
	if o.RequesterPays {
		hs = append(hs, smithyhttp.SetHeaderValue("X-Amz-Request-Payer", "requester"))
	}
	return hs
}
