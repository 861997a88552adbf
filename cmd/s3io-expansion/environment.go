package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/artifact"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/graphx"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/protobuf/proto"
)

// The environment the expanded transforms run in: a Go SDK environment whose worker binary
// is this program, staged as the environment's one artifact. The runner reaches it through
// the caller, which fetches the artifact from this service (ArtifactRetrievalService) and
// stages it with the job, as it does a Java expansion service's jars.

// environment builds the environment of kind (PROCESS, EXTERNAL or DOCKER) with config:
// the boot program's path (PROCESS; by default s3io-boot beside this program), a worker
// pool's address (EXTERNAL), or an image (DOCKER).
func environment(kind, config, self string) (*pipepb.Environment, error) {
	var urn, cfg string
	switch strings.ToUpper(kind) {
	case "PROCESS":
		urn = graphx.URNEnvProcess
		command := config
		if strings.HasPrefix(strings.TrimSpace(config), "{") {
			var p struct{ Command string }
			if err := json.Unmarshal([]byte(config), &p); err != nil {
				return nil, fmt.Errorf("--environment_config %q: %v", config, err)
			}
			command = p.Command
		}
		if command == "" {
			command = filepath.Join(filepath.Dir(self), "s3io-boot")
			if _, err := os.Stat(command); err != nil {
				return nil, fmt.Errorf("a PROCESS environment runs s3io-boot on the worker hosts, and there is none beside this program (%v): go build -o %s ./cmd/s3io-boot, or name its path on the workers with --environment_config", err, command)
			}
		}
		b, _ := json.Marshal(map[string]string{"command": command})
		cfg = string(b)
	case "EXTERNAL":
		urn, cfg = graphx.URNEnvExternal, config
		if cfg == "" {
			return nil, fmt.Errorf("an EXTERNAL environment needs --environment_config=host:port, the address of an s3io-boot --worker_pool beside each worker")
		}
	case "DOCKER":
		urn, cfg = graphx.URNEnvDocker, config
		if cfg == "" {
			return nil, fmt.Errorf("a DOCKER environment needs --environment_config=IMAGE, an image built from deploy/docker/Dockerfile.expansion-worker (docs/deploy.md)")
		}
	default:
		return nil, fmt.Errorf("--environment_type %q: use PROCESS, EXTERNAL or DOCKER", kind)
	}
	env, err := graphx.CreateEnvironment(context.Background(), urn, func(context.Context) string { return cfg })
	if err != nil {
		return nil, err
	}
	worker, err := workerArtifact(self)
	if err != nil {
		return nil, err
	}
	env.Dependencies = []*pipepb.ArtifactInformation{worker}
	return env, nil
}

// workerArtifact describes this program as the Go worker binary, with its SHA-256, which
// the caller checks as it fetches it.
func workerArtifact(self string) (*pipepb.ArtifactInformation, error) {
	f, err := os.Open(self)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return nil, err
	}
	payload, err := proto.Marshal(&pipepb.ArtifactFilePayload{Path: self, Sha256: hex.EncodeToString(h.Sum(nil))})
	if err != nil {
		return nil, err
	}
	return &pipepb.ArtifactInformation{TypeUrn: graphx.URNArtifactFileType, TypePayload: payload, RoleUrn: artifact.URNGoWorkerBinaryRole}, nil
}
