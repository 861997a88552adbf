package main

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
)

// ownFlags are this program's flags, in the order --help lists them. Every other flag on
// the command line is Beam's.
var ownFlags = []string{"records", "output", "bucket", "prefix", "s3-endpoint", "s3-region", "path-style", "framer"}

// beamFlagNotes are the Beam flags a run of this demo may want, described for it. Beam's own
// descriptions mark several flags "(required)" that are required only by some runners.
var beamFlagNotes = []struct{ name, note string }{
	{"runner", "where the pipeline runs: prism (default, in this process), universal (a job server such as prism's), flink, dataflow"},
	{"endpoint", "host:port of the job server, for --runner=universal or flink"},
	{"environment_type", "LOOPBACK runs the workers in this process (needed with the embedded S3 server)"},
	{"parallelism", "Flink parallelism"},
	{"project, --region, --staging_location", "Dataflow's project, GCP region and gs:// staging path, for --runner=dataflow only"},
}

const usageHeader = `backfill counts the NDJSON events under an S3 prefix by their "type" field, reading every
object with s3io.Read on Apache Beam, and prints what it read and how fast.

With no flags it starts an in-process S3 server, seeds it with --records sample events in
plain, gzip and zstd objects, reads them on the in-process prism runner, and checks the
per-type counts against what it seeded (exit status 1 if they differ). With --bucket it
reads that bucket instead, with credentials from the standard AWS chain.

Usage:
  go run ./examples/backfill [--records N] [--output FILE] [Beam flags]
  go run ./examples/backfill --bucket B [--prefix P] [--s3-endpoint URL --path-style]
      [--s3-region R] [--framer F] [--output FILE] [Beam flags]

Flags:
`

// usage is flag.Usage: the demo and its own flags first, then the Beam flags that matter
// for it, then the names of the rest.
func usage() {
	printUsage(flag.CommandLine.Output(), flag.CommandLine)
}

func printUsage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprint(w, usageHeader)
	for _, name := range ownFlags {
		if f := fs.Lookup(name); f != nil {
			printFlag(w, f)
		}
	}
	fmt.Fprint(w, "\nBeam's runner flags also apply; none is needed for the default run. The ones a run of\nthis demo may use:\n")
	for _, n := range beamFlagNotes {
		fmt.Fprintf(w, "  --%s\n    \t%s\n", n.name, n.note)
	}
	var rest []string
	fs.VisitAll(func(f *flag.Flag) {
		if !slices.Contains(ownFlags, f.Name) && !strings.Contains(beamFlagList(), " "+f.Name+" ") {
			rest = append(rest, "--"+f.Name)
		}
	})
	fmt.Fprintf(w, "\nBeam's other flags (described in the Beam Go SDK's packages jobopts, gcpopts and\nrunners/dataflow; most are Dataflow's or a worker's):\n  %s\n", wrap(strings.Join(rest, " "), 88))
}

// beamFlagList is the names beamFlagNotes describe, each between spaces.
func beamFlagList() string {
	var names []string
	for _, n := range beamFlagNotes {
		names = append(names, strings.Split(n.name, ", --")...)
	}
	return " " + strings.Join(names, " ") + " "
}

// printFlag prints one flag as flag.PrintDefaults does, with two dashes.
func printFlag(w io.Writer, f *flag.Flag) {
	typ, text := flag.UnquoteUsage(f)
	line := "  --" + f.Name
	if typ != "" {
		line += " " + typ
	}
	def := ""
	switch f.DefValue {
	case "", "false", "0":
	default:
		def = fmt.Sprintf(" (default %s)", f.DefValue)
	}
	fmt.Fprintf(w, "%s\n    \t%s%s\n", line, text, def)
}

// wrap breaks s into lines of at most width characters at spaces.
func wrap(s string, width int) string {
	var b strings.Builder
	n := 2
	for i, word := range strings.Fields(s) {
		if i > 0 && n+1+len(word) > width {
			b.WriteString("\n  ")
			n = 2
		} else if i > 0 {
			b.WriteByte(' ')
			n++
		}
		b.WriteString(word)
		n += len(word)
	}
	return b.String()
}
