package s3io

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/spate-io/beam-s3/s3io/internal/listing"
)

// Versions says which version of each key a plan of a versioned bucket (S3 Versioning
// enabled or suspended) reads. With Pinned or AsOf set, the planner lists object versions
// (ListObjectVersions) instead of current objects, plans one version of each key, and every
// read of it (GET, probe, zip directory) asks for that version ID, still pinned to its ETag
// and size. An object overwritten or deleted after planning is then read as planned, with
// no Failure; only a planned version deleted permanently (DeleteObject with its version ID,
// or a lifecycle rule expiring noncurrent versions) fails, as "deleted". The version ID is
// part of the member and of its descriptor's ID.
//
// A key whose selected version is a delete marker, or that has no version at the time
// asked for, is not planned. On a bucket whose versioning was never enabled, planning fails
// and says to enable it. On a bucket with versioning suspended, objects written while it
// was suspended have the version ID "null", and an overwrite replaces that version in
// place: a null version overwritten after planning fails as "overwritten" (its ETag pin),
// and one deleted fails as "deleted", as without Versions; versions written while
// versioning was enabled are read as planned.
//
// Listing versions costs more than listing current objects: every version and delete
// marker of every key under the prefix is listed (a page holds 1,000 of them, not 1,000
// keys), and the planner needs s3:ListBucketVersions, s3:GetBucketVersioning and
// s3:GetObjectVersion (docs/performance.md has the measured cost).
//
// ReadContinuously does not take Versions: a watch reads what each refresh lists.
type Versions struct {
	// Pinned plans each key's latest version.
	Pinned bool
	// AsOf, when set, plans each key's version that was current at that instant: the newest
	// whose LastModified is not after it (S3 lists LastModified to the second). The same
	// instant gives the same plan, descriptors and IDs on every run, whatever the bucket's
	// keys became since, as long as the versions planned are kept. AsOf implies Pinned, and
	// must not be in the future.
	AsOf time.Time
}

// enabled reports whether v plans versions.
func (v Versions) enabled() bool { return v.Pinned || !v.AsOf.IsZero() }

// listing returns what the listing of v selects, nil for current objects.
func (v Versions) listing() *listing.Versions {
	if !v.enabled() {
		return nil
	}
	return &listing.Versions{AsOf: v.AsOf}
}

func (v Versions) validate(now time.Time) error {
	if !v.AsOf.IsZero() && v.AsOf.After(now) {
		return configErrorf("Versions.AsOf", "s3io: Config.Versions.AsOf (%v) is in the future: a plan as of a time that has not come would change as the bucket does", v.AsOf)
	}
	return nil
}

// checkVersioning fails, saying what to enable, when bucket's versioning was never enabled:
// it then holds one version of each key, and a read pinned to it would only pretend to be.
func checkVersioning(ctx context.Context, client *s3.Client, bucket string, v Versions) error {
	out, err := client.GetBucketVersioning(ctx, &s3.GetBucketVersioningInput{Bucket: aws.String(bucket)})
	if err != nil {
		return describeS3Error(err, fmt.Sprintf("s3io: Config.Versions needs the versioning status of s3://%s (s3:GetBucketVersioning)", bucket))
	}
	switch out.Status {
	case types.BucketVersioningStatusEnabled, types.BucketVersioningStatusSuspended:
		return nil
	}
	mode := "Config.Versions.Pinned"
	fix := "enable S3 Versioning on the bucket (aws s3api put-bucket-versioning --bucket " + bucket + " --versioning-configuration Status=Enabled), or plan without Config.Versions"
	if !v.AsOf.IsZero() {
		mode = "Config.Versions.AsOf"
		fix = "S3 keeps past versions only once S3 Versioning is enabled on the bucket (aws s3api put-bucket-versioning --bucket " + bucket + " --versioning-configuration Status=Enabled): a plan as of a time can only go back to when it was; plan without Config.Versions to read the bucket as it is"
	}
	return fmt.Errorf("s3io: %s needs a versioned bucket, but S3 Versioning has never been enabled on s3://%s: %s", mode, bucket, fix)
}
