package s3client

import (
	"context"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/spate-io/beam-s3/internal/dirbucket"
	"github.com/spate-io/beam-s3/internal/s3test"
)

// TestWorkerSessions: the clients a worker builds for one endpoint share their S3 Express
// session of a bucket: the first client's CreateSession serves eight more, run at once.
func TestWorkerSessions(t *testing.T) {
	s3test.SetAWSEnv(t, "ak", "sk")
	const bucket = "shared--usw2-az1--x-s3"
	srv := dirbucket.New(t, bucket, "ak", "sk")
	list := func() {
		c, err := New(context.Background(), Options{Endpoint: srv.URL, Region: "us-west-2", MaxAttempts: 1})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String(bucket)}); err != nil {
			t.Error(err)
		}
	}
	list()
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(list)
	}
	wg.Wait()
	if c := srv.Counts(); c.CreateSession != 1 || c.Lists != 9 {
		t.Errorf("9 clients: %d CreateSession, %d LIST; want 1 and 9", c.CreateSession, c.Lists)
	}
}
