package s3client

import (
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"golang.org/x/time/rate"
)

// MaxBackoff caps the wait between two attempts at one request. Body resumes, which the
// retryer does not see, wait no longer than this either: one backoff bound for the worker.
const MaxBackoff = 5 * time.Second

// workers holds what the clients of one worker process share, whatever DoFn instance built
// them: the retryer, whose adaptive rate learns from every throttled request, and the
// request rate limiters.
var workers struct {
	sync.Mutex
	retryers map[string]aws.Retryer
	limiters map[string]*rate.Limiter
}

// workerRetryer is the adaptive retryer of this worker's requests to o's endpoint. The
// SDK's adaptive mode is its standard retryer (exponential backoff with jitter on 5xx, 503
// SlowDown, dropped connections) plus a client-side rate that throttling answers lower and
// success raises again: with many GETs in flight, a worker backs off as a whole instead of
// every request retrying into the same SlowDown. Its retry quota is off: one flaky object
// must not starve the retries of every other object read by this worker.
func workerRetryer(o Options) aws.Retryer {
	key := fmt.Sprintf("%s|%s|%d", o.Endpoint, o.Region, o.MaxAttempts)
	workers.Lock()
	defer workers.Unlock()
	if r, ok := workers.retryers[key]; ok {
		return r
	}
	r := retry.NewAdaptiveMode(func(ao *retry.AdaptiveModeOptions) {
		ao.StandardOptions = append(ao.StandardOptions, func(so *retry.StandardOptions) {
			so.MaxAttempts = o.MaxAttempts
			so.MaxBackoff = MaxBackoff
			so.RateLimiter = ratelimit.None
		})
	})
	if workers.retryers == nil {
		workers.retryers = map[string]aws.Retryer{}
	}
	workers.retryers[key] = r
	return r
}

// workerRateLimiter is the limiter of o.MaxRequestsPerSecond for this worker's requests to
// o's endpoint and bucket, or nil for no cap.
func workerRateLimiter(o Options) *rate.Limiter {
	if o.MaxRequestsPerSecond <= 0 {
		return nil
	}
	key := fmt.Sprintf("%s|%s|%s|%g", o.Endpoint, o.Region, o.Bucket, o.MaxRequestsPerSecond)
	workers.Lock()
	defer workers.Unlock()
	if l, ok := workers.limiters[key]; ok {
		return l
	}
	// Burst 1: the n-th attempt of a busy period goes no earlier than n intervals after the
	// first, however many requests are in flight.
	l := rate.NewLimiter(rate.Limit(o.MaxRequestsPerSecond), 1)
	if workers.limiters == nil {
		workers.limiters = map[string]*rate.Limiter{}
	}
	workers.limiters[key] = l
	return l
}
