package s3io

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/spate-io/beam-s3/s3io/internal/s3client"
)

// newClient builds the S3 client of one worker for cfg (see s3client.New).
func newClient(ctx context.Context, cfg Config) (*s3.Client, error) {
	c, err := s3client.New(ctx, s3client.Options{
		Region:               cfg.Region,
		Endpoint:             cfg.Endpoint,
		UsePathStyle:         cfg.UsePathStyle,
		MaxAttempts:          cfg.MaxAttempts,
		ReadTimeout:          cfg.ReadTimeout,
		MaxRequestsInFlight:  cfg.MaxRequestsInFlight,
		MaxRequestsPerSecond: cfg.MaxRequestsPerSecond,
		ExpectedBucketOwner:  cfg.ExpectedBucketOwner,
		RequesterPays:        cfg.RequesterPays,
		Bucket:               cfg.Bucket,
	})
	if errors.Is(err, s3client.ErrNoRegion) {
		return nil, fmt.Errorf("s3io: %w: set Config.Region, or AWS_REGION on every worker", err)
	}
	if err != nil {
		// An unknown profile fails here, before any request: describeS3Error says what to
		// check, as it does for the credential failures of a request.
		return nil, describeS3Error(err, "s3io")
	}
	return c, nil
}
