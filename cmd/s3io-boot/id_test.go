package main

import "testing"

func TestUnquoteID(t *testing.T) {
	for in, want := range map[string]string{
		"'job-001[job]_external_1s3io_go'": "job-001[job]_external_1s3io_go", // prism's PROCESS environment
		"worker-7":                         "worker-7",
		"'":                                "'",
		"'half":                            "'half",
		"":                                 "",
	} {
		if got := unquoteID(in); got != want {
			t.Errorf("unquoteID(%q) = %q, want %q", in, got, want)
		}
	}
}
