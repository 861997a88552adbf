package s3test

import (
	"context"
	"io"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// Answer is how a server answered one GET: what the tests of servers that ignore If-Match
// or Range compare.
type Answer struct {
	Body, ETag, ContentRange string
	Status                   int
}

// Get sends one GET of bucket/key, pinned with If-Match ifMatch and ranged unless rng is
// empty, without retries, and returns the answer.
func Get(client *s3.Client, bucket, key, ifMatch, rng string) (Answer, error) {
	in := &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), IfMatch: aws.String(ifMatch)}
	if rng != "" {
		in.Range = aws.String(rng)
	}
	out, err := client.GetObject(context.Background(), in, func(o *s3.Options) { o.RetryMaxAttempts = 1 })
	if err != nil {
		return Answer{}, err
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	status := 0
	if raw, ok := awsmiddleware.GetRawResponse(out.ResultMetadata).(*smithyhttp.Response); ok {
		status = raw.StatusCode
	}
	return Answer{string(b), aws.ToString(out.ETag), aws.ToString(out.ContentRange), status}, err
}
