// Command s3io-planbench measures s3io's planner (s3io.PlanDescriptors) on a large prefix
// with S3's per-request latency, at several list parallelisms:
//
//	go run ./cmd/s3io-planbench [--keys 1000000] [--latency 30ms] [--layout flat|foldered|both]
//	                            [--list-parallelism 1,16] [--rounds 1] [--cpuprofile DIR]
//
// The prefix is synthesized by internal/fakelist, an in-process ListObjectsV2 server that
// computes keys from their index, so a million keys cost no storage. The server runs in
// this process and every planner run in a child process (this binary, re-executed), so the
// run's wall time, CPU time and peak RSS are the planner's own, and no connection or cache
// carries over from one run to the next. Both processes share the machine's cores, so the
// server's CPU per request is measured and printed too.
//
// It prints a Markdown table and exits non-zero if a run fails, plans a different number
// of objects than there are keys, or if the parallelisms of a layout disagree on the
// descriptor IDs: a parallel planner must emit exactly the plan a sequential one does.
package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spate-io/beam-s3/internal/fakelist"
	"github.com/spate-io/beam-s3/s3io"
)

// childArg, as the first argument, makes this binary a planner run instead of the bench.
const childArg = "-planbench-child"

const (
	bucket    = "planbench"
	prefix    = "data/"
	perFolder = 1000 // keys per folder in the foldered layout: 1,000 folders for 1,000,000 keys
)

// result is the JSON line a child prints.
type result struct {
	Seconds     float64        `json:"seconds"`     // wall time of PlanDescriptors
	CPUSeconds  float64        `json:"cpu_seconds"` // user + system during PlanDescriptors
	Stats       s3io.PlanStats `json:"stats"`
	Descriptors int64          `json:"descriptors"` // descriptors emitted
	Digest      string         `json:"digest"`      // SHA-256 of the IDs in emission order, one per line
	Error       string         `json:"error,omitempty"`
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == childArg {
		os.Exit(child(os.Args[2:]))
	}
	os.Exit(parent())
}

// child plans one prefix and prints its result line.
func child(args []string) int {
	fs := flag.NewFlagSet("s3io-planbench child", flag.ExitOnError)
	endpoint := fs.String("endpoint", "", "server URL")
	parallelism := fs.Int("list-parallelism", 0, "Config.ListParallelism")
	profile := fs.String("cpuprofile", "", "write a CPU profile of planning here")
	fs.Parse(args)

	if *profile != "" {
		f, err := os.Create(*profile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "cpuprofile:", err)
			return 1
		}
		defer f.Close()
		defer pprof.StopCPUProfile()
	}
	cfg := s3io.Config{
		Bucket: bucket, Prefix: prefix, Endpoint: *endpoint, UsePathStyle: true, Region: "us-east-1",
		ListParallelism: *parallelism,
		// Named, so the planner never probes an object's first bytes with a GET.
		Compression: s3io.CompressionGzip,
	}
	h := sha256.New()
	var res result
	cpu0, start := selfCPU(), time.Now()
	stats, err := s3io.PlanDescriptors(context.Background(), cfg, func(d s3io.SplitDescriptor) error {
		h.Write([]byte(d.ID))
		h.Write([]byte{'\n'})
		res.Descriptors++
		return nil
	})
	res.Seconds, res.CPUSeconds = time.Since(start).Seconds(), (selfCPU() - cpu0).Seconds()
	res.Stats, res.Digest = stats, hex.EncodeToString(h.Sum(nil))
	if err != nil {
		res.Error = err.Error()
	}
	line, _ := json.Marshal(res)
	fmt.Printf("%s\n", line)
	if err != nil {
		return 1
	}
	return 0
}

// run is one planner run as the parent saw it.
type run struct {
	result
	parallelism int
	peakRSSKiB  int64
	server      fakelist.Stats
	serverCPU   time.Duration // this process's CPU during the run: the server's
}

func parent() int {
	keys := flag.Int("keys", 1_000_000, "keys under the prefix")
	latency := flag.Duration("latency", 30*time.Millisecond, "server latency per request (S3: about 30 ms per LIST page)")
	layout := flag.String("layout", "both", "flat (one folder), foldered (folders of 1,000 keys), or both")
	parList := flag.String("list-parallelism", "1,16", "comma-separated Config.ListParallelism values (named apart from Beam's --parallelism, which the Beam SDK registers too)")
	rounds := flag.Int("rounds", 1, "runs per layout and parallelism; the table shows the median by wall time")
	profDir := flag.String("cpuprofile", "", "write each run's CPU profile into this directory")
	flag.Parse()

	var pars []int
	for _, f := range strings.Split(*parList, ",") {
		p, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || p < 1 {
			fmt.Fprintf(os.Stderr, "s3io-planbench: --list-parallelism: %q is not a positive integer\n", f)
			return 2
		}
		pars = append(pars, p)
	}
	layouts := map[string]func(int) string{
		"flat":     fakelist.FlatKeys(prefix, *keys),
		"foldered": fakelist.FolderedKeys(prefix, *keys, perFolder),
	}
	names := []string{"flat", "foldered"}
	if *layout != "both" {
		if layouts[*layout] == nil {
			fmt.Fprintf(os.Stderr, "s3io-planbench: --layout must be flat, foldered or both, not %q\n", *layout)
			return 2
		}
		names = []string{*layout}
	}
	if *keys < 1 || *rounds < 1 {
		fmt.Fprintln(os.Stderr, "s3io-planbench: --keys and --rounds must be positive")
		return 2
	}
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "s3io-planbench:", err)
		return 1
	}

	fmt.Printf("Planning %d keys under s3://%s/%s, %v per LIST request, %d CPU cores shared by the planner (a child process) and the fake server (this process); median of %d round(s).\n\n",
		*keys, bucket, prefix, *latency, runtime.NumCPU(), *rounds)
	fmt.Println("| layout | parallelism | keys | LIST requests | max in flight | wall s | CPU s | keys/s | peak RSS MiB | descriptors | ID digest | speedup | server CPU ms/request |")
	fmt.Println("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|")
	failed := false
	var verdicts []string
	for _, name := range names {
		srv := fakelist.New(fakelist.Options{Bucket: bucket, N: *keys, Key: layouts[name], Latency: *latency})
		digests := map[string]bool{}
		var base float64
		for _, p := range pars {
			var runs []run
			for r := range *rounds {
				prof := ""
				if *profDir != "" {
					prof = filepath.Join(*profDir, fmt.Sprintf("%s-p%d-r%d.pprof", name, p, r))
				}
				rn, err := plan(exe, srv, p, prof)
				if err == nil && rn.Stats.Objects != int64(*keys) {
					err = fmt.Errorf("planned %d objects of %d keys", rn.Stats.Objects, *keys)
				}
				if err != nil {
					fmt.Fprintf(os.Stderr, "s3io-planbench: %s, parallelism %d: %v\n", name, p, err)
					failed = true
					continue
				}
				digests[rn.Digest] = true
				runs = append(runs, rn)
			}
			if len(runs) == 0 {
				continue
			}
			slices.SortFunc(runs, func(a, b run) int { return cmpFloat(a.Seconds, b.Seconds) })
			m := runs[len(runs)/2]
			if p == 1 {
				base = m.Seconds
			}
			speedup := "-"
			if base > 0 {
				speedup = fmt.Sprintf("%.2f×", base/m.Seconds)
			}
			rss := "-"
			if m.peakRSSKiB > 0 {
				rss = fmt.Sprintf("%.0f", float64(m.peakRSSKiB)/1024)
			}
			fmt.Printf("| %s | %d | %d | %d | %d | %.2f | %.2f | %.0f | %s | %d | %.12s | %s | %.3f |\n",
				name, p, m.Stats.KeysListed, m.server.Lists, m.server.MaxInFlight, m.Seconds, m.CPUSeconds,
				float64(m.Stats.KeysListed)/m.Seconds, rss, m.Descriptors, m.Digest, speedup,
				float64(m.serverCPU.Microseconds())/1000/float64(max(m.server.Requests, 1)))
		}
		srv.Close()
		switch {
		case len(digests) == 1:
			verdicts = append(verdicts, fmt.Sprintf("%s: the descriptor IDs of every parallelism and round are equal.", name))
		case len(digests) > 1:
			verdicts = append(verdicts, fmt.Sprintf("%s: the descriptor IDs DIFFER between runs (%d digests).", name, len(digests)))
			failed = true
		}
	}
	fmt.Println()
	for _, v := range verdicts {
		fmt.Println(v)
	}
	fmt.Println("CPU s is the planner process's alone; server CPU is this process's CPU during the run per request it answered (net/http included; a full 1,000-key page costs more than a short probe), taken from the same cores.")
	if failed {
		return 1
	}
	return 0
}

// plan runs one planner child against srv and collects what it and the server report.
func plan(exe string, srv *fakelist.Server, parallelism int, profile string) (run, error) {
	args := []string{childArg, "-endpoint", srv.URL, "-list-parallelism", strconv.Itoa(parallelism)}
	if profile != "" {
		args = append(args, "-cpuprofile", profile)
	}
	cmd := exec.Command(exe, args...)
	// Fake credentials and nothing else of the caller's AWS settings: a profile or
	// endpoint from the environment must not reach the planner.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AWS_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "AWS_ACCESS_KEY_ID=fakelist", "AWS_SECRET_ACCESS_KEY=fakelist", "AWS_REGION=us-east-1",
		"AWS_EC2_METADATA_DISABLED=true", "AWS_CONFIG_FILE="+os.DevNull, "AWS_SHARED_CREDENTIALS_FILE="+os.DevNull)
	// The child's log is shown only if it fails: the table stays readable.
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	setParentDeathSignal(cmd)

	srv.ResetStats()
	cpu0 := selfCPU()
	err := cmd.Run()
	rn := run{parallelism: parallelism, server: srv.Stats(), serverCPU: selfCPU() - cpu0}
	if err != nil {
		os.Stderr.Write(stderr.Bytes())
	}
	if cmd.ProcessState != nil {
		rn.peakRSSKiB = peakRSSKiB(cmd.ProcessState)
	}
	line := bytes.TrimSpace(stdout.Bytes())
	if i := bytes.LastIndexByte(line, '\n'); i >= 0 {
		line = line[i+1:]
	}
	if jerr := json.Unmarshal(line, &rn.result); jerr != nil {
		if err == nil {
			err = fmt.Errorf("child result %q: %v", line, jerr)
		}
		return rn, err
	}
	if rn.Error != "" {
		return rn, fmt.Errorf("%s", rn.Error)
	}
	return rn, err
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
