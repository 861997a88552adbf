package main

import (
	"encoding/json"
	"strconv"
)

// forGoHarness fits a pipeline's options to the Go SDK harness, which decodes a few of the
// portable options into typed fields (runtime.RawOptionsWrapper) and fails on any that
// does not fit. A Go pipeline's options always fit. A Python or Java pipeline whose
// transforms run in s3io's Go environment (cmd/s3io-expansion) sends its own:
// Python's parallelism is the string "-1", as proto JSON writes an int64. A string that
// is a number becomes the number; a typed option of any other shape is dropped, since the
// Go worker of a cross-language read does not need it.
func forGoHarness(options string) (string, error) {
	var m map[string]any
	if err := json.Unmarshal([]byte(options), &m); err != nil {
		return "", err
	}
	fit := func(key string, ok func(v any) (any, bool)) {
		v, present := m[key]
		if !present {
			return
		}
		if nv, good := ok(v); good {
			m[key] = nv
		} else {
			delete(m, key)
		}
	}
	isString := func(v any) (any, bool) { _, ok := v.(string); return v, ok }
	fit("beam:option:runner:v1", isString)
	fit("beam:option:app_name:v1", isString)
	fit("beam:option:retain_docker_containers:v1", func(v any) (any, bool) { _, ok := v.(bool); return v, ok })
	fit("beam:option:parallelism:v1", func(v any) (any, bool) {
		switch n := v.(type) {
		case float64:
			return n, n == float64(int(n))
		case string:
			i, err := strconv.Atoi(n)
			return i, err == nil
		}
		return nil, false
	})
	fit("beam:option:experiments:v1", func(v any) (any, bool) {
		l, ok := v.([]any)
		for _, e := range l {
			if _, s := e.(string); !s {
				return nil, false
			}
		}
		return v, ok
	})
	fit("beam:option:go_options:v1", func(v any) (any, bool) { _, ok := v.(map[string]any); return v, ok })
	b, err := json.Marshal(m)
	return string(b), err
}
