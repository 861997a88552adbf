package runners

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/textio"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"

	"github.com/spate-io/beam-s3/internal/faultproxy"
	"github.com/spate-io/beam-s3/internal/flinkcluster"
	"github.com/spate-io/beam-s3/internal/jobservers"
	"github.com/spate-io/beam-s3/internal/s3test"
	"github.com/spate-io/beam-s3/internal/versitygw"
	"github.com/spate-io/beam-s3/s3io"
)

// sessionCluster is a Flink session cluster as deployed: a JobManager and two
// TaskManagers in their own JVMs, Beam's job server submitting to it, and Go workers
// started by each TaskManager through cmd/s3io-boot (a PROCESS environment).
type sessionCluster struct {
	*flinkcluster.Cluster
	endpoint string // the job server
	boot     string // the s3io-boot binary
	// uncaughtSeen holds the uncaught-exception lines of the TaskManagers' logs already
	// shown.
	uncaughtSeen map[string]bool
}

func startSessionCluster(t *testing.T) *sessionCluster {
	t.Helper()
	if _, err := os.Stat(flinkcluster.ClasspathFile()); err != nil {
		jobservers.Unavailable(t, "Flink cluster classpath not resolved (%v): mvn -q -B -f integration/runners/flink-cluster/pom.xml dependency:build-classpath -Dmdep.outputFile=$PWD/.cache/flink-cluster/classpath.txt", err)
	}
	boot := filepath.Join(t.TempDir(), "s3io-boot")
	build := exec.Command("go", "build", "-o", boot, "github.com/spate-io/beam-s3/cmd/s3io-boot")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build s3io-boot: %v\n%s", err, out)
	}
	c := flinkcluster.Start(t, flinkcluster.Options{
		// The drills want a dead TaskManager noticed within seconds.
		Conf: map[string]string{"heartbeat.interval": "2000", "heartbeat.timeout": "8000",
			"restart-strategy.fixed-delay.delay": "2 s"},
	})
	return &sessionCluster{Cluster: c, endpoint: jobservers.Flink(t, c.Master()), boot: boot}
}

// withProcessWorkers runs submit with the job options set for the cluster: its job
// server, parallelism 2 and PROCESS Go workers started by s3io-boot, this test binary
// being the worker binary (ptest.Main makes it one; nothing is cross-compiled, and with
// -race the workers run with the race detector too).
func (c *sessionCluster) withProcessWorkers(t *testing.T, submit func()) {
	t.Helper()
	envCfg, _ := json.Marshal(map[string]any{"command": c.boot})
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	old := [4]string{*jobopts.Endpoint, *jobopts.EnvironmentType, *jobopts.EnvironmentConfig, *jobopts.WorkerBinary}
	oldPar := *jobopts.Parallelism
	*jobopts.Endpoint, *jobopts.EnvironmentType, *jobopts.EnvironmentConfig, *jobopts.WorkerBinary = c.endpoint, "PROCESS", string(envCfg), self
	*jobopts.Parallelism = 2
	defer func() {
		*jobopts.Endpoint, *jobopts.EnvironmentType, *jobopts.EnvironmentConfig, *jobopts.WorkerBinary = old[0], old[1], old[2], old[3]
		*jobopts.Parallelism = oldPar
	}()
	submit()
}

// submit runs p on the cluster and waits for it to end.
func (c *sessionCluster) submit(t *testing.T, p *beam.Pipeline, timeout time.Duration) (pr beam.PipelineResult, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	c.withProcessWorkers(t, func() { pr, err = beam.Run(ctx, "flink", p) })
	return pr, err
}

// waitRunning waits until the cluster's latest job runs and returns its id.
func (c *sessionCluster) waitRunning(t *testing.T, within time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		var jobs struct {
			Jobs []struct {
				JID   string `json:"jid"`
				State string `json:"state"`
			} `json:"jobs"`
		}
		if err := c.GetJSON("/jobs/overview", &jobs); err == nil {
			for _, j := range jobs.Jobs {
				if j.State == "RUNNING" {
					return j.JID
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no job running on the cluster after %v", within)
		}
		time.Sleep(time.Second)
	}
}

// stopWithDrain stops job jid as "flink stop --drain" does: its sources end, the watermark
// goes to the end of time, and a final savepoint is taken (under the cluster's directory).
func (c *sessionCluster) stopWithDrain(t *testing.T, jid string) {
	t.Helper()
	body := fmt.Sprintf(`{"drain": true, "targetDirectory": "file://%s"}`, filepath.Join(c.Dir, "savepoints"))
	resp, err := http.Post(fmt.Sprintf("http://127.0.0.1:%d/jobs/%s/stop", c.RESTPort, jid), "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatalf("stop job %s: %v", jid, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted && resp.StatusCode != http.StatusOK {
		t.Fatalf("stop job %s: %s", jid, resp.Status)
	}
}

// cancel cancels job jid.
func (c *sessionCluster) cancel(t *testing.T, jid string) {
	req, _ := http.NewRequest(http.MethodPatch, fmt.Sprintf("http://127.0.0.1:%d/jobs/%s?mode=cancel", c.RESTPort, jid), nil)
	if resp, err := http.DefaultClient.Do(req); err != nil {
		t.Errorf("cancel job %s: %v", jid, err)
	} else {
		resp.Body.Close()
	}
}

// heapAfterGC is TaskManager i's heap in use right after a full collection (jcmd GC.run),
// in bytes: what a leak raises, without the garbage that comes and goes.
func (c *sessionCluster) heapAfterGC(t *testing.T, i int) int64 {
	t.Helper()
	pid := fmt.Sprint(c.TaskManagerPID(i))
	if out, err := exec.Command("jcmd", pid, "GC.run").CombinedOutput(); err != nil {
		t.Fatalf("jcmd %s GC.run: %v\n%s", pid, err, out)
	}
	out, err := exec.Command("jcmd", pid, "GC.heap_info").CombinedOutput()
	if err != nil {
		t.Fatalf("jcmd %s GC.heap_info: %v\n%s", pid, err, out)
	}
	// " garbage-first heap   total 958464K, used 101376K [...]"
	m := regexp.MustCompile(`heap\s+total \d+K, used (\d+)K`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("no heap use in jcmd's GC.heap_info:\n%s", out)
	}
	kb, _ := strconv.ParseInt(string(m[1]), 10, 64)
	return kb << 10
}

// heapsAfterGC is heapAfterGC of each TaskManager.
func (c *sessionCluster) heapsAfterGC(t *testing.T) []int64 {
	return []int64{c.heapAfterGC(t, 0), c.heapAfterGC(t, 1)}
}

// checkpointsRefusedWhileDeploying counts the checkpoints the JobManager refused to
// trigger because some task was not running yet.
func (c *sessionCluster) checkpointsRefusedWhileDeploying() int {
	b, _ := os.ReadFile(filepath.Join(c.Dir, "log", "jobmanager.log"))
	return strings.Count(string(b), "Failure reason: Not all required tasks are currently running")
}

// checkpointFailures returns the JobManager's lines on failed checkpoints, each with the
// line after it (the exception that says why).
func (c *sessionCluster) checkpointFailures() []string {
	b, _ := os.ReadFile(filepath.Join(c.Dir, "log", "jobmanager.log"))
	lines := strings.Split(string(b), "\n")
	var out []string
	for i, l := range lines {
		if strings.Contains(l, "CheckpointFailureManager") || strings.Contains(l, "Decline checkpoint") {
			out = append(out, l)
			if i+1 < len(lines) {
				out = append(out, "  "+lines[i+1])
			}
		}
	}
	return out
}

// checkpoints is a job's checkpoint statistics.
type checkpoints struct {
	Counts struct {
		Restored   int `json:"restored"`
		Total      int `json:"total"`
		InProgress int `json:"in_progress"`
		Completed  int `json:"completed"`
		Failed     int `json:"failed"`
	} `json:"counts"`
	Latest struct {
		Completed *struct {
			Trigger int64 `json:"trigger_timestamp"`
		} `json:"completed"`
		Restored *struct {
			Restored int64 `json:"restore_timestamp"`
		} `json:"restored"`
	} `json:"latest"`
}

func (c *sessionCluster) checkpointStats(t *testing.T, jid string) checkpoints {
	t.Helper()
	var cp checkpoints
	if err := c.GetJSON("/jobs/"+jid+"/checkpoints", &cp); err != nil {
		t.Fatalf("checkpoints of job %s: %v", jid, err)
	}
	return cp
}

// lastCompletedCheckpoint is the trigger time (Unix ms) of the job's latest completed
// checkpoint, 0 if none.
func (c *sessionCluster) lastCompletedCheckpoint(t *testing.T, jid string) int64 {
	if cp := c.checkpointStats(t, jid); cp.Latest.Completed != nil {
		return cp.Latest.Completed.Trigger
	}
	return 0
}

// recoveredAt is when the job was restored from a checkpoint after since (or now).
func (c *sessionCluster) recoveredAt(t *testing.T, jid string, since time.Time) time.Time {
	if cp := c.checkpointStats(t, jid); cp.Latest.Restored != nil && cp.Latest.Restored.Restored >= since.UnixMilli() {
		return time.UnixMilli(cp.Latest.Restored.Restored)
	}
	return time.Now()
}

// workers lists the Go worker processes of TaskManager i: processes whose executable lies
// in that TaskManager's temporary directory, where s3io-boot stages them.
func (c *sessionCluster) workers(i int) []int {
	tmp := c.TaskManagerTmp(i)
	var pids []int
	procs, _ := filepath.Glob("/proc/[0-9]*/exe")
	for _, exe := range procs {
		target, err := os.Readlink(exe)
		if err != nil || !strings.HasPrefix(target, tmp+"/") {
			continue
		}
		var pid int
		fmt.Sscanf(exe, "/proc/%d/exe", &pid)
		pids = append(pids, pid)
	}
	return pids
}

// leftovers is what the TaskManagers' Go workers left: live worker processes and files in
// the TaskManagers' temporary directories.
func (c *sessionCluster) leftovers() []string {
	var left []string
	for i := 0; i < 2; i++ {
		for _, pid := range c.workers(i) {
			left = append(left, fmt.Sprintf("taskmanager%d: worker process %d", i, pid))
		}
		files, _ := filepath.Glob(filepath.Join(c.TaskManagerTmp(i), "*"))
		for _, f := range files {
			left = append(left, "file "+f)
		}
	}
	return left
}

// requireWhole fails the test if a process of the cluster ended though no test stopped
// it: a job's failure, or its end, must never take a TaskManager with it (every other
// job's tasks on it would fail too), and a drill on a cluster already short of one proves
// nothing.
func (c *sessionCluster) requireWhole(t *testing.T) {
	t.Helper()
	if lost := c.Lost(); len(lost) > 0 {
		t.Fatalf("the cluster lost a process:\n%s", strings.Join(lost, "\n"))
	}
	// Exceptions no thread handled are logged, not fatal (deploy/flink/flink-conf.yaml);
	// they are shown, to say which threads of Beam's runner throw them and when.
	for i := 0; i < 2; i++ {
		lines := strings.Split(c.TaskManagerLog(i), "\n")
		for j, l := range lines {
			if strings.Contains(l, "produced an uncaught exception") && !c.uncaughtSeen[l] {
				if c.uncaughtSeen == nil {
					c.uncaughtSeen = map[string]bool{}
				}
				c.uncaughtSeen[l] = true
				t.Logf("taskmanager%d logged an uncaught exception:\n%s", i, strings.Join(lines[j:min(j+4, len(lines))], "\n"))
			}
		}
	}
}

// waitClean waits (bounded) until the Go workers of finished jobs are gone, and requires
// the cluster whole.
func (c *sessionCluster) waitClean(t *testing.T) {
	t.Helper()
	defer c.requireWhole(t)
	deadline := time.Now().Add(time.Minute)
	for {
		left := c.leftovers()
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("a minute after the job ended, its Go workers left: %v", left)
			return
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// readVertexTaskManagers maps each TaskManager that ran a subtask of the job's read (the
// vertex whose name holds s3io's read) to how many subtasks it ran.
func (c *sessionCluster) readVertexTaskManagers(t *testing.T) map[string]int {
	t.Helper()
	jid := c.lastJob(t)
	var job struct {
		Vertices []struct {
			ID          string `json:"id"`
			Name        string `json:"name"`
			Parallelism int    `json:"parallelism"`
		} `json:"vertices"`
	}
	if err := c.GetJSON("/jobs/"+jid, &job); err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, v := range job.Vertices {
		if !strings.Contains(v.Name, "readFn") {
			continue
		}
		var tms struct {
			TaskManagers []struct {
				ID     string `json:"taskmanager-id"`
				Status struct {
					Finished int `json:"FINISHED"`
				} `json:"status-counts"`
			} `json:"taskmanagers"`
		}
		if err := c.GetJSON(fmt.Sprintf("/jobs/%s/vertices/%s/taskmanagers", jid, v.ID), &tms); err != nil {
			t.Fatal(err)
		}
		for _, tm := range tms.TaskManagers {
			got[tm.ID] += tm.Status.Finished
		}
		t.Logf("read vertex %.120q: parallelism %d, subtasks finished per TaskManager %v", v.Name, v.Parallelism, got)
		return got
	}
	names := []string{}
	for _, v := range job.Vertices {
		names = append(names, v.Name)
	}
	t.Fatalf("no vertex of s3io's read among %q", names)
	return nil
}

// failures lists the failures Flink recovered the cluster's latest job from (its
// exception history: one entry per failure that restarted tasks).
func (c *sessionCluster) failures(t *testing.T) []string {
	t.Helper()
	var ex struct {
		History struct {
			Entries []struct {
				Name string `json:"exceptionName"`
				Task string `json:"taskName"`
			} `json:"entries"`
		} `json:"exceptionHistory"`
	}
	if err := c.GetJSON("/jobs/"+c.lastJob(t)+"/exceptions", &ex); err != nil {
		t.Fatalf("the job's exceptions: %v", err)
	}
	var out []string
	for _, e := range ex.History.Entries {
		out = append(out, fmt.Sprintf("%s in %.80s", e.Name, e.Task))
	}
	return out
}

// lastJob is the id of the job submitted last.
func (c *sessionCluster) lastJob(t *testing.T) string {
	t.Helper()
	var jobs struct {
		Jobs []struct {
			JID   string `json:"jid"`
			State string `json:"state"`
			Start int64  `json:"start-time"`
		} `json:"jobs"`
	}
	if err := c.GetJSON("/jobs/overview", &jobs); err != nil || len(jobs.Jobs) == 0 {
		t.Fatalf("no job in the cluster's overview (%v)", err)
	}
	last := jobs.Jobs[0]
	for _, j := range jobs.Jobs {
		if j.Start > last.Start {
			last = j
		}
	}
	return last.JID
}

func TestFlinkSessionCluster(t *testing.T) {
	g := versitygw.Start(t)
	proxy := faultproxy.New(t, g.URL)
	c := startSessionCluster(t)
	want := seedMixedPrefix(t, g, "mixed")
	slices.Sort(want)
	cfg := s3io.Config{Bucket: "mixed", Prefix: "in/", Endpoint: proxy.URL, UsePathStyle: true,
		SplitTargetBytes: 64 << 10, InitialSplitBytes: 32 << 10, ProgressInterval: time.Second}

	read := func(t *testing.T) (string, *beam.Pipeline) {
		out := filepath.Join(t.TempDir(), "records.txt")
		p, s := beam.NewPipelineWithRoot()
		textio.Write(s, out, beam.ParDo(s, s3test.RecordString, s3io.Read(s, cfg)))
		return out, p
	}
	exact := func(t *testing.T, out string) {
		t.Helper()
		got := s3test.ReadLines(t, out+"*")
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Fatalf("the output is not the seeded multiset: %d records, want %d", len(got), len(want))
		}
	}

	t.Run("mixed prefix", func(t *testing.T) {
		proxy.Reset()
		// Each object's first GET pauses, so that both TaskManagers' subtasks are busy at once.
		proxy.Configure(func(p *faultproxy.Proxy) {
			p.Decide = func(key string, n int) faultproxy.Fault {
				if n == 1 {
					return faultproxy.Fault{StallAfter: 1, Stall: 200 * time.Millisecond}
				}
				return faultproxy.Fault{}
			}
		})
		defer proxy.Configure(func(p *faultproxy.Proxy) { p.Decide = nil })
		out, p := read(t)
		var maxWorkers [2]atomic.Int64
		stop := make(chan struct{})
		go func() {
			for {
				select {
				case <-stop:
					return
				case <-time.After(50 * time.Millisecond):
				}
				for i := range maxWorkers {
					if n := int64(len(c.workers(i))); n > maxWorkers[i].Load() {
						maxWorkers[i].Store(n)
					}
				}
			}
		}()
		pr, err := c.submit(t, p, 5*time.Minute)
		close(stop)
		if err != nil {
			t.Fatalf("pipeline failed: %v", err)
		}
		exact(t, out)
		t.Logf("job %q: %d records; counters %v; max GETs in flight %d", pr.JobID(), len(want),
			s3test.Counters(pr, s3io.MetricsNamespace), proxy.MaxInFlight())
		tms := c.readVertexTaskManagers(t)
		if len(tms) != 2 {
			t.Errorf("the read ran on %d TaskManager(s) (%v), want a subtask on each of the 2", len(tms), tms)
		}
		for i := range maxWorkers {
			if n := maxWorkers[i].Load(); n != 1 {
				t.Errorf("taskmanager%d ran at most %d Go worker process(es) at once, want 1", i, n)
			}
		}
		// The workers' progress lines reach their TaskManagers' logs, with the plan's
		// totals. A worker whose reads all fit in one interval has only its closing line,
		// which the end of the job can cut off (the worker is stopped with its environment
		// before its log is flushed), so one TaskManager's line is what this job can show.
		var progress []string
		for i := range maxWorkers {
			for _, l := range strings.Split(c.TaskManagerLog(i), "\n") {
				if strings.Contains(l, "s3io: worker progress") && strings.Contains(l, "plan: ") {
					progress = append(progress, fmt.Sprintf("taskmanager%d: %s", i, l))
				}
			}
		}
		if len(progress) == 0 {
			t.Errorf("no TaskManager's log has a progress line of its Go worker with the plan's totals")
		}
		for _, l := range progress {
			t.Log(l)
		}
		c.waitClean(t)
	})

	// drill reads the prefix, every GET slowed so that the read lasts, and runs fault once
	// the read is under way (at the sixth object GET); the job must restart and end with
	// exactly the seeded records, within the submit timeout.
	drill := func(t *testing.T, fault func(t *testing.T)) {
		proxy.Reset()
		var gets atomic.Int64
		var faulted atomic.Int64 // unix nanoseconds of the fault
		proxy.Configure(func(p *faultproxy.Proxy) {
			p.Before = func(key string, n int) {
				if gets.Add(1) == 6 {
					fault(t)
					faulted.Store(time.Now().UnixNano())
				}
			}
			p.Decide = func(key string, n int) faultproxy.Fault {
				return faultproxy.Fault{StallAfter: 1, Stall: 400 * time.Millisecond}
			}
		})
		defer proxy.Configure(func(p *faultproxy.Proxy) { p.Before, p.Decide = nil, nil })
		c.requireWhole(t)
		out, p := read(t)
		started := time.Now()
		pr, err := c.submit(t, p, 6*time.Minute)
		if err != nil {
			t.Fatalf("pipeline failed: %v", err)
		}
		if faulted.Load() == 0 {
			t.Fatalf("the job read %d objects GETs and ended before the fault", gets.Load())
		}
		exact(t, out)
		failed := c.failures(t)
		if len(failed) == 0 {
			t.Errorf("the job's exception history is empty: the fault did not fail any task")
		}
		t.Logf("job %q: exact output (%d records) after recovering from %q; %v from the fault to the end (%v in all); %d object GETs",
			pr.JobID(), len(want), failed, time.Since(time.Unix(0, faulted.Load())).Round(time.Millisecond), time.Since(started).Round(time.Millisecond), gets.Load())
	}

	t.Run("Go worker killed mid-read", func(t *testing.T) {
		drill(t, func(t *testing.T) {
			var pids []int
			for i := 0; i < 2; i++ {
				pids = append(pids, c.workers(i)...)
			}
			if len(pids) == 0 {
				t.Errorf("no Go worker process to kill")
				return
			}
			syscall.Kill(pids[0], syscall.SIGKILL)
			t.Logf("killed Go worker process %d (of %v)", pids[0], pids)
		})
		c.waitClean(t)
	})

	t.Run("TaskManager killed mid-read", func(t *testing.T) {
		drill(t, func(t *testing.T) {
			c.KillTaskManager(1)
			t.Logf("killed taskmanager1")
		})
		// The dead TaskManager's Go worker ended with its boot's parent, and its directory
		// went with it. The survivor may keep one idle worker of this job: a task cancelled
		// by the failover while its open() waited for the worker to start never releases
		// it (Flink calls close() only after open() returned; Beam's
		// FlinkExecutableStageFunction.open takes the environment before it waits). That
		// worker ends with its TaskManager, which is what a stop must show.
		time.Sleep(5 * time.Second)
		for i := 0; i < 2; i++ {
			if n := len(c.workers(i)); n > 1 {
				t.Errorf("taskmanager%d kept %d Go workers after the job: more than the one a failover can leak", i, n)
			} else if n == 1 {
				t.Logf("taskmanager%d kept the idle Go worker of a task cancelled while it started (Beam's leak); stopping it", i)
			}
		}
		c.StopTaskManager(0)
		c.waitClean(t)
		c.StartTaskManager(0)
		c.StartTaskManager(1)
		c.WaitTaskManagers(2, 2*time.Minute)
	})
}
