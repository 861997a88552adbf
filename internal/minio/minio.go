package minio

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/spate-io/beam-s3/internal/s3test"
	"github.com/spate-io/beam-s3/internal/serverproc"
)

// Version is the MinIO server module version the tests run against; .ci/run installs it.
// MinIO publishes its releases as RELEASE.* tags, which are not semantic versions, so the
// module proxy knows each commit only by its pseudo-version.
const Version = "v0.0.0-20260212201848-7aac2a2c5b7c"

// The root credentials every launched server accepts. They are fixed, test-only values: the
// server listens on loopback only and serves data the caller created. MinIO wants a secret
// of at least 8 characters.
const (
	AccessKey = "s3io-test-access"
	SecretKey = "s3io-test-secret-key"
)

// HealthTimeout bounds how long Launch waits for a new server to answer its readiness check.
// MinIO formats a fresh drive before it serves, which takes a few seconds on a busy machine.
const HealthTimeout = 60 * time.Second

// Server is a MinIO process serving a fresh single drive on a loopback port, started for one
// test.
type Server struct {
	URL    string
	Dir    string
	Client *s3.Client
}

// Process is a running MinIO process (serverproc.Process). Close stops it; the directory
// (its drive, Dir/drive, and an empty certificate directory) is left as it is, so a caller
// can serve the same data again from a later process.
type Process struct{ *serverproc.Process }

// FindBinary finds the server: $MINIO, then PATH, then the repository's .cache/bin where
// .ci/run installs it. The error says how to install it.
func FindBinary() (string, error) {
	if p := os.Getenv("MINIO"); p != "" {
		return p, nil
	}
	if p, err := exec.LookPath("minio"); err == nil {
		return p, nil
	}
	_, file, _, _ := runtime.Caller(0)
	p := filepath.Join(filepath.Dir(file), "..", "..", ".cache", "bin", "minio")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("minio not found in $MINIO, PATH or %s (%v); install it with: GOBIN=$PWD/.cache/bin go install github.com/minio/minio@%s", p, err, Version)
	}
	return p, nil
}

// Launch starts bin serving the single drive dir/drive on 127.0.0.1:port (a free port when
// port is 0) with the root credentials AccessKey and SecretKey, and waits until it is ready.
// The web console is off, and the certificate directory is dir/certs so that the server does
// not create ~/.minio. The process is killed if the caller dies (on Linux), so an interrupted
// test does not leave a server behind.
func Launch(bin, dir string, port int) (*Process, error) {
	if port == 0 {
		p, err := serverproc.FreePort()
		if err != nil {
			return nil, err
		}
		port = p
	}
	drive, certs := filepath.Join(dir, "drive"), filepath.Join(dir, "certs")
	for _, d := range []string{drive, certs} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("minio directory: %w", err)
		}
	}
	cmd := exec.Command(bin, "server", drive, "--address", fmt.Sprintf("127.0.0.1:%d", port), "--certs-dir", certs)
	cmd.Env = append(os.Environ(),
		"MINIO_ROOT_USER="+AccessKey, "MINIO_ROOT_PASSWORD="+SecretKey,
		"MINIO_BROWSER=off", "MINIO_UPDATE=off")
	// Only the cluster health endpoint waits for the drive, bucket metadata and IAM to be
	// initialized: /minio/health/live and /minio/health/ready answer 200 as soon as the
	// listener is up, while S3 requests still fail with 503 XMinioServerNotInitialized.
	p, err := serverproc.Launch("minio", cmd, port, dir, serverproc.Ready{Path: "/minio/health/cluster", Poll: 50 * time.Millisecond, Timeout: HealthTimeout})
	if err != nil {
		return nil, err
	}
	return &Process{p}, nil
}

// Client returns a path-style S3 client for the server with the root credentials.
func (p *Process) Client() *s3.Client {
	return s3.New(s3.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(p.URL),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(AccessKey, SecretKey, ""),
	})
}

// Start starts MinIO for the test over a fresh temporary directory and points the worker-side
// AWS credential chain at it. Without the binary the test is skipped locally and fails under
// CI, where .ci/run must have installed it.
func Start(t testing.TB) *Server {
	t.Helper()
	bin, err := FindBinary()
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	p, err := Launch(bin, t.TempDir(), 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Close()
		if t.Failed() {
			t.Logf("minio output:\n%s", p.Logs())
		}
	})

	s3test.SetAWSEnv(t, AccessKey, SecretKey)
	return &Server{URL: p.URL, Dir: p.Dir, Client: p.Client()}
}

// CreateBucket creates bucket without versioning, as S3 creates every bucket.
func (s *Server) CreateBucket(t testing.TB, bucket string) {
	t.Helper()
	if _, err := s.Client.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatalf("create bucket %s: %v", bucket, err)
	}
}

// CreateVersionedBucket creates bucket and enables versioning on it, so that every later put
// and delete of a key adds a version instead of replacing the object.
func (s *Server) CreateVersionedBucket(t testing.TB, bucket string) {
	t.Helper()
	s.CreateBucket(t, bucket)
	s.SetVersioning(t, bucket, types.BucketVersioningStatusEnabled)
}

// SetVersioning sets bucket's versioning state: Enabled, or Suspended, where new puts
// replace the key's null version and keep its older versions.
func (s *Server) SetVersioning(t testing.TB, bucket string, status types.BucketVersioningStatus) {
	t.Helper()
	if _, err := s.Client.PutBucketVersioning(context.Background(), &s3.PutBucketVersioningInput{
		Bucket:                  aws.String(bucket),
		VersioningConfiguration: &types.VersioningConfiguration{Status: status},
	}); err != nil {
		t.Fatalf("set versioning of bucket %s to %s: %v", bucket, status, err)
	}
}

// Put stores data at bucket/key and returns the version ID the server gave it: empty in a
// bucket that has never had versioning, "null" or empty while it is suspended.
func (s *Server) Put(t testing.TB, bucket, key string, data []byte) (versionID, etag string) {
	t.Helper()
	out, err := s.Client.PutObject(context.Background(), &s3.PutObjectInput{
		Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(data),
	})
	if err != nil {
		t.Fatalf("put s3://%s/%s: %v", bucket, key, err)
	}
	return aws.ToString(out.VersionId), aws.ToString(out.ETag)
}

// Delete deletes bucket/key: in a versioned bucket that adds a delete marker, whose version
// ID it returns.
func (s *Server) Delete(t testing.TB, bucket, key string) (markerVersionID string) {
	t.Helper()
	out, err := s.Client.DeleteObject(context.Background(), &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatalf("delete s3://%s/%s: %v", bucket, key, err)
	}
	return aws.ToString(out.VersionId)
}
