package main

import (
	"context"
	"io"
	"os"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// artifacts serves Beam's ArtifactRetrievalService for the environment's one artifact,
// this program's binary. It serves that file and no other, whatever path a request names:
// the service listens on the network, and must not hand out the host's files.
type artifacts struct {
	jobpb.UnimplementedArtifactRetrievalServiceServer
	worker *pipepb.ArtifactInformation
	path   string
}

// ResolveArtifacts returns the artifacts as they are: a file this service serves.
func (a *artifacts) ResolveArtifacts(_ context.Context, req *jobpb.ResolveArtifactsRequest) (*jobpb.ResolveArtifactsResponse, error) {
	return &jobpb.ResolveArtifactsResponse{Replacements: req.GetArtifacts()}, nil
}

// chunk is how much of the binary one GetArtifact message carries; gRPC's default limit
// on a message is 4 MiB.
const chunk = 1 << 20

// GetArtifact streams the worker binary, if that is what req asks for.
func (a *artifacts) GetArtifact(req *jobpb.GetArtifactRequest, stream jobpb.ArtifactRetrievalService_GetArtifactServer) error {
	if !proto.Equal(req.GetArtifact(), a.worker) {
		return status.Errorf(codes.NotFound, "s3io-expansion serves one artifact, its own binary %s; not %v", a.path, req.GetArtifact())
	}
	f, err := os.Open(a.path)
	if err != nil {
		return status.Errorf(codes.Unavailable, "s3io-expansion: %v", err)
	}
	defer f.Close()
	buf := make([]byte, chunk)
	for {
		n, err := f.Read(buf)
		if n > 0 {
			if err := stream.Send(&jobpb.GetArtifactResponse{Data: buf[:n]}); err != nil {
				return err
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return status.Errorf(codes.Unavailable, "s3io-expansion: reading %s: %v", a.path, err)
		}
	}
}
