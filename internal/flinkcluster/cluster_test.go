package flinkcluster

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A TaskManager's end in Flink's own words, as its fatal-exit handler logs it: the lines
// that say why, then a thread dump long enough to push them out of a log's tail.
const fatalLog = `10:16:03,990 INFO  TaskExecutor - Un-registering task and sending final execution state FINISHED
10:16:04,101 ERROR FatalExitExceptionHandler - FATAL: Thread 'grpc-default-executor-3' produced an uncaught exception. Stopping the process...
java.lang.IllegalStateException: Trying to access closed classloader.
	at org.apache.flink.runtime.execution.librarycache.FlinkUserCodeClassLoaders$SafetyNetWrapperClassLoader.ensureInner(FlinkUserCodeClassLoaders.java:184)
10:16:04,102 ERROR FatalExitExceptionHandler - Thread dump:
"main" prio=5 Id=1 WAITING
	at java.base@17.0.15/jdk.internal.misc.Unsafe.park(Native Method)
	...
`

func TestWhyQuotesTheFatalLines(t *testing.T) {
	dir := t.TempDir()
	p := &process{log: filepath.Join(dir, "tm.log"), out: filepath.Join(dir, "tm.out")}
	os.WriteFile(p.log, []byte(fatalLog+strings.Repeat("\tat some.Frame(Frame.java:1)\n", 500)), 0o644)
	why := p.why()
	for _, want := range []string{"produced an uncaught exception", "Trying to access closed classloader"} {
		if !strings.Contains(why, want) {
			t.Errorf("why() lacks %q:\n%s", want, why)
		}
	}
	if strings.Contains(why, "final execution state") {
		t.Errorf("why() quotes lines before the fatal one:\n%s", why)
	}
	os.WriteFile(p.log, []byte("10:16:03,990 INFO  TaskExecutor - nothing wrong\n"), 0o644)
	if why := p.why(); !strings.Contains(why, "no line of its log explains it") {
		t.Errorf("why() of a log without a fatal line = %q", why)
	}
}

func TestReadConfTakesTheJVMOptions(t *testing.T) {
	dir := t.TempDir()
	if err := writeConf(dir, map[string]string{"env.java.opts.taskmanager": "-Da=1 -Db=2", "taskmanager.numberOfTaskSlots": "3"}); err != nil {
		t.Fatal(err)
	}
	conf, err := readConf(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := conf["env.java.opts.taskmanager"]; got != "-Da=1 -Db=2" {
		t.Errorf("env.java.opts.taskmanager = %q, want the override", got)
	}
	if got := conf["taskmanager.numberOfTaskSlots"]; got != "3" {
		t.Errorf("taskmanager.numberOfTaskSlots = %q: the override did not replace deploy/flink's 2", got)
	}
	if got := conf["restart-strategy.type"]; got != "fixed-delay" {
		t.Errorf("restart-strategy.type = %q, want deploy/flink's fixed-delay", got)
	}
}

// TestClusterReportsALostTaskManager starts a one-TaskManager cluster with a JVM option
// from the configuration, checks the JVM got it, and kills the TaskManager behind the
// cluster's back: Lost must name it, and only it.
func TestClusterReportsALostTaskManager(t *testing.T) {
	if _, err := os.Stat(ClasspathFile()); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("the Flink cluster's classpath is not resolved: %v", err)
		}
		t.Skipf("the Flink cluster's classpath is not resolved: %v", err)
	}
	c := Start(t, Options{TaskManagers: 1, Conf: map[string]string{"env.java.opts.taskmanager": "-XX:+ExitOnOutOfMemoryError -Dflinkcluster.test=lost"}})
	cmdline, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(c.TaskManagerPID(0)), "cmdline"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(cmdline), "-Dflinkcluster.test=lost") {
		t.Errorf("the TaskManager's JVM lacks env.java.opts.taskmanager: %q", strings.ReplaceAll(string(cmdline), "\x00", " "))
	}
	if lost := c.Lost(); len(lost) != 0 {
		t.Fatalf("Lost() on a whole cluster = %q", lost)
	}
	syscall.Kill(c.TaskManagerPID(0), syscall.SIGKILL)
	deadline := time.Now().Add(30 * time.Second)
	for len(c.Lost()) == 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	lost := c.Lost()
	if len(lost) != 1 || !strings.HasPrefix(lost[0], "taskmanager0 exited (signal: killed)") {
		t.Fatalf("Lost() after the TaskManager was killed = %q, want taskmanager0's end", lost)
	}
	// The test knows: the cluster's cleanup must not fail it.
	c.mu.Lock()
	c.tms[0].ended.Store(true)
	c.mu.Unlock()
}
