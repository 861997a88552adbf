// Package versitygw runs a versitygw S3 server process for tests: a real S3 implementation
// (If-Match, Range, ListObjectsV2 paging) on a loopback port over a temporary directory.
package versitygw

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// Version is the versitygw release the tests run against; .ci/run installs it.
const Version = "v1.8.0"

const (
	gwAccessKey = "s3io-test-access"
	gwSecretKey = "s3io-test-secret-key"
)

// Gateway is a versitygw process serving a fresh POSIX directory on a loopback port.
type Gateway struct {
	URL    string
	Dir    string
	Client *s3.Client
}

// versityGWBinary finds the server: $VERSITYGW, then PATH, then the repository's .cache/bin
// where .ci/run installs it.
func versityGWBinary() (string, error) {
	if p := os.Getenv("VERSITYGW"); p != "" {
		return p, nil
	}
	if p, err := exec.LookPath("versitygw"); err == nil {
		return p, nil
	}
	_, file, _, _ := runtime.Caller(0)
	p := filepath.Join(filepath.Dir(file), "..", "..", ".cache", "bin", "versitygw")
	if _, err := os.Stat(p); err != nil {
		return "", err
	}
	return p, nil
}

// Start starts versitygw for the test and points the worker-side AWS credential chain
// at it. Without the binary the test is skipped locally and fails under CI, where .ci/run
// must have installed it.
func Start(t testing.TB) *Gateway {
	t.Helper()
	bin, err := versityGWBinary()
	if err != nil {
		msg := fmt.Sprintf("versitygw not found (%v); install it with: GOBIN=$PWD/.cache/bin go install github.com/versity/versitygw/cmd/versitygw@%s", err, Version)
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	dir := t.TempDir()
	port := freePort(t)
	cmd := exec.Command(bin, "--port", fmt.Sprintf("127.0.0.1:%d", port), "--health", "/health", "posix", dir)
	cmd.Env = append(os.Environ(), "ROOT_ACCESS_KEY="+gwAccessKey, "ROOT_SECRET_KEY="+gwSecretKey)
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("start versitygw: %v", err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("versitygw output:\n%s", logs.String())
		}
	})
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp, err := http.Get(url + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("versitygw on %s not healthy after 15s (last error %v):\n%s", url, err, logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}

	t.Setenv("AWS_ACCESS_KEY_ID", gwAccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", gwSecretKey)
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_CONFIG_FILE", os.DevNull)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", os.DevNull)
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	return &Gateway{
		URL: url,
		Dir: dir,
		Client: s3.New(s3.Options{
			Region:       "us-east-1",
			BaseEndpoint: aws.String(url),
			UsePathStyle: true,
			Credentials:  credentials.NewStaticCredentialsProvider(gwAccessKey, gwSecretKey, ""),
		}),
	}
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

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
