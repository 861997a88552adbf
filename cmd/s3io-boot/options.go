package main

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime"
)

// harnessOptions returns a job's pipeline options (JSON) as the Go SDK harness can parse
// them. The harness decodes them into runtime.RawOptionsWrapper and exits on a type it did
// not expect; a pipeline built by another SDK, such as a Python one whose s3io reads run
// here, sends some of those options typed its own way (Python sends parallelism as the
// string "-1"). A value that holds the expected type inside a string is unwrapped; any
// other mismatched value is dropped, the Go SDK's default standing in for it. Options the
// harness does not read are kept as they are.
func harnessOptions(options string) (string, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(options), &m); err != nil {
		return "", fmt.Errorf("pipeline options: %w", err)
	}
	changed := false
	wrapper := reflect.TypeOf(runtime.RawOptionsWrapper{})
	for i := 0; i < wrapper.NumField(); i++ {
		f := wrapper.Field(i)
		key, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		raw, ok := m[key]
		if !ok || json.Unmarshal(raw, reflect.New(f.Type).Interface()) == nil {
			continue
		}
		changed = true
		var s string
		if json.Unmarshal(raw, &s) == nil && json.Unmarshal([]byte(s), reflect.New(f.Type).Interface()) == nil {
			m[key] = json.RawMessage(s)
			continue
		}
		delete(m, key)
	}
	if !changed {
		return options, nil
	}
	out, err := json.Marshal(m)
	return string(out), err
}
