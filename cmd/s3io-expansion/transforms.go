package main

import (
	"reflect"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/spate-io/beam-s3/s3io"
)

// The transforms this service expands. Each is a root: it takes no input and reads what
// its configuration names.
//
// The plain URNs, configured with an ExternalConfigurationPayload, emit records as bytes
// (Beam's bytes coder): Python receives them as bytes with no wrapper to take off. The
// schema transforms, configured with a SchemaTransformPayload and discoverable, emit Rows,
// which Beam YAML and schema-aware pipelines need.
const (
	urnRead             = "beam:transform:spate-io:s3io:read:v1"
	urnReadWithFailures = "beam:transform:spate-io:s3io:read_with_failures:v1"

	idRead              = "beam:schematransform:spate-io:s3io:read:v1"
	idReadWithFailures  = "beam:schematransform:spate-io:s3io:read_with_failures:v1"
	idReadWithPositions = "beam:schematransform:spate-io:s3io:read_with_positions:v1"

	// urnSchemaTransform is the URN of every schema transform's expansion request; the
	// payload names which.
	urnSchemaTransform = "beam:expansion:payload:schematransform:v1"
)

// RecordRow is a record as the schema transforms emit it.
type RecordRow struct {
	Record []byte `beam:"record"`
}

// PositionRow is a record with its deterministic identity (s3io.Record).
type PositionRow struct {
	SplitID string `beam:"split_id"`
	Key     string `beam:"key"`
	Member  int64  `beam:"member"`
	Index   int64  `beam:"index"`
	Entry   string `beam:"entry"`
	Record  []byte `beam:"record"`
}

// FailureRow is a quarantined object (s3io.Failure). FirstRecord is the index of the first
// record not emitted: the records before it were.
type FailureRow struct {
	Bucket      string `beam:"bucket"`
	Key         string `beam:"key"`
	ETag        string `beam:"etag"`
	VersionID   string `beam:"version_id"`
	SplitID     string `beam:"split_id"`
	Member      int64  `beam:"member"`
	FirstRecord int64  `beam:"first_record"`
	Reason      string `beam:"reason"`
	Message     string `beam:"message"`
	Attempts    int64  `beam:"attempts"`
}

func init() {
	beam.RegisterType(reflect.TypeOf((*RecordRow)(nil)).Elem())
	beam.RegisterType(reflect.TypeOf((*PositionRow)(nil)).Elem())
	beam.RegisterType(reflect.TypeOf((*FailureRow)(nil)).Elem())
	register.Function1x1(recordRow)
	register.Function1x1(positionRow)
	register.Function1x1(failureRow)
}

// recordRow wraps a record's bytes in a row; the bytes are not copied.
func recordRow(b []byte) RecordRow { return RecordRow{Record: b} }

func positionRow(r s3io.Record) PositionRow {
	return PositionRow{SplitID: r.SplitID, Key: r.Key, Member: int64(r.Member), Index: r.Index, Entry: r.Entry, Record: r.Data}
}

func failureRow(f s3io.Failure) FailureRow {
	return FailureRow{Bucket: f.Bucket, Key: f.Key, ETag: f.ETag, VersionID: f.VersionID, SplitID: f.SplitID,
		Member: int64(f.Member), FirstRecord: f.Index, Reason: string(f.Reason), Message: f.Message, Attempts: int64(f.Attempts)}
}

// transform is one expandable transform: how to build it, and what discovery says of it.
type transform struct {
	id          string // the URN, or the schema transform's identifier
	schema      bool   // a schema transform (SchemaTransformPayload, discoverable)
	description string
	outputs     []string // output tags, in the order build returns them
	build       func(s beam.Scope, cfg s3io.Config) []beam.PCollection
}

var transforms = []transform{
	{
		id: urnRead, outputs: []string{"records"},
		description: "Reads every object under s3://bucket/prefix: records as bytes. The job fails after reading if any object was quarantined.",
		build: func(s beam.Scope, cfg s3io.Config) []beam.PCollection {
			return []beam.PCollection{s3io.Read(s, cfg)}
		},
	},
	{
		id: urnReadWithFailures, outputs: []string{"records", "failures"},
		description: "Reads every object under s3://bucket/prefix: records as bytes, and a Row per quarantined object.",
		build: func(s beam.Scope, cfg s3io.Config) []beam.PCollection {
			records, failures := s3io.ReadWithFailures(s, cfg)
			return []beam.PCollection{records, beam.ParDo(s, failureRow, failures)}
		},
	},
	{
		id: idRead, schema: true, outputs: []string{"output"},
		description: "Reads every object under s3://bucket/prefix, a Row (record: bytes) per record. The job fails after reading if any object was quarantined.",
		build: func(s beam.Scope, cfg s3io.Config) []beam.PCollection {
			return []beam.PCollection{beam.ParDo(s, recordRow, s3io.Read(s, cfg))}
		},
	},
	{
		id: idReadWithFailures, schema: true, outputs: []string{"output", "failures"},
		description: "Reads every object under s3://bucket/prefix, a Row (record: bytes) per record; failures holds a Row per quarantined object (bucket, key, etag, version_id, split_id, member, first_record, reason, message, attempts).",
		build: func(s beam.Scope, cfg s3io.Config) []beam.PCollection {
			records, failures := s3io.ReadWithFailures(s, cfg)
			return []beam.PCollection{beam.ParDo(s, recordRow, records), beam.ParDo(s, failureRow, failures)}
		},
	},
	{
		id: idReadWithPositions, schema: true, outputs: []string{"output"},
		description: "Reads every object under s3://bucket/prefix, a Row per record with its deterministic identity (split_id, key, member, index, entry, record). The job fails after reading if any object was quarantined.",
		build: func(s beam.Scope, cfg s3io.Config) []beam.PCollection {
			return []beam.PCollection{beam.ParDo(s, positionRow, s3io.ReadWithPositions(s, cfg))}
		},
	},
}

// lookup finds the transform a request names.
func lookup(id string, schema bool) (*transform, bool) {
	for i := range transforms {
		if transforms[i].id == id && transforms[i].schema == schema {
			return &transforms[i], true
		}
	}
	return nil, false
}
