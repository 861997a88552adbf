package s3client

import (
	"context"

	"github.com/aws/smithy-go/middleware"
	"golang.org/x/time/rate"
)

// rateLimit holds every attempt of a request, retries included, to l's rate: it is placed
// after the retry middleware. Neither the SDK nor its retryer offers a fixed rate; the
// adaptive retryer only follows throttling answers.
func rateLimit(l *rate.Limiter) func(*middleware.Stack) error {
	return func(stack *middleware.Stack) error {
		mw := middleware.FinalizeMiddlewareFunc("s3io.RateLimit", func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
			if err := l.Wait(ctx); err != nil {
				return middleware.FinalizeOutput{}, middleware.Metadata{}, err
			}
			return next.HandleFinalize(ctx, in)
		})
		if err := stack.Finalize.Insert(mw, "Retry", middleware.After); err == nil {
			return nil
		}
		return stack.Finalize.Add(mw, middleware.After)
	}
}
