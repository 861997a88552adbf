package main

import (
	"context"
	"fmt"
	"regexp"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/graphx"
	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/protobuf/proto"

	"github.com/spate-io/beam-s3/s3io"
)

// expander serves Beam's ExpansionService: it builds the requested read as a Go pipeline,
// translates it with the Go SDK's own marshaller, and returns it as the requested
// transform's subgraph, every component renamed into the request's namespace and every Go
// transform in env, whose worker is this program.
type expander struct {
	jobpb.UnimplementedExpansionServiceServer
	env *pipepb.Environment
}

// Expand answers a request; a request it cannot expand is answered with its error (as
// the protocol asks), naming the field at fault where a configuration field is.
func (e *expander) Expand(_ context.Context, req *jobpb.ExpansionRequest) (*jobpb.ExpansionResponse, error) {
	resp, err := e.expand(req)
	if err != nil {
		return &jobpb.ExpansionResponse{Error: err.Error()}, nil
	}
	return resp, nil
}

// DiscoverSchemaTransform lists the schema transforms, each with the configuration's
// schema and its outputs.
func (e *expander) DiscoverSchemaTransform(context.Context, *jobpb.DiscoverSchemaTransformRequest) (*jobpb.DiscoverSchemaTransformResponse, error) {
	out := &jobpb.DiscoverSchemaTransformResponse{SchemaTransformConfigs: map[string]*jobpb.SchemaTransformConfig{}}
	for _, t := range transforms {
		if t.schema {
			out.SchemaTransformConfigs[t.id] = &jobpb.SchemaTransformConfig{
				ConfigSchema:           configSchema(),
				OutputPcollectionNames: t.outputs,
				Description:            t.description,
			}
		}
	}
	return out, nil
}

// request decodes what a request asks for: the transform and its configuration.
func request(spec *pipepb.FunctionSpec) (*transform, s3io.Config, error) {
	var sch *pipepb.Schema
	var row []byte
	var t *transform
	var ok bool
	switch spec.GetUrn() {
	case urnSchemaTransform:
		var p pipepb.SchemaTransformPayload
		if err := proto.Unmarshal(spec.GetPayload(), &p); err != nil {
			return nil, s3io.Config{}, fmt.Errorf("s3io: the schema transform payload does not decode: %w", err)
		}
		if t, ok = lookup(p.GetIdentifier(), true); !ok {
			return nil, s3io.Config{}, fmt.Errorf("s3io: no schema transform %q here; this service has %v", p.GetIdentifier(), ids(true))
		}
		sch, row = p.GetConfigurationSchema(), p.GetConfigurationRow()
	default:
		if t, ok = lookup(spec.GetUrn(), false); !ok {
			return nil, s3io.Config{}, fmt.Errorf("s3io: this service does not expand %q; it expands %v and the schema transforms %v", spec.GetUrn(), ids(false), ids(true))
		}
		var p pipepb.ExternalConfigurationPayload
		if err := proto.Unmarshal(spec.GetPayload(), &p); err != nil {
			return nil, s3io.Config{}, fmt.Errorf("s3io: %s: the configuration payload does not decode: %w", t.id, err)
		}
		sch, row = p.GetSchema(), p.GetPayload()
	}
	cfg, err := decodeConfig(sch, row)
	if err != nil {
		return nil, s3io.Config{}, fmt.Errorf("%s: %w", t.id, err)
	}
	return t, cfg, nil
}

func ids(schema bool) []string {
	var out []string
	for _, t := range transforms {
		if t.schema == schema {
			out = append(out, t.id)
		}
	}
	return out
}

func (e *expander) expand(req *jobpb.ExpansionRequest) (*jobpb.ExpansionResponse, error) {
	rt := req.GetTransform()
	if len(rt.GetInputs()) > 0 {
		return nil, fmt.Errorf("s3io: %s reads a bucket and takes no input; apply it to the pipeline itself (it was given %d)", rt.GetSpec().GetUrn(), len(rt.GetInputs()))
	}
	t, cfg, err := request(rt.GetSpec())
	if err != nil {
		return nil, err
	}
	p := beam.NewPipeline()
	outs := t.build(p.Root(), cfg)
	edges, _, err := p.Build()
	if err != nil {
		return nil, fmt.Errorf("s3io: %s: building the graph: %w", t.id, err)
	}
	pipe, err := graphx.Marshal(edges, &graphx.Options{Environment: e.env})
	if err != nil {
		return nil, fmt.Errorf("s3io: %s: translating the graph: %w", t.id, err)
	}
	outputs := map[string]string{}
	for i, pc := range outs {
		id, err := pcollectionID(pc)
		if err != nil {
			return nil, err
		}
		if _, ok := pipe.GetComponents().GetPcollections()[id]; !ok {
			return nil, fmt.Errorf("s3io: %s: output %s is not in the translated graph", t.id, id)
		}
		outputs[t.outputs[i]] = id
	}
	root := &pipepb.PTransform{
		UniqueName:    rt.GetUniqueName(),
		Spec:          rt.GetSpec(),
		Subtransforms: pipe.GetRootTransformIds(),
		Outputs:       outputs,
	}
	comps, root, err := namespaced(pipe.GetComponents(), root, req.GetNamespace())
	if err != nil {
		return nil, fmt.Errorf("s3io: %s: %w", t.id, err)
	}
	return &jobpb.ExpansionResponse{Components: comps, Transform: root, Requirements: pipe.GetRequirements()}, nil
}

// nodeID reads the graph node number out of a PCollection's String, the only place the Go
// SDK shows it; graphx names the node's PCollection "n<number>". TestPCollectionIDs pins
// both.
var nodeID = regexp.MustCompile(`^\{(\d+): `)

func pcollectionID(pc beam.PCollection) (string, error) {
	m := nodeID.FindStringSubmatch(pc.String())
	if m == nil {
		return "", fmt.Errorf("s3io: cannot tell the graph node of output %s", pc)
	}
	return "n" + m[1], nil
}
