package s3client

import (
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"golang.org/x/time/rate"

	"github.com/spate-io/beam-s3/s3io/internal/worker"
)

// MaxBackoff caps the wait between two attempts at one request. Body resumes, which the
// retryer does not see, wait no longer than this either: one backoff bound for the worker.
const MaxBackoff = 5 * time.Second

// The clients of one worker process share, whatever DoFn instance built them, the
// retryer of an endpoint, whose adaptive rate learns from every throttled request, and the
// request rate limiter of a bucket.
type retryerKey struct {
	endpoint, region string
	maxAttempts      int
}

type limiterKey struct {
	endpoint, region, bucket string
	perSecond                float64
}

// sessionKey names the S3 Express session cache of an endpoint.
type sessionKey struct{ endpoint, region string }

var (
	retryers worker.Shared[retryerKey, aws.Retryer]
	limiters worker.Shared[limiterKey, *rate.Limiter]
	sessions worker.Shared[sessionKey, s3.ExpressCredentialsProvider]
)

// workerRetryer is the adaptive retryer of this worker's requests to o's endpoint. The
// SDK's adaptive mode is its standard retryer (exponential backoff with jitter on 5xx, 503
// SlowDown, dropped connections) plus a client-side rate that throttling answers lower and
// success raises again: with many GETs in flight, a worker backs off as a whole instead of
// every request retrying into the same SlowDown. Its retry quota is off: one flaky object
// must not starve the retries of every other object read by this worker.
func workerRetryer(o Options) aws.Retryer {
	return retryers.Get(retryerKey{o.Endpoint, o.Region, o.MaxAttempts}, func() aws.Retryer {
		return retry.NewAdaptiveMode(func(ao *retry.AdaptiveModeOptions) {
			ao.StandardOptions = append(ao.StandardOptions, func(so *retry.StandardOptions) {
				so.MaxAttempts = o.MaxAttempts
				so.MaxBackoff = MaxBackoff
				so.RateLimiter = ratelimit.None
			})
		})
	})
}

// workerSessions is the S3 Express session provider this worker's clients of o's endpoint
// start from. Each client binds its own copy of the SDK's default provider, but the copies
// share this one's cache of sessions (keyed by the long-term keys and the bucket), so a
// directory bucket costs one CreateSession per worker process every few minutes rather
// than one per client, that is per DoFn instance.
func workerSessions(o Options) s3.ExpressCredentialsProvider {
	return sessions.Get(sessionKey{o.Endpoint, o.Region}, func() s3.ExpressCredentialsProvider {
		return s3.New(s3.Options{}).Options().ExpressCredentials
	})
}

// workerRateLimiter is the limiter of o.MaxRequestsPerSecond for this worker's requests to
// o's endpoint and bucket, or nil for no cap.
func workerRateLimiter(o Options) *rate.Limiter {
	if o.MaxRequestsPerSecond <= 0 {
		return nil
	}
	// Burst 1: the n-th attempt of a busy period goes no earlier than n intervals after the
	// first, however many requests are in flight.
	return limiters.Get(limiterKey{o.Endpoint, o.Region, o.Bucket, o.MaxRequestsPerSecond}, func() *rate.Limiter {
		return rate.NewLimiter(rate.Limit(o.MaxRequestsPerSecond), 1)
	})
}
