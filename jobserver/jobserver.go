// Package jobserver submits a Beam Go pipeline to a portable job server (Beam's Flink job
// server, prism) with pipeline options the Go SDK cannot send.
//
// The Go SDK's universal runner sends a job server six options (the Go options nested under
// go_options, the job name, experiments, parallelism and two more); a runner's own options,
// such as Flink's streaming, checkpointing_interval, number_of_execution_retries or
// max_bundle_time_mills, are refused by the Go flag parser or arrive nested where the job
// server does not look. This package submits the way the universal runner does (LOOPBACK,
// PROCESS or EXTERNAL workers, the same --endpoint and --environment_* flags) and adds each
// option as the top-level beam:option:<name>:v1 field a Java job server reads:
//
//	pr, err := jobserver.Run(ctx, p, jobserver.Options{
//		"streaming":              true,
//		"checkpointing_interval": 10000, // ms
//	})
//
// From the command line, the "jobserver" runner reads the options from --job_option:
//
//	go run ./examples/incremental --runner=jobserver --endpoint=localhost:8099 \
//	    --environment_type=PROCESS --environment_config='{"command":"/opt/s3io/s3io-boot"}' \
//	    --job_option=streaming=true --job_option=checkpointing_interval=10000
//
// Names are the runner's pipeline options in snake_case, as Python and Java command lines
// spell them; values are JSON (true, 10000, "hashmap") or else taken as strings. A job
// server ignores a name it does not know, so check the runner's documentation (and the job
// server's log, which prints the options it received).
package jobserver

import (
	"context"
	"flag"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/apache/beam/sdks/v2/go/container/tools"
	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/metrics"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/graphx"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/metricsx"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/xlangx"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/util/hooks"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/log"
	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/universal/extworker"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/universal/runnerlib"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/util/grpcx"
	"google.golang.org/protobuf/types/known/structpb"

	// The worker side: a binary that submits with this package must also run as a worker.
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/harness/init"
)

// Options are runner pipeline options by name (snake_case) and value.
type Options map[string]any

// jobOptions collects --job_option flags.
type jobOptions struct{ opts Options }

func (j *jobOptions) String() string { return fmt.Sprint(j.opts) }

func (j *jobOptions) Set(s string) error {
	name, value, ok := strings.Cut(s, "=")
	if !ok {
		return fmt.Errorf("--job_option %q: want name=value", s)
	}
	v, err := parseValue(value)
	if err != nil {
		return err
	}
	if j.opts == nil {
		j.opts = Options{}
	}
	j.opts[name] = v
	return nil
}

var flagOptions jobOptions

func init() {
	flag.Var(&flagOptions, "job_option", "A runner pipeline option for the job server, as name=value (repeatable; the jobserver runner), e.g. --job_option=checkpointing_interval=10000.")
	beam.RegisterRunner("jobserver", func(ctx context.Context, p *beam.Pipeline) (beam.PipelineResult, error) {
		return Run(ctx, p, FlagOptions())
	})
}

// FlagOptions are the options given with --job_option.
func FlagOptions() Options {
	out := Options{}
	for k, v := range flagOptions.opts {
		out[k] = v
	}
	return out
}

// parseValue reads a JSON value, or else takes the text as a string.
func parseValue(s string) (any, error) {
	var v structpb.Value
	if err := v.UnmarshalJSON([]byte(s)); err == nil {
		return v.AsInterface(), nil
	}
	return s, nil
}

var optionName = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// reserved are the options the Go SDK sends itself, set through its own flags.
var reserved = map[string]string{
	"go_options":               "Go's own flags",
	"runner":                   "--runner",
	"app_name":                 "--job_name",
	"experiments":              "--experiments",
	"retain_docker_containers": "--retain_docker_containers",
	"parallelism":              "--parallelism",
}

// structFields turns opts into the job request's top-level fields.
func structFields(opts Options) (map[string]*structpb.Value, error) {
	out := map[string]*structpb.Value{}
	names := make([]string, 0, len(opts))
	for n := range opts {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if !optionName.MatchString(n) {
			return nil, fmt.Errorf("jobserver: option %q: a name is the runner's option in snake_case (checkpointing_interval, not checkpointingInterval or --checkpointing_interval)", n)
		}
		if flag, ok := reserved[n]; ok {
			return nil, fmt.Errorf("jobserver: option %q is sent by the Go SDK itself: set it with %s", n, flag)
		}
		v, err := structpb.NewValue(opts[n])
		if err != nil {
			return nil, fmt.Errorf("jobserver: option %q: %w", n, err)
		}
		out["beam:option:"+n+":v1"] = v
	}
	return out, nil
}

// Run submits p to the job server at --endpoint with opts added to the pipeline options,
// runs it with the workers --environment_type names, and waits for it to end (unless
// --async). It is Beam's universal runner with one change: the options.
func Run(ctx context.Context, p *beam.Pipeline, opts Options) (beam.PipelineResult, error) {
	if !beam.Initialized() {
		panic("jobserver: call beam.Init() before building the pipeline")
	}
	fields, err := structFields(opts)
	if err != nil {
		return nil, err
	}
	endpoint, err := jobopts.GetEndpoint()
	if err != nil {
		return nil, err
	}
	edges, _, err := p.Build()
	if err != nil {
		return nil, err
	}
	getEnvCfg := jobopts.GetEnvironmentConfig
	if jobopts.IsLoopback() {
		srv, err := extworker.StartLoopback(ctx, 0)
		if err != nil {
			return nil, err
		}
		defer srv.Stop(ctx)
		getEnvCfg = srv.EnvironmentConfig
	}
	xlangx.ResolveArtifacts(ctx, edges, nil)
	env, err := graphx.CreateEnvironment(ctx, jobopts.GetEnvironmentUrn(ctx), getEnvCfg)
	if err != nil {
		return nil, fmt.Errorf("jobserver: environment: %w", err)
	}
	pipeline, err := graphx.Marshal(edges, &graphx.Options{Environment: env, PipelineResourceHints: jobopts.GetPipelineResourceHints()})
	if err != nil {
		return nil, fmt.Errorf("jobserver: pipeline: %w", err)
	}
	return execute(ctx, pipeline, endpoint, fields)
}

// execute is runnerlib.Execute with the extra option fields in the job request.
func execute(ctx context.Context, p *pipepb.Pipeline, endpoint string, fields map[string]*structpb.Value) (beam.PipelineResult, error) {
	bin := *jobopts.WorkerBinary
	switch {
	case jobopts.IsLoopback():
		// The binary is unused: this process is the worker.
		f, err := os.CreateTemp("", "beamloopbackworker-*")
		if err != nil {
			return nil, err
		}
		f.Close()
		defer os.Remove(f.Name())
		bin = f.Name()
	case bin == "":
		worker, err := runnerlib.BuildTempWorkerBinary(ctx, runnerlib.CompileOpts{})
		if err != nil {
			return nil, err
		}
		defer os.Remove(worker)
		bin = worker
	}
	if err := runnerlib.UpdateGoEnvironmentWorker(bin, p); err != nil {
		return nil, err
	}
	cc, err := grpcx.Dial(ctx, endpoint, 2*time.Minute)
	if err != nil {
		return nil, fmt.Errorf("jobserver: connect to the job server at %s: %w", endpoint, err)
	}
	defer cc.Close()
	client := jobpb.NewJobServiceClient(cc)

	hooks.SerializeHooksToOptions()
	beam.PipelineOptions.LoadOptionsFromFlags(nil)
	name := jobopts.GetJobName()
	options, err := tools.OptionsToProto(runtime.RawOptionsWrapper{
		Options:      beam.PipelineOptions.Export(),
		AppName:      name,
		Experiments:  append(jobopts.GetExperiments(), "beam_fn_api"),
		RetainDocker: *jobopts.RetainDockerContainers,
		Parallelism:  *jobopts.Parallelism,
	})
	if err != nil {
		return nil, fmt.Errorf("jobserver: pipeline options: %w", err)
	}
	for k, v := range fields {
		options.Fields[k] = v
	}
	prep, err := client.Prepare(ctx, &jobpb.PrepareJobRequest{Pipeline: p, PipelineOptions: options, JobName: name})
	if err != nil {
		return nil, fmt.Errorf("jobserver: prepare the job: %w", err)
	}
	token, err := runnerlib.Stage(ctx, prep.GetPreparationId(), prep.GetArtifactStagingEndpoint().GetUrl(), bin, prep.GetStagingSessionToken())
	if err != nil {
		return nil, err
	}
	jobID, err := runnerlib.Submit(ctx, client, prep.GetPreparationId(), token)
	if err != nil {
		return nil, err
	}
	log.Infof(ctx, "jobserver: submitted job %v with options %v", jobID, optionNames(fields))
	res := &result{jobID: jobID}
	if *jobopts.Async {
		return res, nil
	}
	waitErr := runnerlib.WaitForCompletion(ctx, client, jobID)
	m, err := client.GetJobMetrics(ctx, &jobpb.GetJobMetricsRequest{JobId: jobID})
	if err == nil {
		res.metrics = metricsx.FromMonitoringInfos(p, m.GetMetrics().GetAttempted(), m.GetMetrics().GetCommitted())
	} else if waitErr == nil {
		waitErr = fmt.Errorf("jobserver: job %s: metrics: %w", jobID, err)
	}
	return res, waitErr
}

func optionNames(fields map[string]*structpb.Value) []string {
	var out []string
	for k, v := range fields {
		b, _ := v.MarshalJSON()
		out = append(out, strings.TrimSuffix(strings.TrimPrefix(k, "beam:option:"), ":v1")+"="+string(b))
	}
	sort.Strings(out)
	return out
}

// result is a submitted job.
type result struct {
	jobID   string
	metrics *metrics.Results
}

// Metrics are the job's metrics once it ended (empty for --async jobs).
func (r *result) Metrics() metrics.Results {
	if r.metrics == nil {
		return metrics.Results{}
	}
	return *r.metrics
}

// JobID is the job server's id of the job.
func (r *result) JobID() string { return r.jobID }
