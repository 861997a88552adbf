package s3io_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/spate-io/beam-s3/s3io"
)

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cfg   s3io.Config
		field string // "" when the config is valid
	}{
		{"minimal", s3io.Config{Bucket: "logs"}, ""},
		{"everything", s3io.Config{Bucket: "my.logs-2026", Prefix: "a/", Region: "eu-west-1", Endpoint: "http://127.0.0.1:9000",
			UsePathStyle: true, Framer: "ndjson", Compression: s3io.CompressionZstd, SplitTargetBytes: 1, MaxSplitMembers: 1, MaxRecordBytes: 1}, ""},
		{"empty bucket", s3io.Config{}, "Config.Bucket"},
		{"uppercase bucket", s3io.Config{Bucket: "Logs"}, "Config.Bucket"},
		{"short bucket", s3io.Config{Bucket: "ab"}, "Config.Bucket"},
		{"bucket with slash", s3io.Config{Bucket: "logs/2026"}, "Config.Bucket"},
		{"bucket as IP", s3io.Config{Bucket: "192.168.1.1"}, "Config.Bucket"},
		{"bucket with dots", s3io.Config{Bucket: "a..b"}, "Config.Bucket"},
		{"bucket ends with hyphen", s3io.Config{Bucket: "logs-"}, "Config.Bucket"},
		{"endpoint without scheme", s3io.Config{Bucket: "logs", Endpoint: "127.0.0.1:9000"}, "Config.Endpoint"},
		{"endpoint ftp", s3io.Config{Bucket: "logs", Endpoint: "ftp://host"}, "Config.Endpoint"},
		{"unknown framer", s3io.Config{Bucket: "logs", Framer: "xml"}, "Config.Framer"},
		{"unknown compression", s3io.Config{Bucket: "logs", Compression: "lzma"}, "Config.Compression"},
		{"decoder window too large", s3io.Config{Bucket: "logs", MaxDecoderWindowBytes: 4 << 30}, "Config.MaxDecoderWindowBytes"},
		{"negative header records", s3io.Config{Bucket: "logs", SkipHeaderRecords: -1}, "Config.SkipHeaderRecords"},
		{"negative split target", s3io.Config{Bucket: "logs", SplitTargetBytes: -1}, "Config.SplitTargetBytes"},
		{"negative members", s3io.Config{Bucket: "logs", MaxSplitMembers: -5}, "Config.MaxSplitMembers"},
		{"too many members", s3io.Config{Bucket: "logs", MaxSplitMembers: 1 << 21}, "Config.MaxSplitMembers"},
		{"negative record size", s3io.Config{Bucket: "logs", MaxRecordBytes: -1}, "Config.MaxRecordBytes"},
		{"huge record size", s3io.Config{Bucket: "logs", MaxRecordBytes: 1 << 31}, "Config.MaxRecordBytes"},
		{"negative batch records", s3io.Config{Bucket: "logs", BatchRecords: -1}, "Config.BatchRecords"},
		{"negative batch bytes", s3io.Config{Bucket: "logs", BatchBytes: -1}, "Config.BatchBytes"},
		{"batches over 1 GiB", s3io.Config{Bucket: "logs", BatchBytes: 2 << 30}, "Config.BatchBytes"},
		{"tiny batches", s3io.Config{Bucket: "logs", BatchRecords: 1, BatchBytes: 1}, ""},
		{"glob", s3io.Config{Bucket: "logs", Prefix: "a/", Match: "a/**/*.gz"}, ""},
		{"glob narrower than prefix", s3io.Config{Bucket: "logs", Prefix: "a/", Match: "a/b-?/*.gz"}, ""},
		{"prefix narrower than glob", s3io.Config{Bucket: "logs", Prefix: "a/b/c", Match: "a/*"}, ""},
		{"invalid glob", s3io.Config{Bucket: "logs", Match: "a/[b-"}, "Config.Match"},
		{"glob outside the prefix", s3io.Config{Bucket: "logs", Prefix: "a/", Match: "b/*"}, "Config.Match"},
		{"empty time window", s3io.Config{Bucket: "logs", ModifiedAfter: time.Unix(100, 0), ModifiedBefore: time.Unix(100, 0)}, "Config.ModifiedAfter"},
		{"open time window", s3io.Config{Bucket: "logs", ModifiedAfter: time.Unix(100, 0)}, ""},
		{"small read buffer, default part", s3io.Config{Bucket: "logs", ReadBufferBytes: 10 << 20}, ""},
		{"part larger than the read buffer allows", s3io.Config{Bucket: "logs", ReadBufferBytes: 10 << 20, PartBytes: 4 << 20}, "Config.PartBytes"},
		{"negative worker buffer", s3io.Config{Bucket: "logs", WorkerBufferBytes: -1}, "Config.WorkerBufferBytes"},
		{"worker buffer below a part", s3io.Config{Bucket: "logs", WorkerBufferBytes: 1000}, "Config.WorkerBufferBytes"},
		{"negative list parallelism", s3io.Config{Bucket: "logs", ListParallelism: -1}, "Config.ListParallelism"},
		{"huge list parallelism", s3io.Config{Bucket: "logs", ListParallelism: 1000}, "Config.ListParallelism"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			switch {
			case tc.field == "" && err != nil:
				t.Fatalf("Validate() = %v, want nil", err)
			case tc.field != "" && err == nil:
				t.Fatalf("Validate() = nil, want an error naming %s", tc.field)
			case tc.field != "" && !strings.Contains(err.Error(), tc.field):
				t.Fatalf("Validate() = %q, want it to name %s", err, tc.field)
			}
			// The field is named by type too, for callers that name settings otherwise.
			var ce *s3io.ConfigError
			if tc.field != "" && (!errors.As(err, &ce) || "Config."+ce.Field != tc.field) {
				t.Fatalf("Validate() = %#v, want a *ConfigError for %s", err, tc.field)
			}
		})
	}
}

// Bad configuration must fail while the pipeline is built, not on a worker hours later.
func TestReadPanicsAtConstructionOnBadConfig(t *testing.T) {
	defer func() {
		r := recover()
		err, ok := r.(error)
		if !ok || !strings.Contains(err.Error(), "Config.Framer") {
			t.Fatalf("recovered %v, want an error naming Config.Framer", r)
		}
	}()
	_, s := beam.NewPipelineWithRoot()
	s3io.Read(s, s3io.Config{Bucket: "logs", Framer: "no-such-framer"})
	t.Fatal("Read did not panic")
}

func TestFormatByName(t *testing.T) {
	for _, c := range []struct {
		mode      s3io.Compression
		key, want string
	}{
		{"", "a/b.log.gz", "gzip"},
		{s3io.CompressionAuto, "a/b.TGZ", "gzip"},
		{s3io.CompressionAuto, "dump.sql.bz2", "bzip2"},
		{s3io.CompressionAuto, "x.tar", "tar"},
		{s3io.CompressionAuto, "x.zip", "zip"},
		{s3io.CompressionAuto, "x.7z", "unsupported"},
		{s3io.CompressionAuto, "notes.txt.Z", "unsupported"},
		{s3io.CompressionAuto, "events.ndjson", ""}, // by magic bytes, or as stored
		{s3io.CompressionNone, "a.gz", "none"},
		{s3io.CompressionXz, "a.gz", "xz"},
	} {
		if got := s3io.FormatByName(c.mode, c.key); got != c.want {
			t.Errorf("FormatByName(%q, %q) = %q, want %q", c.mode, c.key, got, c.want)
		}
	}
}
