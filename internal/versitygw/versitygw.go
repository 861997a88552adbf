// Package versitygw runs a versitygw S3 server process: a real S3 implementation (If-Match,
// Range, ListObjectsV2 paging) on a loopback port over a POSIX directory. Tests start one per
// test with Start; programs such as cmd/s3io-bench, which have no *testing.T and may keep the
// directory between runs, use Launch.
package versitygw

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

	"github.com/spate-io/beam-s3/internal/s3test"
	"github.com/spate-io/beam-s3/internal/serverproc"
)

// Version is the versitygw release the tests run against; .ci/run installs it.
const Version = "v1.8.0"

// The root credentials every launched gateway accepts. They are fixed, test-only values: the
// gateway listens on loopback only and serves data the caller created.
const (
	AccessKey = "s3io-test-access"
	SecretKey = "s3io-test-secret-key"
)

// HealthTimeout bounds how long Launch waits for a new gateway to answer its health check.
const HealthTimeout = 15 * time.Second

// Gateway is a versitygw process serving a fresh POSIX directory on a loopback port, started
// for one test.
type Gateway struct {
	URL    string
	Dir    string
	Client *s3.Client
}

// Process is a running versitygw process (serverproc.Process). Close stops it; the
// directory is left as it is, so a caller can serve the same data again from a later
// process.
type Process struct{ *serverproc.Process }

// FindBinary finds the server: $VERSITYGW, then PATH, then the repository's .cache/bin where
// .ci/run installs it. The error says how to install it.
func FindBinary() (string, error) {
	if p := os.Getenv("VERSITYGW"); p != "" {
		return p, nil
	}
	if p, err := exec.LookPath("versitygw"); err == nil {
		return p, nil
	}
	_, file, _, _ := runtime.Caller(0)
	p := filepath.Join(filepath.Dir(file), "..", "..", ".cache", "bin", "versitygw")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("versitygw not found in $VERSITYGW, PATH or %s (%v); install it with: GOBIN=$PWD/.cache/bin go install github.com/versity/versitygw/cmd/versitygw@%s", p, err, Version)
	}
	return p, nil
}

// Launch starts bin serving dir on 127.0.0.1:port (a free port when port is 0) with the root
// credentials AccessKey and SecretKey, and waits until its health endpoint answers.
// extraArgs are global versitygw flags, such as "--virtual-domain", "s3.local"; they go
// before the posix backend argument. The process is killed if the caller dies (on Linux), so
// an interrupted benchmark does not leave a server behind.
func Launch(bin, dir string, port int, extraArgs ...string) (*Process, error) {
	return launch(bin, dir, port, extraArgs, nil)
}

// LaunchVersioned is Launch with bucket versioning available: versitygw keeps the noncurrent
// versions of every bucket under versionsDir, and without that directory it answers
// PutBucketVersioning with 501 VersioningNotConfigured. versionsDir must lie outside dir,
// where it would be served as a bucket. How its versioning differs from S3's is recorded
// in internal/s3conformance.
func LaunchVersioned(bin, dir, versionsDir string, port int, extraArgs ...string) (*Process, error) {
	if err := os.MkdirAll(versionsDir, 0o755); err != nil {
		return nil, fmt.Errorf("versitygw versioning directory: %w", err)
	}
	return launch(bin, dir, port, extraArgs, []string{"--versioning-dir", versionsDir})
}

// launch starts the gateway with globalArgs before the posix backend and backendArgs, the
// posix backend's own flags, between it and dir.
func launch(bin, dir string, port int, globalArgs, backendArgs []string) (*Process, error) {
	if port == 0 {
		p, err := FreePort()
		if err != nil {
			return nil, err
		}
		port = p
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("versitygw directory: %w", err)
	}
	args := append([]string{"--port", fmt.Sprintf("127.0.0.1:%d", port), "--health", "/health"}, globalArgs...)
	args = append(append(append(args, "posix"), backendArgs...), dir)
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "ROOT_ACCESS_KEY="+AccessKey, "ROOT_SECRET_KEY="+SecretKey)
	// versitygw needs a moment to open its backend and bind the port.
	p, err := serverproc.Launch("versitygw", cmd, port, dir, serverproc.Ready{Path: "/health", Poll: 20 * time.Millisecond, Timeout: HealthTimeout})
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

// Start starts versitygw for the test over a fresh temporary directory and points the
// worker-side AWS credential chain at it. Without the binary the test is skipped locally and
// fails under CI, where .ci/run must have installed it.
func Start(t testing.TB) *Gateway {
	t.Helper()
	return start(t, func(bin string) (*Process, error) { return Launch(bin, t.TempDir(), 0) })
}

// StartVersioned is Start with bucket versioning available (see LaunchVersioned); buckets
// are created unversioned, as on S3, until PutBucketVersioning enables it.
func StartVersioned(t testing.TB) *Gateway {
	t.Helper()
	return start(t, func(bin string) (*Process, error) {
		return LaunchVersioned(bin, t.TempDir(), t.TempDir(), 0)
	})
}

func start(t testing.TB, launch func(bin string) (*Process, error)) *Gateway {
	t.Helper()
	bin, err := FindBinary()
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	p, err := launch(bin)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Close()
		if t.Failed() {
			t.Logf("versitygw output:\n%s", p.Logs())
		}
	})

	s3test.SetAWSEnv(t, AccessKey, SecretKey)
	return &Gateway{URL: p.URL, Dir: p.Dir, Client: p.Client()}
}

// FreePort returns a loopback TCP port that was free a moment ago.
func FreePort() (int, error) { return serverproc.FreePort() }

// CreateBucket creates bucket.
func (g *Gateway) CreateBucket(t testing.TB, bucket string) {
	t.Helper()
	if _, err := g.Client.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatalf("create bucket %s: %v", bucket, err)
	}
}

// Put stores data at bucket/key.
func (g *Gateway) Put(t testing.TB, bucket, key string, data []byte) {
	t.Helper()
	if _, err := g.Client.PutObject(context.Background(), &s3.PutObjectInput{
		Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(data),
	}); err != nil {
		t.Fatalf("put s3://%s/%s: %v", bucket, key, err)
	}
}

// Delete removes bucket/key.
func (g *Gateway) Delete(t testing.TB, bucket, key string) {
	t.Helper()
	if _, err := g.Client.DeleteObject(context.Background(), &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)}); err != nil {
		t.Fatalf("delete s3://%s/%s: %v", bucket, key, err)
	}
}
