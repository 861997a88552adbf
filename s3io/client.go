package s3io

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// retryMaxBackoff caps the wait between two attempts at one request or one body resume.
const retryMaxBackoff = 5 * time.Second

// newClient builds the S3 client of one worker. Credentials are resolved here, on the
// worker, by the SDK's default chain: they never travel in the pipeline.
func newClient(ctx context.Context, cfg Config) (*s3.Client, error) {
	var opts []func(*awsconfig.LoadOptions) error
	if cfg.Region != "" {
		opts = append(opts, awsconfig.WithRegion(cfg.Region))
	}
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("s3io: loading the AWS configuration of this worker: %w", err)
	}
	if awsCfg.Region == "" {
		if cfg.Endpoint == "" {
			return nil, errors.New("s3io: no AWS region is configured: set Config.Region, or AWS_REGION on every worker")
		}
		// S3-compatible servers accept any region in the signature; us-east-1 is the
		// conventional one.
		awsCfg.Region = "us-east-1"
	}
	// Reads are pinned to the listed ETag with If-Match, so a checksum cannot catch a
	// version mix-up, and transport integrity is TLS's job. Validating CRC64/CRC32 on every
	// full GET costs more CPU than decompression (2265 -> 834 MB/s on plain data here), so it
	// is opt-in through Config.VerifyChecksums.
	awsCfg.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
	// The standard retryer backs off exponentially with jitter on 5xx, 503 SlowDown and
	// dropped connections. Its client-wide retry quota is off: one flaky object must not
	// starve the retries of every other object read by this worker.
	awsCfg.Retryer = func() aws.Retryer {
		return retry.NewStandard(func(o *retry.StandardOptions) {
			o.MaxAttempts = cfg.MaxAttempts
			o.MaxBackoff = retryMaxBackoff
			o.RateLimiter = ratelimit.None
		})
	}
	awsCfg.HTTPClient = awshttp.NewBuildableClient().WithTransportOptions(func(tr *http.Transport) {
		tr.ResponseHeaderTimeout = cfg.ReadTimeout
		// Readers of one worker share one client; let each keep its connection alive.
		tr.MaxIdleConnsPerHost = 64
	})
	return s3.NewFromConfig(awsCfg, func(o *s3.Options) {
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
		}
		o.UsePathStyle = cfg.UsePathStyle
	}), nil
}
