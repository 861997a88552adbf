package main

import (
	"encoding/json"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime"
)

func TestHarnessOptionsParseAsTheGoHarnessDoes(t *testing.T) {
	for _, tc := range []struct {
		name, in    string
		parallelism int
		experiments []string
		kept        string // an option the harness does not read, kept
	}{
		{
			name:        "a Python pipeline's",
			in:          `{"beam:option:parallelism:v1":"-1","beam:option:experiments:v1":["beam_fn_api"],"beam:option:job_endpoint:v1":"localhost:1","beam:option:runner:v1":{"odd":1}}`,
			parallelism: -1, experiments: []string{"beam_fn_api"}, kept: "beam:option:job_endpoint:v1",
		},
		{
			name:        "a Go pipeline's, untouched",
			in:          `{"beam:option:go_options:v1":{"options":{"a":"b"}},"beam:option:parallelism:v1":4}`,
			parallelism: 4, kept: "beam:option:go_options:v1",
		},
		{
			name: "a string that is no int, dropped",
			in:   `{"beam:option:parallelism:v1":"many"}`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := harnessOptions(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			var w runtime.RawOptionsWrapper
			if err := json.Unmarshal([]byte(out), &w); err != nil {
				t.Fatalf("the harness cannot parse %s: %v", out, err)
			}
			if w.Parallelism != tc.parallelism || len(w.Experiments) != len(tc.experiments) {
				t.Errorf("%s: parallelism %d, experiments %v; want %d, %v", out, w.Parallelism, w.Experiments, tc.parallelism, tc.experiments)
			}
			var m map[string]json.RawMessage
			json.Unmarshal([]byte(out), &m)
			if _, ok := m[tc.kept]; tc.kept != "" && !ok {
				t.Errorf("%s: %s was dropped", out, tc.kept)
			}
		})
	}
	if _, err := harnessOptions(`not json`); err == nil {
		t.Error("options that are not JSON were accepted")
	}
}
