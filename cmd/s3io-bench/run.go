package main

import (
	"cmp"
	"context"
	"debug/buildinfo"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spate-io/beam-s3/internal/netshape"
	"github.com/spate-io/beam-s3/internal/versitygw"
)

// benchRun is one invocation: what it runs against, and everything the report needs.
type benchRun struct {
	opts      *options
	started   time.Time
	bucket    string
	data      map[string]*prefixData // what each prefix holds
	generated []string               // prefixes generated (rather than reused) in this invocation
	genTime   time.Duration
	runsTime  time.Duration
	results   []runResult
	repeated  int      // runs discarded and repeated because of foreign load
	notes     []string // things done to the machine, such as the hosts entry
	gwVersion string
	loadAvg   string

	exe    string
	gw     *versitygw.Process
	proxy  *netshape.Proxy // nil without --shape
	logDir string
}

func bench(ctx context.Context, o *options) error {
	b := &benchRun{opts: o, started: time.Now(), bucket: bucketName(o.size, o.objectSize)}
	defer b.close()
	if err := b.setup(ctx); err != nil {
		return err
	}
	jobs := o.jobs()
	if f := strings.Fields(readFile("/proc/loadavg")); len(f) >= 3 {
		b.loadAvg = strings.Join(f[:3], " ")
	}
	if o.warmup && len(jobs) > 0 && ctx.Err() == nil {
		// The first run after the server started, whichever it is, would otherwise pay for
		// the server's first requests (its heap growing, its caches) and the proxy's first
		// connections: 10-30 % slower than the same job later in the run.
		w := jobs[0]
		w.round = 0
		fmt.Fprintf(os.Stderr, "[warm-up] %s %s, not measured\n", w.prefix, w.variant)
		note := fmt.Sprintf("before the measured runs, %s on %s/ ran once, unmeasured (--warmup)", w.variant, w.prefix)
		if res := b.run(ctx, w); res.err != "" {
			note += "; it failed: " + res.err // its measured runs report it as theirs
		}
		b.notes = append(b.notes, note)
	}
	start := time.Now()
	for i, j := range jobs {
		if ctx.Err() != nil {
			break
		}
		progress := fmt.Sprintf("[%3d/%d] round %d %-6s %-6s", i+1, len(jobs), j.round, j.prefix, j.variant)
		res := b.runRetrying(ctx, j, progress)
		b.results = append(b.results, res)
		c := &cell{prefix: j.prefix, variant: j.variant, want: b.want(j.prefix)}
		c.add(res)
		fmt.Fprintf(os.Stderr, "%s %s", progress, row(b.throughputRow(c, &cell{}, &cell{})...))
		select {
		case <-b.gw.Exited():
			return fmt.Errorf("versitygw exited during the runs:\n%s", b.gw.Logs())
		default:
		}
	}
	b.runsTime = time.Since(start)
	// An interrupted benchmark still reports the runs it finished: they took long enough.
	err := ctx.Err()
	if err != nil {
		err = fmt.Errorf("interrupted after %d of %d runs: %w", len(b.results), len(jobs), err)
		b.notes = append(b.notes, fmt.Sprintf("**%v**: the medians cover the finished runs only", err))
	}
	fmt.Print(b.report())
	return err
}

// setup starts the server, makes sure it holds the dataset, and starts the shaping proxy.
func (b *benchRun) setup(ctx context.Context) error {
	o := b.opts
	var err error
	if b.exe, err = os.Executable(); err != nil {
		return fmt.Errorf("find this program to re-execute it for each run: %w", err)
	}
	bin, err := versitygw.FindBinary()
	if err != nil {
		return err
	}
	if bi, err := buildinfo.ReadFile(bin); err == nil {
		b.gwVersion = bi.Main.Version // a `go install pkg@version` build answers --version with "git" only
	}
	if o.runsTextio() {
		b.ensureHostsEntry(b.bucket + "." + virtualDomain)
	}
	// --quiet: the server would otherwise log every request, on the cores the runs use.
	if b.gw, err = versitygw.Launch(bin, filepath.Join(o.dataDir, "gw"), 0, "--virtual-domain", virtualDomain, "--quiet"); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "versitygw %s serving %s on %s (pid %d)\n", b.gwVersion, b.gw.Dir, b.gw.URL, b.gw.Pid())
	if err := b.prepareData(ctx); err != nil {
		return err
	}
	if o.shape {
		// In this process: its CPU time is counted with the server's (see measure).
		if b.proxy, err = netshape.New(b.gw.URL, netshape.Shape{}); err != nil {
			return fmt.Errorf("shaping proxy: %w", err)
		}
		fmt.Fprintf(os.Stderr, "shaping proxy on %s: %v before each request, %.0f MB/s per response\n",
			b.proxy.URL, netshape.DefaultLatency, netshape.DefaultBytesPerSecond/1e6)
	}
	for _, d := range []string{filepath.Join(o.dataDir, "logs"), cmp.Or(o.cpuprofileDir, o.dataDir)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	// A log directory per invocation, unique even for two started in the same second.
	b.logDir, err = os.MkdirTemp(filepath.Join(o.dataDir, "logs"), b.started.Format("20060102-150405-*"))
	return err
}

func (b *benchRun) close() {
	if b.proxy != nil {
		b.proxy.Close()
	}
	if b.gw != nil {
		b.gw.Close()
	}
}

// ensureHostsEntry makes host resolve to 127.0.0.1 through /etc/hosts: Beam's S3 filesystem
// cannot be told to use path-style addressing, so it reaches the bucket as BUCKET.DOMAIN:PORT,
// a name nothing else resolves. A failure becomes a note: textio's runs will fail and say
// why, the other variants still run.
func (b *benchRun) ensureHostsEntry(host string) {
	const hosts = "/etc/hosts"
	data := readFile(hosts)
	for _, line := range strings.Split(data, "\n") {
		line, _, _ = strings.Cut(line, "#")
		if f := strings.Fields(line); len(f) > 1 && f[0] == "127.0.0.1" && slices.ContainsFunc(f[1:], func(n string) bool { return strings.EqualFold(n, host) }) {
			return
		}
	}
	msg := fmt.Sprintf("added \"127.0.0.1 %s\" to %s (Beam's S3 filesystem addresses the bucket virtual-hosted style)", host, hosts)
	if !b.opts.addHostsEntry {
		msg = fmt.Sprintf("textio: %s has no line \"127.0.0.1 %s\" and --add-hosts-entry=false: textio cannot reach the bucket", hosts, host)
	} else if f, err := os.OpenFile(hosts, os.O_APPEND|os.O_WRONLY, 0); err != nil {
		msg = fmt.Sprintf("textio: add \"127.0.0.1 %s\" to %s (run as root, add it yourself, or leave textio out): %v", host, hosts, err)
	} else {
		sep := ""
		if data != "" && !strings.HasSuffix(data, "\n") {
			sep = "\n"
		}
		_, err = fmt.Fprintf(f, "%s127.0.0.1 %s # added by s3io-bench for Beam's virtual-hosted S3 requests\n", sep, host)
		if err = errors.Join(err, f.Close()); err != nil {
			msg = fmt.Sprintf("textio: append to %s: %v", hosts, err)
		}
	}
	fmt.Fprintln(os.Stderr, msg)
	b.notes = append(b.notes, msg)
}

// runResult is one child run as the parent measured it. A failed run has err set and is left
// out of the medians.
type runResult struct {
	job
	// wallSeconds runs from starting the child to its exit: process start-up, pipeline
	// construction and prism's start included, as a user running the job would wait.
	wallSeconds float64
	cpuSeconds  float64 // the child's user + system time, from rusage
	// serverCPU is the CPU time of the S3 side during the run: the server's, plus this
	// process's, which runs the shaping proxy. otherCPU is every other process's: well above
	// zero, the run competed with foreign load. Both are negative when unknown.
	serverCPU, otherCPU float64
	inFlight            int // the most object GETs the shaping proxy served at once; -1 for a direct run
	child               childResult
	err, log            string
}

func (r *runResult) ok() bool { return r.err == "" }

// wall and cpu are the seconds the report gives for a successful run: the child process's,
// but beam.Run's alone for the floor, whose generation of records is not part of it.
func (r *runResult) wall() float64 {
	if r.variant == variantFloor {
		return r.child.PipelineSeconds
	}
	return r.wallSeconds
}

func (r *runResult) cpu() float64 {
	if r.variant == variantFloor {
		return r.child.PipelineCPUSeconds
	}
	return r.cpuSeconds
}

// loaded reports whether other processes took more than a fifth of a core during a
// successful run (a fifth leaves room for the system's own background work; below 0.1 s the
// figure is within the 10 ms ticks of /proc/stat of zero): its numbers are not the machine's.
func (r *runResult) loaded() bool {
	return r.ok() && r.otherCPU > max(0.2*r.wallSeconds, 0.1)
}

// runRetrying runs j, and again up to --retry-loaded times while foreign load spoils it.
func (b *benchRun) runRetrying(ctx context.Context, j job, progress string) runResult {
	for attempt := 0; ; attempt++ {
		res := b.run(ctx, j)
		if !res.loaded() || attempt >= b.opts.retryLoaded || ctx.Err() != nil {
			return res
		}
		b.repeated++
		fmt.Fprintf(os.Stderr, "%s other processes took %.2f CPU s in %.2f s: running it again\n", progress, res.otherCPU, res.wallSeconds)
	}
}

// run executes one job in a fresh child process and measures it. Every failure (a child
// error, a crash, a timeout, no result) becomes runResult.err.
func (b *benchRun) run(ctx context.Context, j job) runResult {
	name := filepath.Join(b.logDir, fmt.Sprintf("r%d-%s-%s", j.round, j.prefix, j.variant))
	res := runResult{job: j, serverCPU: -1, otherCPU: -1, inFlight: -1, log: name + ".log"}
	// With --shape, every read but s3io-direct's and loop2-direct's (and the floor's and the
	// memory check's) goes through the proxy, shaped but for s3io-unshaped.
	endpoint := b.gw.URL
	proxied := b.proxy != nil && j.variant != variantS3ioDirect && j.variant != variantLoop2Direct && j.variant != variantFloor && j.prefix != prefixBig && j.prefix != prefixEmpty
	if proxied {
		endpoint = b.proxy.URL
		b.proxy.SetShaping(j.variant != variantS3ioUnshaped)
		// The last run's handlers end with its child's connections: counting from zero.
		idleCtx, cancel := context.WithTimeout(ctx, time.Minute)
		err := b.proxy.WaitIdle(idleCtx)
		cancel()
		if err != nil {
			res.err = fmt.Sprintf("the shaping proxy still served the last run's GETs: %v", err)
			return res
		}
		b.proxy.Reset()
	}
	cj := childJob{Variant: j.variant, Bucket: b.bucket, Prefix: j.prefix, Endpoint: endpoint, Result: name + ".json",
		Size: b.opts.size, ObjectSize: b.opts.objectSize, ReadBufferBytes: b.opts.readBuffer, WorkerBufferBytes: b.opts.workerBuffer, SplitTargetBytes: b.opts.splitTarget}
	if b.opts.cpuprofileDir != "" {
		cj.CPUProfile = filepath.Join(b.opts.cpuprofileDir, filepath.Base(name)+".pprof")
	}
	args, _ := json.Marshal(cj)
	os.Remove(name + ".json") // a retry's child must not find its predecessor's result
	logFile, err := os.Create(res.log)
	if err != nil {
		res.err = fmt.Sprintf("create log: %v", err)
		return res
	}
	defer logFile.Close()
	runCtx, cancel := context.WithTimeout(ctx, childTimeout)
	defer cancel()
	cmd := exec.CommandContext(runCtx, b.exe, childCommand, string(args))
	cmd.Env, cmd.Stdout, cmd.Stderr, cmd.WaitDelay = childEnv(j.variant, b.gw.Port), logFile, logFile, 10*time.Second
	setParentDeathSignal(cmd)
	waitErr := b.measure(cmd, &res)
	if proxied {
		res.inFlight = b.proxy.MaxInFlight()
	}
	resultErr := json.Unmarshal([]byte(readFile(name+".json")), &res.child)
	switch {
	case errors.Is(runCtx.Err(), context.DeadlineExceeded):
		res.err = fmt.Sprintf("timed out after %v and was killed", childTimeout)
	case ctx.Err() != nil:
		res.err = "interrupted"
	case resultErr == nil && res.child.Error != "":
		res.err = res.child.Error
	case waitErr != nil || resultErr != nil:
		res.err = fmt.Sprintf("%v; no result: %v; log tail: %q", waitErr, resultErr, tail(res.log, 3))
	}
	return res
}

// measure runs cmd and records its wall time, its CPU time, and the CPU time the server
// (with this process) and every other process used meanwhile.
func (b *benchRun) measure(cmd *exec.Cmd, res *runResult) error {
	serverBefore, serverErr := processCPU(b.gw.Pid())
	selfBefore := selfCPU()
	busyBefore, busyErr := systemBusy()
	start := time.Now()
	err := cmd.Run()
	res.wallSeconds = time.Since(start).Seconds()
	if serverAfter, err := processCPU(b.gw.Pid()); err == nil && serverErr == nil {
		res.serverCPU = (serverAfter - serverBefore + selfCPU() - selfBefore).Seconds()
	}
	busyAfter, busyAfterErr := systemBusy()
	if cmd.ProcessState != nil {
		res.cpuSeconds = (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
	}
	if busyErr == nil && busyAfterErr == nil && res.serverCPU >= 0 {
		// /proc/stat counts in ticks: a few hundredths of noise are not foreign load.
		res.otherCPU = max(0, (busyAfter-busyBefore).Seconds()-res.cpuSeconds-res.serverCPU)
	}
	return err
}

// childEnv is the child's environment: this process's without any AWS_ variable of the
// caller's, plus the server's credentials, so nothing on the machine changes what a run does.
func childEnv(variant string, port int) []string {
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "AWS_") })
	env = append(env, "AWS_ACCESS_KEY_ID="+versitygw.AccessKey, "AWS_SECRET_ACCESS_KEY="+versitygw.SecretKey, "AWS_REGION=us-east-1",
		"AWS_CONFIG_FILE="+os.DevNull, "AWS_SHARED_CREDENTIALS_FILE="+os.DevNull, "AWS_EC2_METADATA_DISABLED=true")
	if variant == variantTextio {
		env = append(env, textioEnv(port)...)
	}
	return env
}

// textioEnv points Beam's S3 filesystem, which takes no options, at the server: the SDK puts
// the bucket in front of AWS_ENDPOINT_URL_S3's host (virtual-hosted addressing). Response
// checksum validation is turned off as the loop and s3io turn it off in code.
func textioEnv(port int) []string {
	return []string{fmt.Sprintf("AWS_ENDPOINT_URL_S3=http://%s:%d", virtualDomain, port), "AWS_RESPONSE_CHECKSUM_VALIDATION=when_required"}
}

// tail returns the last n non-empty lines of a log, joined, for a failure message.
func tail(path string, n int) string {
	lines := slices.DeleteFunc(strings.Split(readFile(path), "\n"), func(l string) bool { return strings.TrimSpace(l) == "" })
	return strings.Join(lines[max(0, len(lines)-n):], " | ")
}

// readFile is a file's content, or "" when it cannot be read.
func readFile(path string) string {
	data, _ := os.ReadFile(path)
	return string(data)
}
