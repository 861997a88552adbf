// Command s3io-boot starts a Beam Go SDK worker for a runner's PROCESS or EXTERNAL
// environment, the way Beam's Go boot program (sdks/go/container/boot.go) does, but so that
// several workers can share a host and none outlives its job:
//
//   - each worker gets its own directory (under --semi_persist_dir, default $TMPDIR) for the
//     staged worker binary and its pipeline options, removed when the worker ends; Beam's boot
//     writes every worker's binary to one shared <dir>/staged (two workers starting at once
//     on one TaskManager host ran a half-written binary) and copies it again to /tmp/bin*/,
//     which nothing removes;
//   - the worker runs in its own process group and dies with its boot: when the runner stops
//     the boot (SIGTERM, SIGINT), when the boot's parent (the TaskManager) dies, and when the
//     worker reports "Worker exited successfully!", after which Beam's worker would otherwise
//     sleep until killed, which PROCESS environments never do;
//   - directories left by a boot that was killed with SIGKILL are removed by the next boot
//     on the host (each live boot holds a lock on its directory).
//
// Use it as the command of a PROCESS environment,
//
//	--environment_type=PROCESS --environment_config='{"command":"/opt/s3io/s3io-boot"}'
//
// or as a worker pool beside each TaskManager (EXTERNAL environment):
//
//	s3io-boot --worker_pool --port=50000
//
// See docs/deploy.md.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/apache/beam/sdks/v2/go/container/pool"
	"github.com/apache/beam/sdks/v2/go/container/tools"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/artifact"
	fnpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/fnexecution_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/util/grpcx"
)

var (
	workerPool        = flag.Bool("worker_pool", false, "Serve Beam's external worker pool API and start a worker (this program) per request.")
	poolPort          = flag.Int("port", 50000, "The worker pool's port (with --worker_pool).")
	id                = flag.String("id", "", "The worker's id (required).")
	loggingEndpoint   = flag.String("logging_endpoint", "", "The runner's logging endpoint (else from the provision info).")
	artifactEndpoint  = flag.String("artifact_endpoint", "", "The runner's artifact endpoint (else from the provision info).")
	provisionEndpoint = flag.String("provision_endpoint", "", "The runner's provision endpoint (required).")
	controlEndpoint   = flag.String("control_endpoint", "", "The runner's control endpoint (else from the provision info).")
	semiPersistDir    = flag.String("semi_persist_dir", os.TempDir(), "Where each worker's private directory is made.")
	stopGrace         = flag.Duration("stop_grace", 5*time.Second, "How long a stopped worker has between SIGTERM and SIGKILL.")
)

func main() {
	flag.Parse()
	if *workerPool {
		servePool()
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer stop()
	code, err := boot(ctx)
	if err != nil {
		log.Printf("s3io-boot: worker %s: %v", *id, err)
	}
	os.Exit(code)
}

// servePool serves Beam's worker pool API on --port, starting this program once per worker.
func servePool() {
	bin, err := os.Executable()
	if err != nil {
		log.Fatalf("s3io-boot: worker pool: cannot find its own executable: %v", err)
	}
	ctx := context.Background()
	server, err := pool.New(ctx, *poolPort, bin)
	if err != nil {
		log.Fatalf("s3io-boot: worker pool on port %d: %v", *poolPort, err)
	}
	defer server.Stop(ctx)
	log.Printf("s3io-boot: worker pool serving on port %d", *poolPort)
	if err := server.ServeAndWait(); err != nil {
		log.Fatalf("s3io-boot: worker pool: %v", err)
	}
}

// boot fetches the job's worker binary into a private directory and runs it until it ends,
// its work is done, or ctx is cancelled; it returns the exit code for the boot.
func boot(ctx context.Context) (int, error) {
	*id = unquoteID(*id)
	if *id == "" || *provisionEndpoint == "" {
		return 2, fmt.Errorf("--id and --provision_endpoint are required (the runner passes them)")
	}
	parent := os.Getppid()
	wctx := grpcx.WriteWorkerID(ctx, *id)
	info, err := tools.ProvisionInfo(wctx, *provisionEndpoint)
	if err != nil {
		return 1, fmt.Errorf("provision info from %s: %w", *provisionEndpoint, err)
	}
	if err := endpoints(info); err != nil {
		return 1, err
	}
	logger := &tools.Logger{Endpoint: *loggingEndpoint}
	options, err := tools.ProtoToJSON(info.GetPipelineOptions())
	if err != nil {
		return 1, fmt.Errorf("pipeline options: %w", err)
	}
	if options, err = forGoHarness(options); err != nil {
		return 1, fmt.Errorf("pipeline options: %w", err)
	}

	sweepStale(*semiPersistDir)
	wd, err := newWorkDir(*semiPersistDir)
	if err != nil {
		return 1, err
	}
	defer wd.remove()

	// The Go SDK nests its options under beam:option:go_options:v1; Beam's own boot reads the
	// experiment the same way.
	po := tools.ParseOptionsFromProto(info.GetPipelineOptions(), "go_options")
	wctx = artifact.WithArtifactValidation(wctx, !po.HasExperiment("disable_staged_file_integrity_checks"))
	staged, err := artifact.Materialize(wctx, *artifactEndpoint, info.GetDependencies(), info.GetRetrievalToken(), wd.staged())
	if err != nil {
		return 1, fmt.Errorf("staged artifacts from %s: %w", *artifactEndpoint, err)
	}
	name, err := workerArtifact(staged)
	if err != nil {
		return 1, err
	}
	prog := filepath.Join(wd.staged(), name)
	if err := os.Chmod(prog, 0o755); err != nil {
		return 1, err
	}
	optionsFile := filepath.Join(wd.dir, "pipeline_options.json")
	if err := os.WriteFile(optionsFile, []byte(options), 0o600); err != nil {
		return 1, err
	}
	env := append(os.Environ(), "PIPELINE_OPTIONS_FILE="+optionsFile)
	if ep := info.GetStatusEndpoint(); ep != nil {
		env = append(env, "STATUS_ENDPOINT="+ep.GetUrl())
	}
	if caps := info.GetRunnerCapabilities(); len(caps) > 0 {
		env = append(env, "RUNNER_CAPABILITIES="+strings.Join(caps, " "))
	}
	logger.Printf(wctx, "s3io-boot: starting worker %s from %s", *id, prog)
	w := &worker{
		path: prog,
		args: []string{
			"--worker=true",
			"--id=" + *id,
			"--logging_endpoint=" + *loggingEndpoint,
			"--control_endpoint=" + *controlEndpoint,
			"--semi_persist_dir=" + wd.dir,
		},
		env:    env,
		dir:    wd.dir,
		parent: parent,
		grace:  *stopGrace,
	}
	return w.run(ctx)
}

// endpoints takes the runner's endpoints from the provision info where it gives them.
func endpoints(info *fnpb.ProvisionInfo) error {
	for _, e := range []struct {
		flag *string
		url  string
		name string
	}{
		{loggingEndpoint, info.GetLoggingEndpoint().GetUrl(), "logging"},
		{artifactEndpoint, info.GetArtifactEndpoint().GetUrl(), "artifact"},
		{controlEndpoint, info.GetControlEndpoint().GetUrl(), "control"},
	} {
		if e.url != "" {
			*e.flag = e.url
		}
		if *e.flag == "" {
			return fmt.Errorf("no %s endpoint: neither a flag nor the provision info gives one", e.name)
		}
	}
	return nil
}

// workerArtifact names the Go worker binary among the staged artifacts, as Beam's boot does.
func workerArtifact(staged []*pipepb.ArtifactInformation) (string, error) {
	switch len(staged) {
	case 0:
		return "", fmt.Errorf("the job staged no artifacts: no worker binary to run")
	case 1:
		name, _ := artifact.MustExtractFilePayload(staged[0])
		return name, nil
	}
	for _, a := range staged {
		if a.GetRoleUrn() == artifact.URNGoWorkerBinaryRole {
			name, _ := artifact.MustExtractFilePayload(a)
			return name, nil
		}
	}
	for _, a := range staged {
		if name, _ := artifact.MustExtractFilePayload(a); name == "worker" {
			return name, nil
		}
	}
	return "", fmt.Errorf("none of the %d staged artifacts is a Go worker binary", len(staged))
}

// unquoteID takes off the single quotes prism's PROCESS environment puts around the worker
// ID (--id='job-001[job]_go'), which no shell removes: with them, the runner knows no such
// worker and refuses the provision request.
func unquoteID(id string) string {
	if len(id) >= 2 && id[0] == '\'' && id[len(id)-1] == '\'' {
		return id[1 : len(id)-1]
	}
	return id
}
