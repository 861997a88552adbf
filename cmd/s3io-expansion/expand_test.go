package main

import (
	"bytes"
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/coder"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/graphx/schema"
	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/protobuf/proto"
)

// pyConfig is a configuration as Python's NamedTupleBasedPayloadBuilder sends one: the
// fields the user gave, nullable, in the user's order.
type pyConfig struct {
	Prefix      *string `beam:"prefix"`
	Bucket      *string `beam:"bucket"`
	ReadTimeout *string `beam:"read_timeout"`
	Compression *string `beam:"compression"`
	MaxAttempts *int64  `beam:"max_attempts"`
	UsePath     *bool   `beam:"use_path_style"`
	Endpoint    *string `beam:"endpoint"`
}

func sp(s string) *string { return &s }

// encodeRow encodes v (a struct) as a Beam Row, with its schema, as a caller would.
func encodeRow(t *testing.T, v any) (*pipepb.Schema, []byte) {
	t.Helper()
	rt := reflect.TypeOf(v)
	sch, err := schema.FromType(rt)
	if err != nil {
		t.Fatal(err)
	}
	enc, err := coder.RowEncoderForStruct(rt)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := enc(v, &buf); err != nil {
		t.Fatal(err)
	}
	return sch, buf.Bytes()
}

func testEnv(t *testing.T) *pipepb.Environment {
	t.Helper()
	env, err := environment("EXTERNAL", "localhost:50000", "expand_test.go")
	if err != nil {
		t.Fatal(err)
	}
	return env
}

func plainRequest(t *testing.T, urn, ns string, cfg any) *jobpb.ExpansionRequest {
	sch, row := encodeRow(t, cfg)
	payload, _ := proto.Marshal(&pipepb.ExternalConfigurationPayload{Schema: sch, Payload: row})
	return &jobpb.ExpansionRequest{Namespace: ns, Transform: &pipepb.PTransform{UniqueName: "ReadFromS3", Spec: &pipepb.FunctionSpec{Urn: urn, Payload: payload}}}
}

func schemaRequest(t *testing.T, id, ns string, cfg any) *jobpb.ExpansionRequest {
	sch, row := encodeRow(t, cfg)
	payload, _ := proto.Marshal(&pipepb.SchemaTransformPayload{Identifier: id, ConfigurationSchema: sch, ConfigurationRow: row})
	return &jobpb.ExpansionRequest{Namespace: ns, Transform: &pipepb.PTransform{UniqueName: "ReadFromS3", Spec: &pipepb.FunctionSpec{Urn: urnSchemaTransform, Payload: payload}}}
}

var goodConfig = pyConfig{Prefix: sp("p/"), Bucket: sp("logs"), ReadTimeout: sp("45s"), Compression: sp("gzip")}

// TestExpand expands every transform and checks that the answer is a graph whose every
// reference resolves, every component in the request's namespace, with the outputs named
// and coded as the contract says.
func TestExpand(t *testing.T) {
	e := &expander{env: testEnv(t)}
	wantCoder := map[string]string{"records": "beam:coder:bytes:v1", "failures": "beam:coder:row:v1", "output": "beam:coder:row:v1"}
	for _, tr := range transforms {
		t.Run(tr.id, func(t *testing.T) {
			req := plainRequest(t, tr.id, "ns1", goodConfig)
			if tr.schema {
				req = schemaRequest(t, tr.id, "ns1", goodConfig)
			}
			resp, err := e.Expand(context.Background(), req)
			if err != nil || resp.GetError() != "" {
				t.Fatalf("Expand: %v %s", err, resp.GetError())
			}
			c, root := resp.GetComponents(), resp.GetTransform()
			if root.GetUniqueName() != "ReadFromS3" || !proto.Equal(root.GetSpec(), req.GetTransform().GetSpec()) {
				t.Errorf("root transform %v does not keep the request's name and spec", root)
			}
			if len(root.GetOutputs()) != len(tr.outputs) {
				t.Errorf("outputs %v, want %v", root.GetOutputs(), tr.outputs)
			}
			for _, tag := range tr.outputs {
				pc, ok := c.GetPcollections()[root.GetOutputs()[tag]]
				if !ok {
					t.Fatalf("output %q: no PCollection %q", tag, root.GetOutputs()[tag])
				}
				if urn := c.GetCoders()[pc.GetCoderId()].GetSpec().GetUrn(); urn != wantCoder[tag] {
					t.Errorf("output %q coded with %q, want %q", tag, urn, wantCoder[tag])
				}
				// Records as bytes leave the reader itself: no step between it and the
				// boundary copies or wraps them.
				if tag == "records" {
					if p := producer(c, root.GetOutputs()[tag]); !strings.HasSuffix(p, "/s3io.readFn") {
						t.Errorf("records are produced by %q, want s3io's reader itself", p)
					}
				}
			}
			checkReferences(t, c, root, "ns1")
			if len(resp.GetRequirements()) == 0 {
				t.Errorf("no requirements: the read is a splittable DoFn, which the runner must support")
			}
		})
	}
}

// checkReferences fails unless every ID the components and root name exists and is in the
// namespace ns, and every transform is in the Go environment.
func checkReferences(t *testing.T, c *pipepb.Components, root *pipepb.PTransform, ns string) {
	t.Helper()
	has := func(kind, id string, ok bool) {
		t.Helper()
		if !ok {
			t.Errorf("%s %q is named but not among the components", kind, id)
		}
		if !strings.HasPrefix(id, ns) {
			t.Errorf("%s %q is not in namespace %q", kind, id, ns)
		}
	}
	coder := func(id string) { _, ok := c.GetCoders()[id]; has("coder", id, ok) }
	pcoll := func(id string) { _, ok := c.GetPcollections()[id]; has("PCollection", id, ok) }
	for _, id := range root.GetSubtransforms() {
		_, ok := c.GetTransforms()[id]
		has("transform", id, ok)
	}
	for id, tr := range c.GetTransforms() {
		has("transform", id, true)
		if !strings.HasPrefix(tr.GetUniqueName(), root.GetUniqueName()+"/") {
			t.Errorf("transform %q is not named under %q", tr.GetUniqueName(), root.GetUniqueName())
		}
		for _, s := range tr.GetSubtransforms() {
			_, ok := c.GetTransforms()[s]
			has("transform", s, ok)
		}
		for _, m := range []map[string]string{tr.GetInputs(), tr.GetOutputs()} {
			for _, p := range m {
				pcoll(p)
			}
		}
		if env := tr.GetEnvironmentId(); env != "" {
			_, ok := c.GetEnvironments()[env]
			has("environment", env, ok)
		}
		if tr.GetSpec().GetUrn() == "beam:transform:pardo:v1" {
			if tr.GetEnvironmentId() == "" {
				t.Errorf("ParDo %q runs in no environment", tr.GetUniqueName())
			}
			var p pipepb.ParDoPayload
			proto.Unmarshal(tr.GetSpec().GetPayload(), &p)
			if id := p.GetRestrictionCoderId(); id != "" {
				coder(id)
			}
		}
	}
	for id, p := range c.GetPcollections() {
		has("PCollection", id, true)
		coder(p.GetCoderId())
		_, ok := c.GetWindowingStrategies()[p.GetWindowingStrategyId()]
		has("windowing strategy", p.GetWindowingStrategyId(), ok)
	}
	for _, w := range c.GetWindowingStrategies() {
		coder(w.GetWindowCoderId())
	}
	for _, cd := range c.GetCoders() {
		for _, id := range cd.GetComponentCoderIds() {
			coder(id)
		}
	}
}

// Two reads in one pipeline: their components must not collide.
func TestExpandTwiceNoCollision(t *testing.T) {
	e := &expander{env: testEnv(t)}
	a, _ := e.Expand(context.Background(), plainRequest(t, urnRead, "external_1", goodConfig))
	b, _ := e.Expand(context.Background(), plainRequest(t, urnReadWithFailures, "external_2", goodConfig))
	for id := range a.GetComponents().GetTransforms() {
		if _, ok := b.GetComponents().GetTransforms()[id]; ok {
			t.Errorf("transform %q in both expansions", id)
		}
	}
	for id := range a.GetComponents().GetCoders() {
		if _, ok := b.GetComponents().GetCoders()[id]; ok {
			t.Errorf("coder %q in both expansions", id)
		}
	}
}

// A wrong value fails the expansion, naming the field as the caller spelled it.
func TestExpandErrorsNameTheField(t *testing.T) {
	e := &expander{env: testEnv(t)}
	type unknownField struct {
		Bucket *string `beam:"bucket"`
		Bukket *string `beam:"prefixx"`
	}
	type wrongType struct {
		Bucket      *string `beam:"bucket"`
		MaxAttempts *string `beam:"max_attempts"`
	}
	with := func(f func(c *pyConfig)) pyConfig { c := goodConfig; f(&c); return c }
	for _, tc := range []struct {
		name  string
		cfg   any
		field string
		says  string
	}{
		{"negative timeout", with(func(c *pyConfig) { c.ReadTimeout = sp("-1s") }), "read_timeout", "Config.ReadTimeout"},
		{"not a duration", with(func(c *pyConfig) { c.ReadTimeout = sp("soon") }), "read_timeout", "not a duration"},
		{"unknown compression", with(func(c *pyConfig) { c.Compression = sp("gzipp") }), "compression", "Config.Compression"},
		{"no bucket", with(func(c *pyConfig) { c.Bucket = nil }), "bucket", "Config.Bucket is empty"},
		{"bad bucket", with(func(c *pyConfig) { c.Bucket = sp("Logs") }), "bucket", "not a valid S3 bucket name"},
		{"bad endpoint", with(func(c *pyConfig) { c.Endpoint = sp("127.0.0.1:9000") }), "endpoint", "Config.Endpoint"},
		{"too many attempts", with(func(c *pyConfig) { n := int64(1000); c.MaxAttempts = &n }), "max_attempts", "between 1 and 100"},
		{"unknown field", unknownField{sp("logs"), sp("x")}, "prefixx", "no such field"},
		{"wrong type", wrongType{sp("logs"), sp("3")}, "max_attempts", "integer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, req := range []*jobpb.ExpansionRequest{plainRequest(t, urnRead, "n", tc.cfg), schemaRequest(t, idRead, "n", tc.cfg)} {
				resp, err := e.Expand(context.Background(), req)
				if err != nil {
					t.Fatal(err)
				}
				msg := resp.GetError()
				if !strings.Contains(msg, `field "`+tc.field+`"`) || !strings.Contains(msg, tc.says) {
					t.Errorf("error %q, want it to name field %q and say %q", msg, tc.field, tc.says)
				}
				if resp.GetTransform() != nil {
					t.Errorf("a failed expansion returned a transform")
				}
			}
		})
	}
}

func TestDiscover(t *testing.T) {
	e := &expander{env: testEnv(t)}
	resp, err := e.DiscoverSchemaTransform(context.Background(), &jobpb.DiscoverSchemaTransformRequest{})
	if err != nil {
		t.Fatal(err)
	}
	got := resp.GetSchemaTransformConfigs()
	for _, id := range []string{idRead, idReadWithFailures, idReadWithPositions} {
		c, ok := got[id]
		if !ok {
			t.Fatalf("%s not discovered: %v", id, got)
		}
		if c.GetDescription() == "" || len(c.GetOutputPcollectionNames()) == 0 {
			t.Errorf("%s: no description or outputs: %v", id, c)
		}
		for _, f := range c.GetConfigSchema().GetFields() {
			if f.GetDescription() == "" {
				t.Errorf("%s: field %s has no description", id, f.GetName())
			}
			if f.GetType().GetNullable() != (f.GetName() != "bucket") {
				t.Errorf("%s: field %s nullable=%v; only bucket is required", id, f.GetName(), f.GetType().GetNullable())
			}
		}
	}
	if len(got) != 3 {
		t.Errorf("discovered %d schema transforms, want 3", len(got))
	}
}

// producer names the primitive transform that outputs PCollection id.
func producer(c *pipepb.Components, id string) string {
	for _, tr := range c.GetTransforms() {
		if len(tr.GetSubtransforms()) > 0 {
			continue
		}
		for _, o := range tr.GetOutputs() {
			if o == id {
				return tr.GetUniqueName()
			}
		}
	}
	return ""
}
