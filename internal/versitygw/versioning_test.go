package versitygw

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
)

func enableVersioning(g *Gateway, bucket string) error {
	_, err := g.Client.PutBucketVersioning(context.Background(), &s3.PutBucketVersioningInput{
		Bucket:                  aws.String(bucket),
		VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusEnabled},
	})
	return err
}

func TestVersioningNeedsDirectory(t *testing.T) {
	plain := Start(t)
	plain.CreateBucket(t, "bucket")
	var ae smithy.APIError
	if err := enableVersioning(plain, "bucket"); !errors.As(err, &ae) || ae.ErrorCode() != "VersioningNotConfigured" {
		t.Fatalf("enable versioning without a versioning directory: %v, want VersioningNotConfigured", err)
	}

	versioned := StartVersioned(t)
	versioned.CreateBucket(t, "bucket")
	if err := enableVersioning(versioned, "bucket"); err != nil {
		t.Fatalf("enable versioning with a versioning directory: %v", err)
	}
	out, err := versioned.Client.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String("bucket"), Key: aws.String("k")})
	if err != nil || aws.ToString(out.VersionId) == "" {
		t.Fatalf("put in a versioned bucket: version %q, %v; want a version ID", aws.ToString(out.VersionId), err)
	}
}
