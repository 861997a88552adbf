// Package flinkcluster runs a Flink session cluster for tests: a JobManager and
// TaskManagers, each a separate JVM started the way Flink's own scripts start them, from
// the jars integration/runners/flink-cluster/pom.xml resolves and the settings in
// deploy/flink/flink-conf.yaml (only ports and directories are overridden). Beam's Flink
// job server submits to it with --flink-master=Cluster.Master().
//
// TaskManagers can be killed and started again, for failure drills; every process is
// stopped when the test ends, and their logs are printed if it failed.
package flinkcluster

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// Options shape a cluster; the zero value is the suite's: two TaskManagers.
type Options struct {
	// TaskManagers is how many TaskManagers start; 2 if zero.
	TaskManagers int
	// Conf overrides or adds settings of deploy/flink/flink-conf.yaml.
	Conf map[string]string
	// TaskManagerEnv is added to each TaskManager's environment (and so to the Go workers
	// it starts), after TMPDIR, which is the TaskManager's own directory.
	TaskManagerEnv []string
}

// Cluster is a running session cluster.
type Cluster struct {
	// Dir holds the cluster's configuration, logs, checkpoints and each TaskManager's
	// temporary directory.
	Dir string
	// RESTPort is the JobManager's REST (and web UI) port.
	RESTPort int

	t         testing.TB
	classpath string
	confDir   string
	opts      Options
	tmJVM     []string
	tmDynamic []string

	mu  sync.Mutex
	jm  *process
	tms []*process
}

// process is one JVM of the cluster.
type process struct {
	name   string
	cmd    *exec.Cmd
	log    string // Flink's log file (log4j)
	out    string // the JVM's stdout and stderr, with what its Go workers print there
	tmpDir string // TaskManagers: TMPDIR, where their Go workers' directories go
	exited chan struct{}
	// ended is set before the test kills or stops the process: an exit without it is a
	// crash, which Lost reports.
	ended atomic.Bool
}

// RepoRoot is the repository's root directory.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// ClasspathFile is where .ci/run writes the cluster's resolved classpath.
func ClasspathFile() string {
	return filepath.Join(RepoRoot(), ".cache", "flink-cluster", "classpath.txt")
}

// Start starts a JobManager and opts.TaskManagers TaskManagers and waits (bounded) until
// every TaskManager has registered. It fails the test if a JVM cannot start.
func Start(t testing.TB, opts Options) *Cluster {
	t.Helper()
	cp, err := os.ReadFile(ClasspathFile())
	if err != nil {
		t.Fatalf("the Flink cluster's classpath is not resolved (%v): mvn -q -B -f integration/runners/flink-cluster/pom.xml dependency:build-classpath -Dmdep.outputFile=$PWD/.cache/flink-cluster/classpath.txt", err)
	}
	if opts.TaskManagers == 0 {
		opts.TaskManagers = 2
	}
	c := &Cluster{t: t, classpath: strings.TrimSpace(string(cp)), opts: opts}
	c.Dir = t.TempDir()
	c.confDir = filepath.Join(c.Dir, "conf")
	// The ports are free when picked, but another process (a server of a test running
	// beside this one) can take one before the JobManager binds it: a JobManager that exits
	// failing to bind is started again on other ports.
	var jmJVM, jmDynamic []string
	for attempt := 1; ; attempt++ {
		ports := freePorts(t, 3)
		c.RESTPort = ports[0]
		conf := map[string]string{
			"jobmanager.rpc.address":  "localhost",
			"jobmanager.rpc.port":     fmt.Sprint(ports[1]),
			"jobmanager.bind-host":    "127.0.0.1",
			"rest.address":            "localhost",
			"rest.bind-address":       "127.0.0.1",
			"rest.port":               fmt.Sprint(c.RESTPort),
			"blob.server.port":        fmt.Sprint(ports[2]),
			"taskmanager.bind-host":   "127.0.0.1",
			"taskmanager.host":        "127.0.0.1",
			"state.checkpoints.dir":   "file://" + filepath.Join(c.Dir, "checkpoints"),
			"io.tmp.dirs":             filepath.Join(c.Dir, "io"),
			"web.upload.dir":          filepath.Join(c.Dir, "upload"),
			"jobmanager.web.tmpdir":   filepath.Join(c.Dir, "web"),
			"taskmanager.runtime.tmp": filepath.Join(c.Dir, "io"),
		}
		for k, v := range opts.Conf {
			conf[k] = v
		}
		if err := writeConf(c.confDir, conf); err != nil {
			t.Fatal(err)
		}
		if attempt == 1 {
			jmJVM, jmDynamic = c.resourceParams("GET_JM_RESOURCE_PARAMS")
			c.tmJVM, c.tmDynamic = c.resourceParams("GET_TM_RESOURCE_PARAMS")
			// The JVM options the configuration adds, after the memory options, as Flink's
			// scripts add them (config.sh, jobmanager.sh, taskmanager.sh).
			settings, err := readConf(c.confDir)
			if err != nil {
				t.Fatal(err)
			}
			all := strings.Fields(settings["env.java.opts.all"])
			jmJVM = slices.Concat(jmJVM, all, strings.Fields(settings["env.java.opts.jobmanager"]))
			c.tmJVM = slices.Concat(c.tmJVM, all, strings.Fields(settings["env.java.opts.taskmanager"]))
			t.Cleanup(c.stop)
		}
		c.jm = c.launch("jobmanager", jmJVM, "org.apache.flink.runtime.entrypoint.StandaloneSessionClusterEntrypoint", jmDynamic, "")
		if !c.jmBindFailed(time.Minute) {
			break
		}
		if attempt == 3 {
			t.Fatalf("the JobManager could not bind its ports in %d attempts:\n%s", attempt, c.logs(4000))
		}
		t.Logf("the JobManager's ports were taken before it bound them (attempt %d); starting it on others", attempt)
	}
	for i := 0; i < opts.TaskManagers; i++ {
		c.tms = append(c.tms, nil)
		c.StartTaskManager(i)
	}
	c.WaitTaskManagers(opts.TaskManagers, 2*time.Minute)
	t.Logf("Flink session cluster: JobManager and %d TaskManagers, REST on %d, in %s", opts.TaskManagers, c.RESTPort, c.Dir)
	return c
}

// jmBindFailed waits until the JobManager's REST endpoint answers, it exits, or within
// passes, and reports whether it exited because a port was taken.
func (c *Cluster) jmBindFailed(within time.Duration) bool {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		select {
		case <-c.jm.exited:
			return strings.Contains(c.jm.text(), "java.net.BindException")
		default:
		}
		var o struct{}
		if err := c.getJSON("/overview", &o); err == nil {
			return false
		}
		time.Sleep(200 * time.Millisecond)
	}
	return false
}

// Master is the address Beam's Flink job server takes as --flink-master.
func (c *Cluster) Master() string { return fmt.Sprintf("localhost:%d", c.RESTPort) }

// StartTaskManager starts TaskManager i (again, after KillTaskManager).
func (c *Cluster) StartTaskManager(i int) {
	c.t.Helper()
	tmp := filepath.Join(c.Dir, fmt.Sprintf("tm%d-tmp", i))
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		c.t.Fatal(err)
	}
	// A fixed resource id names the TaskManager in the REST API (/taskmanagers/taskmanager0).
	dynamic := append([]string{"-D", fmt.Sprintf("taskmanager.resource-id=taskmanager%d", i)}, c.tmDynamic...)
	p := c.launch(fmt.Sprintf("taskmanager%d", i), c.tmJVM, "org.apache.flink.runtime.taskexecutor.TaskManagerRunner", dynamic, tmp)
	c.mu.Lock()
	c.tms[i] = p
	c.mu.Unlock()
}

// KillTaskManager kills TaskManager i with SIGKILL, as a crashed machine would.
func (c *Cluster) KillTaskManager(i int) {
	c.mu.Lock()
	p := c.tms[i]
	c.mu.Unlock()
	p.ended.Store(true)
	p.cmd.Process.Kill()
	<-p.exited
}

// StopTaskManager stops TaskManager i with SIGTERM, as an orderly shutdown (a pod's
// termination) does, and waits until it has exited.
func (c *Cluster) StopTaskManager(i int) {
	c.mu.Lock()
	p := c.tms[i]
	c.mu.Unlock()
	p.ended.Store(true)
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(time.Minute):
		p.cmd.Process.Kill()
		<-p.exited
		c.t.Errorf("%s did not stop within a minute of SIGTERM; killed", p.name)
	}
}

// TaskManagerPID is TaskManager i's process id.
func (c *Cluster) TaskManagerPID(i int) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.tms[i].cmd.Process.Pid
}

// TaskManagerTmp is TaskManager i's TMPDIR, where its Go workers' directories go.
func (c *Cluster) TaskManagerTmp(i int) string {
	return filepath.Join(c.Dir, fmt.Sprintf("tm%d-tmp", i))
}

// TaskManagerLog is the text of TaskManager i's log file and its stdout and stderr.
func (c *Cluster) TaskManagerLog(i int) string {
	c.mu.Lock()
	p := c.tms[i]
	c.mu.Unlock()
	return p.text()
}

func (p *process) text() string {
	a, _ := os.ReadFile(p.log)
	b, _ := os.ReadFile(p.out)
	return string(a) + string(b)
}

// WaitTaskManagers waits until n TaskManagers are registered with the JobManager.
func (c *Cluster) WaitTaskManagers(n int, within time.Duration) {
	c.t.Helper()
	deadline := time.Now().Add(within)
	for {
		var o struct {
			TaskManagers int `json:"taskmanagers"`
		}
		if err := c.getJSON("/overview", &o); err == nil && o.TaskManagers == n {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("%d TaskManagers not registered after %v:\n%s", n, within, c.logs(4000))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// GetJSON decodes the JobManager's REST answer to path (such as /jobs/overview) into out.
func (c *Cluster) GetJSON(path string, out any) error { return c.getJSON(path, out) }

func (c *Cluster) getJSON(path string, out any) error {
	cl := http.Client{Timeout: 10 * time.Second}
	resp, err := cl.Get(fmt.Sprintf("http://127.0.0.1:%d%s", c.RESTPort, path))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// resourceParams runs Flink's BashJavaUtils, as its start scripts do, for the JVM options
// and the derived memory settings a JobManager or TaskManager needs.
func (c *Cluster) resourceParams(command string) (jvm, dynamic []string) {
	c.t.Helper()
	out, err := exec.Command(javaBin(), "-cp", c.classpath, "org.apache.flink.runtime.util.bash.BashJavaUtils", command, "-c", c.confDir).CombinedOutput()
	if err != nil {
		c.t.Fatalf("BashJavaUtils %s: %v\n%s", command, err, out)
	}
	var results []string
	for _, line := range strings.Split(string(out), "\n") {
		if r, ok := strings.CutPrefix(line, "BASH_JAVA_UTILS_EXEC_RESULT:"); ok {
			results = append(results, r)
		}
	}
	if len(results) != 2 {
		c.t.Fatalf("BashJavaUtils %s gave %d results, want 2:\n%s", command, len(results), out)
	}
	return strings.Fields(results[0]), strings.Fields(results[1])
}

func (c *Cluster) launch(name string, jvm []string, class string, dynamic []string, tmp string) *process {
	c.t.Helper()
	logDir := filepath.Join(c.Dir, "log")
	os.MkdirAll(logDir, 0o755)
	p := &process{name: name, log: filepath.Join(logDir, name+".log"), out: filepath.Join(logDir, name+".out"),
		tmpDir: tmp, exited: make(chan struct{})}
	args := append([]string{}, jvm...)
	args = append(args, "-Dlog.file="+p.log, "-Dlog4j.configurationFile=file:"+filepath.Join(c.confDir, "log4j.properties"),
		"-cp", c.classpath, class, "--configDir", c.confDir)
	args = append(args, dynamic...)
	p.cmd = exec.Command(javaBin(), args...)
	out, err := os.OpenFile(p.out, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		c.t.Fatal(err)
	}
	p.cmd.Stdout, p.cmd.Stderr = out, out
	p.cmd.Env = os.Environ()
	if tmp != "" {
		p.cmd.Env = append(p.cmd.Env, "TMPDIR="+tmp)
		p.cmd.Env = append(p.cmd.Env, c.opts.TaskManagerEnv...)
	}
	// The JVM dies with the test process, even one killed by a timeout.
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		c.t.Fatalf("start %s: %v", name, err)
	}
	go func() { p.cmd.Wait(); out.Close(); close(p.exited) }()
	return p
}

func (c *Cluster) stop() {
	c.mu.Lock()
	all := append([]*process{c.jm}, c.tms...)
	c.mu.Unlock()
	lost := c.Lost()
	for _, p := range all {
		if p != nil {
			p.ended.Store(true)
			p.cmd.Process.Kill()
			<-p.exited
		}
	}
	if len(lost) > 0 && !c.t.Failed() {
		c.t.Errorf("the cluster lost processes the test did not stop:\n%s", strings.Join(lost, "\n"))
	}
	if c.t.Failed() {
		c.t.Logf("Flink cluster logs:\n%s", c.logs(6000))
		if keep := os.Getenv("FLINKCLUSTER_KEEP_LOGS"); keep != "" {
			// The whole logs, for a failure the tails do not explain.
			exec.Command("cp", "-r", filepath.Join(c.Dir, "log"), keep).Run()
		}
	}
}

// Lost describes each process of the cluster that exited though the test neither killed
// nor stopped it: its name, exit status and the lines of its log that say why (Flink's
// fatal-error and uncaught-exception lines with the exception under each), which a log's
// tail can miss when a thread dump follows them.
func (c *Cluster) Lost() []string {
	c.mu.Lock()
	all := append([]*process{c.jm}, c.tms...)
	c.mu.Unlock()
	var lost []string
	for _, p := range all {
		if p == nil || p.ended.Load() {
			continue
		}
		select {
		case <-p.exited:
		default:
			continue
		}
		lost = append(lost, fmt.Sprintf("%s exited (%v) unasked; its log says why:\n%s", p.name, p.cmd.ProcessState, p.why()))
	}
	return lost
}

// fatal matches the lines with which Flink explains a process's end.
var fatal = regexp.MustCompile(`FATAL|Fatal error|[Uu]ncaught exception|Stopping the process|did not exit gracefully|OutOfMemoryError|Terminating the JVM|Shutting TaskManager down|exit code`)

// why is each line of p's log that matches fatal, with the 8 lines after it.
func (p *process) why() string {
	lines := strings.Split(p.text(), "\n")
	var b strings.Builder
	for i := 0; i < len(lines); i++ {
		if !fatal.MatchString(lines[i]) {
			continue
		}
		end := min(i+9, len(lines))
		for _, l := range lines[i:end] {
			fmt.Fprintf(&b, "    %s\n", l)
		}
		i = end - 1
	}
	if b.Len() == 0 {
		return "    (no line of its log explains it)\n"
	}
	return b.String()
}

// logs is the tail of every process's log, for a failed test.
func (c *Cluster) logs(n int) string {
	c.mu.Lock()
	all := append([]*process{c.jm}, c.tms...)
	c.mu.Unlock()
	var b bytes.Buffer
	for _, p := range all {
		if p == nil {
			continue
		}
		s := p.text()
		if len(s) > n {
			s = "…" + s[len(s)-n:]
		}
		fmt.Fprintf(&b, "== %s\n", p.name)
		if why := p.why(); !strings.HasPrefix(why, "    (no line") {
			fmt.Fprintf(&b, "(its fatal lines)\n%s(its tail)\n", why)
		}
		fmt.Fprintf(&b, "%s\n", s)
	}
	return b.String()
}

// readConf reads the settings of the flink-conf.yaml in dir (one "key: value" a line, as
// Flink's scripts read it).
func readConf(dir string) (map[string]string, error) {
	data, err := os.ReadFile(filepath.Join(dir, "flink-conf.yaml"))
	if err != nil {
		return nil, err
	}
	conf := map[string]string{}
	for _, line := range strings.Split(string(data), "\n") {
		key, value, ok := strings.Cut(line, ":")
		if ok && !strings.HasPrefix(strings.TrimSpace(line), "#") {
			conf[strings.TrimSpace(key)] = strings.TrimSpace(value)
		}
	}
	return conf, nil
}

// writeConf writes flink-conf.yaml (deploy/flink/flink-conf.yaml with conf over it) and a
// log4j configuration writing each process's log file.
func writeConf(dir string, conf map[string]string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	base, err := os.ReadFile(filepath.Join(RepoRoot(), "deploy", "flink", "flink-conf.yaml"))
	if err != nil {
		return err
	}
	var b strings.Builder
	for _, line := range strings.Split(string(base), "\n") {
		key, _, ok := strings.Cut(line, ":")
		if _, over := conf[strings.TrimSpace(key)]; ok && !strings.HasPrefix(line, "#") && over {
			continue
		}
		b.WriteString(line + "\n")
	}
	for k, v := range conf {
		fmt.Fprintf(&b, "%s: %s\n", k, v)
	}
	if err := os.WriteFile(filepath.Join(dir, "flink-conf.yaml"), []byte(b.String()), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "log4j.properties"), []byte(log4j), 0o644)
}

const log4j = `rootLogger.level = INFO
rootLogger.appenderRef.file.ref = MainAppender
appender.main.name = MainAppender
appender.main.type = File
appender.main.append = true
appender.main.fileName = ${sys:log.file}
appender.main.layout.type = PatternLayout
appender.main.layout.pattern = %d{HH:mm:ss,SSS} %-5p %c{1} - %m%n
`

func javaBin() string {
	if j, err := exec.LookPath("java"); err == nil {
		return j
	}
	return "java"
}

// freePorts returns n distinct free loopback ports.
func freePorts(t testing.TB, n int) []int {
	t.Helper()
	var ls []net.Listener
	var ports []int
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	for _, l := range ls {
		l.Close()
	}
	return ports
}
