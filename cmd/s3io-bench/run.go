package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spate-io/beam-s3/internal/netshape"
	"github.com/spate-io/beam-s3/internal/versitygw"
)

// runner starts child runs against one server, and its shaping proxy with --shape.
type runner struct {
	exe    string
	gw     *versitygw.Process
	proxy  *netshape.Proxy // nil without --shape
	bucket string
	opts   *options
	logDir string
}

// runResult is one child run as the parent measured it. A failed run has Err set and is
// left out of the medians.
type runResult struct {
	Round   int    `json:"round"`
	Prefix  string `json:"prefix"`
	Variant string `json:"variant"`
	// WallSeconds runs from starting the child to its exit: process start-up, pipeline
	// construction and prism's start included, as a user running the job would wait.
	WallSeconds float64 `json:"wall_seconds"`
	// CPUSeconds is the child's user + system time from rusage.
	CPUSeconds float64 `json:"cpu_seconds"`
	// PeakRSSKiB is the child's peak resident set: VmHWM, which the child reads from
	// /proc/self/status as it finishes.
	PeakRSSKiB int64 `json:"peak_rss_kib"`
	// RusageMaxRSSKiB is ru_maxrss from wait4, kept for reference but not reported: Linux
	// folds the high-water mark of the memory map a process had before execve into it, and
	// Go starts children with CLONE_VM, so that map is the parent's. ru_maxrss is therefore
	// never below this benchmark's own peak RSS, however small the child.
	RusageMaxRSSKiB int64 `json:"rusage_max_rss_kib"`
	// ServerCPUSeconds is the CPU time the S3 side used during the run (negative when
	// unknown): the server's, plus this process's, which runs the shaping proxy. It shares
	// the machine's cores with the child.
	ServerCPUSeconds float64 `json:"server_cpu_seconds"`
	// OtherCPUSeconds is the CPU time every other process on the machine used during the
	// run (negative when unknown). Well above zero, the run competed with foreign load.
	OtherCPUSeconds float64 `json:"other_cpu_seconds"`
	// Attempt counts the tries at this job; Discarded marks a try that foreign load spoiled
	// and that was repeated (see --retry-loaded).
	Attempt   int  `json:"attempt"`
	Discarded bool `json:"discarded,omitempty"`
	// Proxy is what the shaping proxy saw of a run through it; nil for a direct run.
	Proxy   *proxyCounts `json:"proxy,omitempty"`
	Child   *childResult `json:"child,omitempty"`
	Err     string       `json:"error,omitempty"`
	Log     string       `json:"log"`
	Profile string       `json:"cpuprofile,omitempty"`
}

// proxyCounts are the shaping proxy's counters over one run.
type proxyCounts struct {
	Shaped          bool  `json:"shaped"`
	Requests        int64 `json:"requests"`
	Gets            int64 `json:"object_gets"`
	MaxGetsInFlight int   `json:"max_object_gets_in_flight"`
}

func (r *runResult) ok() bool { return r.Err == "" }

// wall and cpu are the seconds the report gives for a successful run: the child process's,
// but beam.Run's alone for the floor, whose generation of records is not part of it.
func (r *runResult) wall() float64 {
	if r.Variant == variantFloor {
		return r.Child.PipelineSeconds
	}
	return r.WallSeconds
}

func (r *runResult) cpu() float64 {
	if r.Variant == variantFloor {
		return r.Child.PipelineCPUSeconds
	}
	return r.CPUSeconds
}

// loadedFraction is how much of one core other processes may take during a run before its
// numbers are considered spoiled: a fifth leaves room for the system's own background work.
// Below loadedMinSeconds the figure is within the 10 ms ticks of /proc/stat of zero.
const (
	loadedFraction   = 0.2
	loadedMinSeconds = 0.1
)

// loaded reports whether other processes took more than loadedFraction of a core during a
// successful run.
func (r *runResult) loaded() bool {
	return r.ok() && r.OtherCPUSeconds > max(loadedFraction*r.WallSeconds, loadedMinSeconds)
}

// textioEnv is how Beam's S3 filesystem is pointed at the server: it takes no options, so
// the endpoint comes from the standard AWS_ENDPOINT_URL_S3 variable, and the SDK puts the
// bucket in front of the host (virtual-hosted addressing). Response checksum validation is
// turned off the same way (AWS_RESPONSE_CHECKSUM_VALIDATION) unless --textio-checksums, so
// that textio, the loop and s3io do the same work per byte.
func (r *runner) textioEnv() []string {
	env := []string{fmt.Sprintf("AWS_ENDPOINT_URL_S3=http://%s:%d", r.opts.virtualDomain, r.gw.Port)}
	if !r.opts.textioChecksums {
		env = append(env, "AWS_RESPONSE_CHECKSUM_VALIDATION=when_required")
	}
	return env
}

// env is the child's environment: this process's, without any AWS_ variable of the
// caller's, plus the server's credentials. No shared config or instance metadata is
// consulted, so nothing on the machine changes what a run does.
func (r *runner) env(variant string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AWS_") {
			env = append(env, kv)
		}
	}
	env = append(env,
		"AWS_ACCESS_KEY_ID="+versitygw.AccessKey,
		"AWS_SECRET_ACCESS_KEY="+versitygw.SecretKey,
		"AWS_REGION=us-east-1",
		"AWS_CONFIG_FILE="+os.DevNull,
		"AWS_SHARED_CREDENTIALS_FILE="+os.DevNull,
		"AWS_EC2_METADATA_DISABLED=true",
	)
	if variant == variantTextio {
		env = append(env, r.textioEnv()...)
	}
	return env
}

// run executes one job in a fresh child process and measures it. Every failure (a child
// error, a crash, a timeout, an unreadable result) becomes runResult.Err, never an error of
// the benchmark.
func (r *runner) run(ctx context.Context, j job) runResult {
	name := fmt.Sprintf("r%d-%s-%s", j.round, j.prefix, j.variant)
	res := runResult{Round: j.round, Prefix: j.prefix, Variant: j.variant, ServerCPUSeconds: -1, OtherCPUSeconds: -1,
		Log: filepath.Join(r.logDir, name+".log")}
	// With --shape, every read but s3io-direct (and the memory check's) goes through the
	// proxy, shaped but for s3io-unshaped.
	endpoint := r.gw.URL
	proxied := r.proxy != nil && j.variant != variantS3ioDirect && j.variant != variantFloor && j.prefix != prefixBig && j.prefix != prefixEmpty
	if proxied {
		endpoint = r.proxy.URL
		r.proxy.SetShaping(j.variant != variantS3ioUnshaped)
		r.proxy.Reset()
	}
	args := []string{childCommand, "--variant", j.variant, "--bucket", r.bucket, "--prefix", j.prefix, "--endpoint", endpoint}
	if j.variant == variantFloor {
		args = append(args, "--size", fmt.Sprint(int64(r.opts.size)), "--object-size", fmt.Sprint(int64(r.opts.objectSize)),
			"--record-size", fmt.Sprint(r.opts.recordSize))
	}
	if r.opts.cpuprofileDir != "" {
		res.Profile = filepath.Join(r.opts.cpuprofileDir, name+".pprof")
		args = append(args, "--cpuprofile", res.Profile)
	}
	logFile, err := os.Create(res.Log)
	if err != nil {
		res.Err = fmt.Sprintf("create log: %v", err)
		return res
	}
	defer logFile.Close()

	runCtx, cancel := context.WithTimeout(ctx, r.opts.timeout)
	defer cancel()
	cmd := exec.CommandContext(runCtx, r.exe, args...)
	cmd.Env = r.env(j.variant)
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, logFile
	cmd.WaitDelay = 10 * time.Second
	setParentDeathSignal(cmd)

	serverBefore, serverErr := processCPU(r.gw.Pid())
	selfBefore := selfCPU()
	busyBefore, busyErr := systemBusy()
	start := time.Now()
	waitErr := cmd.Start()
	if waitErr == nil {
		waitErr = cmd.Wait()
	}
	res.WallSeconds = time.Since(start).Seconds()
	if serverAfter, err := processCPU(r.gw.Pid()); err == nil && serverErr == nil {
		res.ServerCPUSeconds = (serverAfter - serverBefore + selfCPU() - selfBefore).Seconds()
	}
	if proxied {
		res.Proxy = &proxyCounts{Shaped: j.variant != variantS3ioUnshaped, Requests: r.proxy.Requests(), Gets: r.proxy.Gets(), MaxGetsInFlight: r.proxy.MaxInFlight()}
	}
	busyAfter, busyAfterErr := systemBusy()
	if cmd.ProcessState != nil {
		cpu, rss := usage(cmd.ProcessState)
		res.CPUSeconds, res.RusageMaxRSSKiB = cpu.Seconds(), rss
	}
	if busyErr == nil && busyAfterErr == nil && res.ServerCPUSeconds >= 0 {
		// /proc/stat counts in ticks: a few hundredths of noise are not foreign load.
		res.OtherCPUSeconds = max(0, (busyAfter-busyBefore).Seconds()-res.CPUSeconds-res.ServerCPUSeconds)
	}
	res.Child = parseChildResult(stdout.Bytes())
	if res.Child != nil {
		res.PeakRSSKiB = res.Child.VmHWMKiB
	}

	switch {
	case errors.Is(runCtx.Err(), context.DeadlineExceeded):
		res.Err = fmt.Sprintf("timed out after %v and was killed", r.opts.timeout)
	case ctx.Err() != nil:
		res.Err = "interrupted"
	case res.Child != nil && res.Child.Error != "":
		res.Err = res.Child.Error
	case waitErr != nil:
		res.Err = fmt.Sprintf("%v; log tail: %s", waitErr, tail(res.Log, 3))
	case res.Child == nil:
		res.Err = fmt.Sprintf("no result line on stdout; log tail: %s", tail(res.Log, 3))
	}
	return res
}

// parseChildResult finds the result line in a child's stdout.
func parseChildResult(stdout []byte) *childResult {
	sc := bufio.NewScanner(bytes.NewReader(stdout))
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var res *childResult
	for sc.Scan() {
		if rest, ok := bytes.CutPrefix(sc.Bytes(), []byte(resultMarker)); ok {
			var c childResult
			if json.Unmarshal(rest, &c) == nil {
				res = &c
			}
		}
	}
	return res
}

// tail returns the last n non-empty lines of a log, joined, for a failure message.
func tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return "(no log)"
	}
	var lines []string
	for _, l := range strings.Split(string(data), "\n") {
		if strings.TrimSpace(l) != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strconv.Quote(strings.Join(lines, " | "))
}
