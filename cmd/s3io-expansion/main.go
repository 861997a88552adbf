// Command s3io-expansion serves s3io's reads to Python, Java and YAML pipelines: a Beam
// expansion service (ExpansionService, with DiscoverSchemaTransform, and the
// ArtifactRetrievalService its environment needs) on --port.
//
// A pipeline in another language asks it to expand one of s3io's reads, configured with a
// Beam Row; it answers with the read as a Go subgraph that runs in a Go environment whose
// worker is this same program, which it stages as the environment's artifact. Under
// PROCESS (the default) the runner starts each worker with s3io-boot (cmd/s3io-boot), which
// must be on the worker hosts: by default at the path beside this program. The same binary
// runs as that worker when s3io-boot starts it with --worker.
//
//	s3io-expansion --port=8097
//	s3io-expansion --port=8097 --environment_type=EXTERNAL --environment_config=localhost:50000
//	s3io-expansion --port=8097 --environment_type=DOCKER --environment_config=IMAGE
//
// The transforms (URNs and schema transform identifiers), their configuration fields and
// outputs are in (README, "From Python, Java and YAML"). Credentials are never part of the
// configuration: workers take them from their environment.
package main

import (
	"cmp"
	"flag"
	"fmt"
	"log"
	"net"
	"os"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/harness/init"
	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	"google.golang.org/grpc"
)

var (
	port       = flag.Int("port", 8097, "The port to serve the expansion service on (all interfaces).")
	maxMessage = 1 << 30
)

func main() {
	flag.Parse()
	// As a worker (s3io-boot starts this program with --worker), beam.Init runs the Go SDK
	// harness and does not return.
	beam.Init()
	self, err := os.Executable()
	if err != nil {
		log.Fatalf("s3io-expansion: cannot find its own binary to stage for workers: %v", err)
	}
	// --environment_type and --environment_config are the Go SDK's own flags (jobopts),
	// read here for the expanded transforms' environment: PROCESS (the default), with the
	// path of s3io-boot on the worker hosts (default: beside this program); EXTERNAL, with
	// the host:port of an s3io-boot --worker_pool; or DOCKER, with the image.
	envType := cmp.Or(*jobopts.EnvironmentType, "PROCESS")
	env, err := environment(envType, *jobopts.EnvironmentConfig, self)
	if err != nil {
		log.Fatalf("s3io-expansion: %v", err)
	}
	lis, err := net.Listen("tcp", fmt.Sprintf(":%d", *port))
	if err != nil {
		log.Fatalf("s3io-expansion: %v", err)
	}
	srv := grpc.NewServer(grpc.MaxRecvMsgSize(maxMessage), grpc.MaxSendMsgSize(maxMessage))
	jobpb.RegisterExpansionServiceServer(srv, &expander{env: env})
	jobpb.RegisterArtifactRetrievalServiceServer(srv, &artifacts{worker: env.GetDependencies()[0], path: self})
	log.Printf("s3io-expansion: serving on %s (%s environment)", lis.Addr(), envType)
	if err := srv.Serve(lis); err != nil {
		log.Fatalf("s3io-expansion: %v", err)
	}
}
