package jobserver

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/stats"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestMain(m *testing.M) { ptest.Main(m) }

// recordingJobService is a job server that records the job request and refuses it.
type recordingJobService struct {
	jobpb.UnimplementedJobServiceServer
	mu  sync.Mutex
	req *jobpb.PrepareJobRequest
}

func (s *recordingJobService) Prepare(_ context.Context, req *jobpb.PrepareJobRequest) (*jobpb.PrepareJobResponse, error) {
	s.mu.Lock()
	s.req = req
	s.mu.Unlock()
	return nil, status.Error(codes.FailedPrecondition, "recorded")
}

func startRecorder(t *testing.T) (*recordingJobService, string) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	rec := &recordingJobService{}
	jobpb.RegisterJobServiceServer(srv, rec)
	go srv.Serve(l)
	t.Cleanup(srv.Stop)
	return rec, l.Addr().String()
}

func TestRunSendsTheOptionsAtTopLevel(t *testing.T) {
	rec, addr := startRecorder(t)
	old := [3]string{*jobopts.Endpoint, *jobopts.EnvironmentType, *jobopts.JobName}
	*jobopts.Endpoint, *jobopts.EnvironmentType, *jobopts.JobName = addr, "LOOPBACK", "options-test"
	defer func() { *jobopts.Endpoint, *jobopts.EnvironmentType, *jobopts.JobName = old[0], old[1], old[2] }()

	p, s := beam.NewPipelineWithRoot()
	stats.Count(s, beam.Create(s, 1, 2, 3))
	_, err := Run(context.Background(), p, Options{
		"streaming":                   true,
		"checkpointing_interval":      10000,
		"state_backend":               "hashmap",
		"number_of_execution_retries": 3,
	})
	if err == nil || !strings.Contains(err.Error(), "recorded") {
		t.Fatalf("Run = %v, want the recorder's refusal", err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.req == nil {
		t.Fatal("the job server received no job request")
	}
	got := rec.req.GetPipelineOptions().GetFields()
	want := map[string]any{
		"beam:option:streaming:v1":                   true,
		"beam:option:checkpointing_interval:v1":      float64(10000),
		"beam:option:state_backend:v1":               "hashmap",
		"beam:option:number_of_execution_retries:v1": float64(3),
		"beam:option:app_name:v1":                    "options-test",
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g.AsInterface() != v {
			t.Errorf("option %s = %v, want %v", k, got[k], v)
		}
	}
	// The Go SDK's own options are still there, for the worker.
	if _, ok := got["beam:option:go_options:v1"]; !ok {
		t.Errorf("the Go options are missing: %v", got)
	}
}

func TestOptionNamesAreChecked(t *testing.T) {
	for _, tc := range []struct {
		name, want string
	}{
		{"checkpointingInterval", "snake_case"},
		{"--streaming", "snake_case"},
		{"parallelism", "--parallelism"},
		{"experiments", "--experiments"},
		{"go_options", "Go's own flags"},
	} {
		_, err := structFields(Options{tc.name: 1})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("option %q: error %v, want one naming %q", tc.name, err, tc.want)
		}
	}
	if _, err := structFields(Options{"max_bundle_time_mills": 1000, "finish_bundle_before_checkpointing": true}); err != nil {
		t.Errorf("valid options refused: %v", err)
	}
}

func TestJobOptionFlag(t *testing.T) {
	var j jobOptions
	for _, s := range []string{"streaming=true", "checkpointing_interval=5000", "state_backend=rocksdb", `job_name_suffix="x=y"`} {
		if err := j.Set(s); err != nil {
			t.Fatal(err)
		}
	}
	if err := j.Set("no-equals-sign"); err == nil {
		t.Error("a --job_option without = was accepted")
	}
	want := Options{"streaming": true, "checkpointing_interval": float64(5000), "state_backend": "rocksdb", "job_name_suffix": "x=y"}
	for k, v := range want {
		if j.opts[k] != v {
			t.Errorf("--job_option %s = %#v, want %#v", k, j.opts[k], v)
		}
	}
	if _, err := structFields(j.opts); err != nil {
		t.Error(err)
	}
}
