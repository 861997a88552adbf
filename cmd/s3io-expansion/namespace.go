package main

import (
	"fmt"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/protobuf/proto"
)

// The Go SDK names a pipeline's components n1, c0, e3, go...: two expansions in one
// pipeline, or a caller's own components, would collide. namespaced renames every
// component ID into the request's namespace, and every transform's and PCollection's name
// under the expanded transform's, with every reference to them: in transforms, PCollections,
// coders, windowing strategies, and inside the payloads that name coders (ParDo's
// restriction, state and timer coders; Combine's accumulator coder).

// payloadURNs are the transform URNs the Go SDK translates a read into whose payloads name
// no component, or name only those namespaced below. A transform of any other URN fails
// the expansion rather than leave a reference unrenamed.
var payloadURNs = map[string]bool{
	"":                                         true, // a composite
	"beam:transform:impulse:v1":                true,
	"beam:transform:group_by_key:v1":           true,
	"beam:transform:flatten:v1":                true,
	"beam:transform:window_into:v1":            true,
	"beam:transform:reshuffle:v1":              true,
	"beam:transform:pardo:v1":                  true,
	"beam:transform:combine_per_key:v1":        true,
	"beam:transform:combine_globally:v1":       true,
	"beam:transform:combine_grouped_values:v1": true,
}

func namespaced(in *pipepb.Components, root *pipepb.PTransform, namespace string) (*pipepb.Components, *pipepb.PTransform, error) {
	c := proto.Clone(in).(*pipepb.Components)
	root = proto.Clone(root).(*pipepb.PTransform)
	id := func(old string) string {
		if old == "" {
			return ""
		}
		return namespace + "s3io_" + old
	}
	name := func(old string) string { return root.GetUniqueName() + "/" + old }
	out := &pipepb.Components{
		Transforms:          map[string]*pipepb.PTransform{},
		Pcollections:        map[string]*pipepb.PCollection{},
		WindowingStrategies: map[string]*pipepb.WindowingStrategy{},
		Coders:              map[string]*pipepb.Coder{},
		Environments:        map[string]*pipepb.Environment{},
	}
	renameAll := func(ids []string) []string {
		out := make([]string, len(ids))
		for i, s := range ids {
			out[i] = id(s)
		}
		return out
	}
	renameMap := func(m map[string]string) map[string]string {
		out := make(map[string]string, len(m))
		for k, v := range m {
			out[k] = id(v)
		}
		return out
	}
	for k, t := range c.GetTransforms() {
		urn := t.GetSpec().GetUrn()
		if !payloadURNs[urn] {
			return nil, nil, fmt.Errorf("the translated graph holds a %q transform, whose payload this service cannot rename into a namespace", urn)
		}
		t.UniqueName = name(t.GetUniqueName())
		t.Subtransforms = renameAll(t.GetSubtransforms())
		t.Inputs, t.Outputs = renameMap(t.GetInputs()), renameMap(t.GetOutputs())
		t.EnvironmentId = id(t.GetEnvironmentId())
		if err := renamePayload(t, id); err != nil {
			return nil, nil, fmt.Errorf("transform %s: %w", k, err)
		}
		out.Transforms[id(k)] = t
	}
	for k, p := range c.GetPcollections() {
		p.UniqueName = name(p.GetUniqueName())
		p.CoderId, p.WindowingStrategyId = id(p.GetCoderId()), id(p.GetWindowingStrategyId())
		out.Pcollections[id(k)] = p
	}
	for k, w := range c.GetWindowingStrategies() {
		w.WindowCoderId, w.EnvironmentId = id(w.GetWindowCoderId()), id(w.GetEnvironmentId())
		out.WindowingStrategies[id(k)] = w
	}
	for k, cd := range c.GetCoders() {
		cd.ComponentCoderIds = renameAll(cd.GetComponentCoderIds())
		out.Coders[id(k)] = cd
	}
	for k, e := range c.GetEnvironments() {
		out.Environments[id(k)] = e
	}
	root.Subtransforms = renameAll(root.GetSubtransforms())
	root.Outputs = renameMap(root.GetOutputs())
	return out, root, nil
}

// renamePayload renames the component IDs inside a transform's payload.
func renamePayload(t *pipepb.PTransform, id func(string) string) error {
	switch t.GetSpec().GetUrn() {
	case "beam:transform:pardo:v1":
		var p pipepb.ParDoPayload
		if err := proto.Unmarshal(t.GetSpec().GetPayload(), &p); err != nil {
			return err
		}
		p.RestrictionCoderId = id(p.GetRestrictionCoderId())
		for _, s := range p.GetStateSpecs() {
			switch sp := s.GetSpec().(type) {
			case *pipepb.StateSpec_ReadModifyWriteSpec:
				sp.ReadModifyWriteSpec.CoderId = id(sp.ReadModifyWriteSpec.GetCoderId())
			case *pipepb.StateSpec_BagSpec:
				sp.BagSpec.ElementCoderId = id(sp.BagSpec.GetElementCoderId())
			case *pipepb.StateSpec_CombiningSpec:
				sp.CombiningSpec.AccumulatorCoderId = id(sp.CombiningSpec.GetAccumulatorCoderId())
			case *pipepb.StateSpec_MapSpec:
				sp.MapSpec.KeyCoderId, sp.MapSpec.ValueCoderId = id(sp.MapSpec.GetKeyCoderId()), id(sp.MapSpec.GetValueCoderId())
			case *pipepb.StateSpec_SetSpec:
				sp.SetSpec.ElementCoderId = id(sp.SetSpec.GetElementCoderId())
			case *pipepb.StateSpec_OrderedListSpec:
				sp.OrderedListSpec.ElementCoderId = id(sp.OrderedListSpec.GetElementCoderId())
			case *pipepb.StateSpec_MultimapSpec:
				sp.MultimapSpec.KeyCoderId, sp.MultimapSpec.ValueCoderId = id(sp.MultimapSpec.GetKeyCoderId()), id(sp.MultimapSpec.GetValueCoderId())
			default:
				return fmt.Errorf("a state spec of kind %T", sp)
			}
		}
		for _, ts := range p.GetTimerFamilySpecs() {
			ts.TimerFamilyCoderId = id(ts.GetTimerFamilyCoderId())
		}
		b, err := proto.Marshal(&p)
		if err != nil {
			return err
		}
		t.Spec.Payload = b
	case "beam:transform:combine_per_key:v1", "beam:transform:combine_globally:v1", "beam:transform:combine_grouped_values:v1":
		var p pipepb.CombinePayload
		if err := proto.Unmarshal(t.GetSpec().GetPayload(), &p); err != nil {
			return err
		}
		p.AccumulatorCoderId = id(p.GetAccumulatorCoderId())
		b, err := proto.Marshal(&p)
		if err != nil {
			return err
		}
		t.Spec.Payload = b
	}
	return nil
}
