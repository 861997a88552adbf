package s3io_test

import (
	"encoding/base64"
	"regexp"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/graphx"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"

	"github.com/spate-io/beam-s3/s3io"
)

// The pipeline that is submitted to a runner (and stored by Dataflow, shown in UIs) must
// never carry credentials: workers resolve their own.
func TestPipelineCarriesNoCredentials(t *testing.T) {
	const keyID, secret, token = "AKIAEXAMPLEKEYID7788", "s3cr3t/Secret+Key+That+Must+Not+Leak", "SessionTokenThatMustNotLeak"
	t.Setenv("AWS_ACCESS_KEY_ID", keyID)
	t.Setenv("AWS_SECRET_ACCESS_KEY", secret)
	t.Setenv("AWS_SESSION_TOKEN", token)

	p, s := beam.NewPipelineWithRoot()
	s3io.ReadWithFailures(s, s3io.Config{Bucket: "logs", Prefix: "p/", Endpoint: "https://s3.example.com", Region: "eu-west-1"})
	s3io.Read(s, s3io.Config{Bucket: "logs"})
	edges, _, err := p.Build()
	if err != nil {
		t.Fatal(err)
	}
	pb, err := graphx.Marshal(edges, &graphx.Options{Environment: &pipepb.Environment{Urn: "beam:env:loopback:v1"}})
	if err != nil {
		t.Fatal(err)
	}
	wire, err := proto.Marshal(pb)
	if err != nil {
		t.Fatal(err)
	}
	// The Go SDK nests each DoFn's JSON inside base64-encoded payloads: search the decoded
	// layers as well as the raw bytes.
	haystack := unwrapBase64(string(wire) + prototext.Format(pb))
	if !strings.Contains(haystack, "s3.example.com") {
		t.Fatal("the serialized pipeline does not hold the Config at all; the check below would prove nothing")
	}
	for _, c := range []string{keyID, secret, token} {
		if strings.Contains(haystack, c) {
			t.Errorf("the serialized pipeline contains the credential %q", c)
		}
	}
}

var base64Run = regexp.MustCompile(`[A-Za-z0-9+/=_-]{16,}`)

// unwrapBase64 appends to s the decoding of every base64 run in it, recursively.
func unwrapBase64(s string) string {
	out := s
	for depth := 0; depth < 4; depth++ {
		var more strings.Builder
		for _, run := range base64Run.FindAllString(s, -1) {
			for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
				if b, err := enc.DecodeString(run); err == nil {
					more.Write(b)
					more.WriteByte('\n')
					break
				}
			}
		}
		if more.Len() == 0 {
			break
		}
		s = more.String()
		out += s
	}
	return out
}
