package main

import (
	"flag"
	"strings"
	"testing"
)

// TestUsage checks --help: the demo's description and its own flags come first, every flag
// is mentioned, and none is called "(required)", which no flag is for the default run.
func TestUsage(t *testing.T) {
	var b strings.Builder
	printUsage(&b, flag.CommandLine)
	out := b.String()
	if !strings.HasPrefix(out, "backfill counts the NDJSON events") {
		t.Errorf("--help does not begin with what the demo does:\n%s", out)
	}
	beam := strings.Index(out, "Beam's runner flags")
	if beam < 0 {
		t.Fatalf("--help does not say that Beam's flags apply:\n%s", out)
	}
	for _, name := range ownFlags {
		i := strings.Index(out, "\n  --"+name+" ")
		if i < 0 {
			i = strings.Index(out, "\n  --"+name+"\n")
		}
		if i < 0 || i > beam {
			t.Errorf("--%s is not described among the demo's flags, before Beam's", name)
		}
	}
	flag.CommandLine.VisitAll(func(f *flag.Flag) {
		if !strings.Contains(out, "--"+f.Name) {
			t.Errorf("--help does not mention --%s", f.Name)
		}
	})
	if strings.Contains(out, "required") {
		t.Errorf("--help calls a flag required:\n%s", out)
	}
}
