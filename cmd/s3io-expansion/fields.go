package main

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/coder"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/graphx/schema"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/google/uuid"

	"github.com/spate-io/beam-s3/s3io"
)

// The configuration a Python, Java or YAML pipeline gives a read: a Beam Row whose fields
// are s3io.Config's, spelled in snake_case. Every field but bucket may be left out or
// null, which means s3io's default. Credentials are not among them: the Go worker takes
// them from its environment, as every s3io pipeline does.

// kind is a configuration field's type on the wire, and how its value becomes a Config's.
type kind int

const (
	kindString   kind = iota
	kindInt           // INT64; INT32, INT16 and BYTE are taken too
	kindBool          // BOOLEAN
	kindDouble        // DOUBLE; FLOAT is taken too
	kindTime          // an RFC 3339 STRING
	kindDuration      // a Go duration STRING ("90s", "2m")
)

func (k kind) atomic() pipepb.AtomicType {
	switch k {
	case kindInt:
		return pipepb.AtomicType_INT64
	case kindBool:
		return pipepb.AtomicType_BOOLEAN
	case kindDouble:
		return pipepb.AtomicType_DOUBLE
	}
	return pipepb.AtomicType_STRING
}

// field is one configuration field: its name, type and description, the Config field it
// sets (as s3io.ConfigError names it), and how.
type field struct {
	name, goName, doc string
	kind              kind
	set               func(c *s3io.Config, v any)
}

func str(f func(c *s3io.Config, s string)) func(*s3io.Config, any) {
	return func(c *s3io.Config, v any) { f(c, v.(string)) }
}

func integer(f func(c *s3io.Config, n int64)) func(*s3io.Config, any) {
	return func(c *s3io.Config, v any) { f(c, v.(int64)) }
}

func boolean(f func(c *s3io.Config, b bool)) func(*s3io.Config, any) {
	return func(c *s3io.Config, v any) { f(c, v.(bool)) }
}

func instant(f func(c *s3io.Config, t time.Time)) func(*s3io.Config, any) {
	return func(c *s3io.Config, v any) { f(c, v.(time.Time)) }
}

// fields are the configuration's fields, in the order discovery lists them.
var fields = []field{
	{"bucket", "Bucket", "The bucket to read (required): the part of s3://bucket/prefix after s3:// and before the first /.", kindString,
		str(func(c *s3io.Config, s string) { c.Bucket = s })},
	{"prefix", "Prefix", "Read the keys that begin with this prefix; empty reads the whole bucket.", kindString,
		str(func(c *s3io.Config, s string) { c.Prefix = s })},
	{"match", "Match", "A glob the keys must match (* within a path segment, ** across segments, ?, [a-z], {a,b}); empty matches every key under the prefix.", kindString,
		str(func(c *s3io.Config, s string) { c.Match = s })},
	{"start_after", "StartAfter", "Read only keys after this one, in S3's order (a re-run's resume point).", kindString,
		str(func(c *s3io.Config, s string) { c.StartAfter = s })},
	{"modified_after", "ModifiedAfter", "RFC 3339 instant: read only objects modified at or after it.", kindTime,
		instant(func(c *s3io.Config, t time.Time) { c.ModifiedAfter = t })},
	{"modified_before", "ModifiedBefore", "RFC 3339 instant: read only objects modified before it.", kindTime,
		instant(func(c *s3io.Config, t time.Time) { c.ModifiedBefore = t })},
	{"skip_archived", "SkipArchived", "Skip objects listed in an archive storage class (GLACIER, DEEP_ARCHIVE) and not restored, instead of reporting them as failures.", kindBool,
		boolean(func(c *s3io.Config, b bool) { c.SkipArchived = b })},
	{"versions_pinned", "Versions.Pinned", "On a versioned bucket, plan each key's latest version and read exactly it, even if the key is overwritten or deleted after planning.", kindBool,
		boolean(func(c *s3io.Config, b bool) { c.Versions.Pinned = b })},
	{"versions_as_of", "Versions.AsOf", "RFC 3339 instant: on a versioned bucket, read each key's version that was current then.", kindTime,
		instant(func(c *s3io.Config, t time.Time) { c.Versions.AsOf = t })},
	{"region", "Region", "The bucket's region; empty takes it from the worker's AWS configuration.", kindString,
		str(func(c *s3io.Config, s string) { c.Region = s })},
	{"endpoint", "Endpoint", "An S3-compatible endpoint URL (http or https); empty is AWS S3.", kindString,
		str(func(c *s3io.Config, s string) { c.Endpoint = s })},
	{"use_path_style", "UsePathStyle", "Address the bucket in the URL path rather than the host name (most S3-compatible servers need it).", kindBool,
		boolean(func(c *s3io.Config, b bool) { c.UsePathStyle = b })},
	{"expected_bucket_owner", "ExpectedBucketOwner", "The 12-digit account ID that must own the bucket.", kindString,
		str(func(c *s3io.Config, s string) { c.ExpectedBucketOwner = s })},
	{"requester_pays", "RequesterPays", "Accept the request charges of a Requester Pays bucket.", kindBool,
		boolean(func(c *s3io.Config, b bool) { c.RequesterPays = b })},
	{"max_attempts", "MaxAttempts", "Attempts per request before a transient error fails the object (1 to 100).", kindInt,
		integer(func(c *s3io.Config, n int64) { c.MaxAttempts = int(n) })},
	{"read_timeout", "ReadTimeout", "How long a GET may wait for headers, or a body for its next bytes, as a Go duration (\"90s\").", kindDuration,
		func(c *s3io.Config, v any) { c.ReadTimeout = v.(time.Duration) }},
	{"max_requests_per_second", "MaxRequestsPerSecond", "A cap on each worker's requests per second; 0 is no cap.", kindDouble,
		func(c *s3io.Config, v any) { c.MaxRequestsPerSecond = v.(float64) }},
	{"verify_checksums", "VerifyChecksums", "Check every object's bytes against its stored checksum (CRC32, CRC32C, CRC64NVME, SHA-1, SHA-256).", kindBool,
		boolean(func(c *s3io.Config, b bool) { c.VerifyChecksums = b })},
	{"framer", "Framer", "How decompressed bytes become records: lines (default), ndjson, csv, or another registered framer.", kindString,
		str(func(c *s3io.Config, s string) { c.Framer = s })},
	{"compression", "Compression", "auto (default: by extension, then magic bytes), none, gzip, zstd, bzip2, xz, lz4, snappy, zlib, deflate or brotli.", kindString,
		str(func(c *s3io.Config, s string) { c.Compression = s3io.Compression(s) })},
	{"skip_header_records", "SkipHeaderRecords", "Records to skip at the start of each object (a CSV header).", kindInt,
		integer(func(c *s3io.Config, n int64) { c.SkipHeaderRecords = int(n) })},
	{"max_record_bytes", "MaxRecordBytes", "The largest record; a longer one fails its object.", kindInt,
		integer(func(c *s3io.Config, n int64) { c.MaxRecordBytes = int(n) })},
	{"list_parallelism", "ListParallelism", "Key ranges the planner lists at once (1 to 256).", kindInt,
		integer(func(c *s3io.Config, n int64) { c.ListParallelism = int(n) })},
	{"split_target_bytes", "SplitTargetBytes", "The stored bytes a split descriptor aims at.", kindInt,
		integer(func(c *s3io.Config, n int64) { c.SplitTargetBytes = n })},
	{"max_split_members", "MaxSplitMembers", "The most objects in one split descriptor.", kindInt,
		integer(func(c *s3io.Config, n int64) { c.MaxSplitMembers = int(n) })},
	{"part_bytes", "PartBytes", "The size of the ranged parts a large object is fetched in.", kindInt,
		integer(func(c *s3io.Config, n int64) { c.PartBytes = n })},
	{"max_requests_in_flight", "MaxRequestsInFlight", "The most GETs one worker has in flight.", kindInt,
		integer(func(c *s3io.Config, n int64) { c.MaxRequestsInFlight = int(n) })},
	{"read_buffer_bytes", "ReadBufferBytes", "The bytes one reader holds ahead of what it emits.", kindInt,
		integer(func(c *s3io.Config, n int64) { c.ReadBufferBytes = n })},
	{"worker_buffer_bytes", "WorkerBufferBytes", "The bytes all of a worker's readers hold ahead, together.", kindInt,
		integer(func(c *s3io.Config, n int64) { c.WorkerBufferBytes = n })},
}

// fieldByName and fieldByGoName index fields.
var fieldByName, fieldByGoName = func() (map[string]*field, map[string]*field) {
	byName, byGo := map[string]*field{}, map[string]*field{}
	for i := range fields {
		byName[fields[i].name] = &fields[i]
		byGo[fields[i].goName] = &fields[i]
	}
	return byName, byGo
}()

// configSchema is the configuration's schema, as discovery reports it: every field
// nullable but bucket, each with its description.
func configSchema() *pipepb.Schema {
	s := &pipepb.Schema{Id: configSchemaID}
	for i, f := range fields {
		s.Fields = append(s.Fields, &pipepb.Field{
			Name:        f.name,
			Description: f.doc,
			Type:        &pipepb.FieldType{Nullable: f.name != "bucket", TypeInfo: &pipepb.FieldType_AtomicType{AtomicType: f.kind.atomic()}},
			Id:          int32(i),
		})
	}
	return s
}

// configSchemaID names the schema in discovery; a fixed ID, so that every answer is the same.
var configSchemaID = uuid.NewSHA1(uuid.NameSpaceURL, []byte("https://github.com/spate-io/beam-s3#xlang-config-v1")).String()

// fieldError is a configuration field with a wrong value, or a field there is no such
// thing as: the expansion fails, naming it.
type fieldError struct {
	field string
	err   error
}

func (e *fieldError) Error() string {
	return fmt.Sprintf("s3io configuration field %q: %v", e.field, e.err)
}

func (e *fieldError) Unwrap() error { return e.err }

// decodeConfig reads a configuration Row encoded with schema, which is the caller's: its
// fields are any of ours, in any order, of the kinds ours take. It returns the Config,
// validated; an error names the field at fault.
func decodeConfig(sch *pipepb.Schema, row []byte) (s3io.Config, error) {
	var cfg s3io.Config
	if sch == nil {
		return cfg, errors.New("the configuration has no schema")
	}
	for _, f := range sch.GetFields() {
		if _, ok := fieldByName[f.GetName()]; !ok {
			return cfg, &fieldError{f.GetName(), fmt.Errorf("there is no such field; the fields are %s", strings.Join(fieldNames(), ", "))}
		}
	}
	// Decode with Beam's own row coder, into a struct built from the caller's schema.
	rt, err := schema.ToType(sch)
	if err != nil {
		return cfg, fmt.Errorf("the configuration's schema: %w", err)
	}
	dec, err := coder.RowDecoderForStruct(rt)
	if err != nil {
		return cfg, fmt.Errorf("the configuration's schema: %w", err)
	}
	v, err := dec(bytes.NewReader(row))
	if err != nil {
		return cfg, fmt.Errorf("the configuration row does not decode with its schema: %w", err)
	}
	rv := reflect.Indirect(reflect.ValueOf(v))
	for i, sf := range sch.GetFields() {
		f := fieldByName[sf.GetName()]
		fv := rv.Field(i)
		if fv.Kind() == reflect.Pointer {
			if fv.IsNil() {
				continue
			}
			fv = fv.Elem()
		}
		val, err := f.kind.convert(fv)
		if err != nil {
			return cfg, &fieldError{f.name, err}
		}
		if val != nil {
			f.set(&cfg, val)
		}
	}
	if err := cfg.Validate(); err != nil {
		var ce *s3io.ConfigError
		if errors.As(err, &ce) {
			if f, ok := fieldByGoName[ce.Field]; ok {
				return cfg, &fieldError{f.name, err}
			}
		}
		return cfg, err
	}
	return cfg, nil
}

// convert turns a decoded field value into what the field's setter takes; nil leaves the
// default.
func (k kind) convert(v reflect.Value) (any, error) {
	switch k {
	case kindInt:
		if v.CanInt() {
			return v.Int(), nil
		}
		return nil, fmt.Errorf("a %s where an integer (INT64) belongs", v.Type())
	case kindBool:
		if v.Kind() == reflect.Bool {
			return v.Bool(), nil
		}
		return nil, fmt.Errorf("a %s where a boolean belongs", v.Type())
	case kindDouble:
		if v.CanFloat() {
			return v.Float(), nil
		}
		if v.CanInt() {
			return float64(v.Int()), nil
		}
		return nil, fmt.Errorf("a %s where a number (DOUBLE) belongs", v.Type())
	}
	if v.Kind() != reflect.String {
		return nil, fmt.Errorf("a %s where a string belongs", v.Type())
	}
	s := v.String()
	switch k {
	case kindTime:
		if s == "" {
			return nil, nil
		}
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return nil, fmt.Errorf("%q is not an RFC 3339 instant such as 2026-01-02T15:04:05Z", s)
		}
		return t, nil
	case kindDuration:
		if s == "" {
			return nil, nil
		}
		d, err := time.ParseDuration(s)
		if err != nil {
			return nil, fmt.Errorf("%q is not a duration such as 90s or 2m30s", s)
		}
		return d, nil
	}
	return s, nil
}

// fieldNames lists the configuration's field names, for messages.
func fieldNames() []string {
	out := make([]string, len(fields))
	for i, f := range fields {
		out[i] = f.name
	}
	return out
}
