"""s3io's reading transforms for Python pipelines, expanded by the Go expansion service.

Each transform is a root (apply it to the pipeline) whose records are read by s3io in a Go
environment; the PCollections it returns are ordinary ones that Python transforms consume.
"""

import datetime
from typing import Any, Dict, NamedTuple, Optional, Union

import apache_beam as beam
from apache_beam import pvalue
from apache_beam.transforms.external import ExternalTransform
from apache_beam.transforms.external import SchemaAwareExternalTransform

from s3io_beam import _config
from s3io_beam._service import ServiceLike, as_service

READ_URN = 'beam:transform:spate-io:s3io:read:v1'
READ_WITH_FAILURES_URN = 'beam:transform:spate-io:s3io:read_with_failures:v1'
READ_WITH_POSITIONS_URN = 'beam:schematransform:spate-io:s3io:read_with_positions:v1'

Instant = Union[datetime.datetime, str]
Duration = Union[datetime.timedelta, str]


class _S3ioRead(beam.PTransform):
  """The configuration every s3io read takes; subclasses say what they output."""

  def __init__(
      self,
      bucket: str,
      prefix: Optional[str] = '',
      *,
      framer: Optional[str] = None,
      compression: Optional[str] = None,
      match: Optional[str] = None,
      start_after: Optional[str] = None,
      modified_after: Optional[Instant] = None,
      modified_before: Optional[Instant] = None,
      skip_archived: Optional[bool] = None,
      versions_pinned: Optional[bool] = None,
      versions_as_of: Optional[Instant] = None,
      endpoint: Optional[str] = None,
      region: Optional[str] = None,
      use_path_style: Optional[bool] = None,
      expected_bucket_owner: Optional[str] = None,
      requester_pays: Optional[bool] = None,
      max_attempts: Optional[int] = None,
      read_timeout: Optional[Duration] = None,
      max_requests_per_second: Optional[float] = None,
      verify_checksums: Optional[bool] = None,
      skip_header_records: Optional[int] = None,
      max_record_bytes: Optional[int] = None,
      list_parallelism: Optional[int] = None,
      split_target_bytes: Optional[int] = None,
      max_split_members: Optional[int] = None,
      part_bytes: Optional[int] = None,
      max_requests_in_flight: Optional[int] = None,
      read_buffer_bytes: Optional[int] = None,
      worker_buffer_bytes: Optional[int] = None,
      expansion_service: ServiceLike = None,
      label: Optional[str] = None):
    """Configures a read of every object under s3://bucket/prefix.

    Every argument but bucket is optional; None (the default) leaves the field to s3io's
    default, which ``go doc github.com/spate-io/beam-s3/s3io Config`` describes with its
    rules. The values are checked by the expansion service when the pipeline is built: a
    wrong one raises there, naming the field, with s3io's own message.

    Credentials never go in the configuration: s3io's workers take them from their own
    environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_PROFILE,
    AWS_REGION, an instance role...), the environment of the runner process that starts
    s3io-boot.

    Args:
      bucket: the S3 bucket (required).
      prefix: the keys to read; '' reads the whole bucket.
      framer: how decompressed bytes are cut into records: 'lines' (the default),
        'ndjson', 'u32be', 'csv', 'json-array'.
      compression: 'auto' (the default: from each object's name and magic bytes), 'none',
        or one codec for every object: 'gzip', 'zstd', 'bzip2', 'xz', 'lz4', 'snappy',
        'zlib', 'deflate', 'brotli'.
      match: a glob the whole key must match ('*', '?', '**', '[...]').
      start_after: read only the keys that sort strictly after this one.
      modified_after: read only objects last modified at or after this instant (an aware
        datetime, or an RFC 3339 str).
      modified_before: read only objects last modified before this instant.
      skip_archived: leave objects in GLACIER or DEEP_ARCHIVE (not restored) out of the
        plan instead of failing each as 'archived'.
      versions_pinned: on a versioned bucket, plan the latest version of each key and pin
        every read to its version ID.
      versions_as_of: on a versioned bucket, read the version of each key current at this
        instant (an aware datetime or an RFC 3339 str).
      endpoint: the URL of an S3-compatible service (http or https); None uses AWS S3.
      region: the bucket's region; None takes the worker's AWS configuration.
      use_path_style: address the bucket as endpoint/bucket, as most S3-compatible
        servers need.
      expected_bucket_owner: a 12-digit AWS account ID the bucket must belong to.
      requester_pays: acknowledge that this job pays for a requester-pays bucket.
      max_attempts: attempts per request, and ranged GETs that resume one object's body
        (default 8).
      read_timeout: how long a GET may wait for headers or its body's next bytes (a
        datetime.timedelta or a Go duration str such as '90s'; default 1 minute).
      max_requests_per_second: a cap on one worker process's requests (0: none).
      verify_checksums: check every object read whole against the checksum S3 stores.
      skip_header_records: records dropped at the start of every object and archive entry.
      max_record_bytes: the longest record allowed (default 16 MiB).
      list_parallelism: LIST requests in flight while planning (default 16).
      split_target_bytes: the mean stored size of a split descriptor (default 64 MiB).
      max_split_members: the most objects in one descriptor (default 1024).
      part_bytes: the size of one ranged GET.
      max_requests_in_flight: GETs one worker keeps in flight.
      read_buffer_bytes: the bytes one reader holds ahead of what it emits.
      worker_buffer_bytes: the bytes all readers of one worker process hold.
      expansion_service: the s3io expansion service: None finds the binary (the
        S3IO_EXPANSION environment variable, the one installed with this package, then
        s3io-expansion on PATH) and starts it; a 'host:port' str is a running service; any
        other str is the path of the binary to start; or an S3ioExpansionService.
      label: the transform's label in the pipeline.
    """
    super().__init__(label)
    fields = {
        name: value
        for name, value in locals().items()
        if name in _config.FIELD_TYPES
    }
    # Checked and converted now, so that a wrong type fails where the transform is built.
    self._fields: Dict[str, Any] = _config.normalize(fields)
    self._service = as_service(expansion_service)

  def _external(self, urn: str) -> ExternalTransform:
    return ExternalTransform(urn, _config.payload(self._fields), self._service)


class ReadFromS3(_S3ioRead):
  """Reads the records of every object under s3://bucket/prefix with s3io.

  Returns a PCollection of bytes, one element per record (a line, an NDJSON document, a
  CSV record...). The job fails after reading if any object could not be read whole
  (deleted or overwritten during the job, corrupt, archived...), naming each; use
  ReadFromS3WithFailures to get those as rows and let the job succeed.

  Example::

    with beam.Pipeline(options=options) as p:
      records = p | ReadFromS3('my-bucket', 'logs/2026/', framer='ndjson')
      records | beam.Map(json.loads) | ...
  """

  def expand(self, pbegin: pvalue.PBegin) -> pvalue.PCollection:
    return pbegin | self._external(READ_URN)


class ReadResult(NamedTuple):
  """What ReadFromS3WithFailures returns: records, and the objects that failed."""
  records: pvalue.PCollection
  failures: pvalue.PCollection


class ReadFromS3WithFailures(_S3ioRead):
  """Reads like ReadFromS3, and returns the objects that failed as rows.

  Returns a ReadResult, a NamedTuple ``(records, failures)``: records is a PCollection of
  bytes; failures a PCollection of Beam Rows, one per object that could not be read whole,
  with the fields bucket, key, etag, version_id, split_id (str), member (int: the object's
  place in its split), first_record (int: the records before it were emitted), reason (str:
  'deleted', 'overwritten', 'corrupt', 'archived', 'unreadable'...), message (str) and
  attempts (int). The job succeeds whatever failed.

  Example::

    records, failures = p | ReadFromS3WithFailures('my-bucket', 'logs/')
    failures | beam.Map(lambda f: f'{f.key}: {f.reason}: {f.message}') | WriteToText(...)
  """

  # Returns a ReadResult; not annotated so, since Beam reads the annotation as an output
  # type hint, and warns that a NamedTuple is none.
  def expand(self, pbegin: pvalue.PBegin):
    outputs = pbegin | self._external(READ_WITH_FAILURES_URN)
    return ReadResult(records=outputs['records'], failures=outputs['failures'])


class ReadFromS3WithPositions(_S3ioRead):
  """Reads like ReadFromS3, each record as a Row saying where it was read.

  Returns a PCollection of Beam Rows with the fields split_id (str), key (str), member
  (int), index (int: the record's place in its object, counting on across an archive's
  entries), entry (str: the archive entry, '' for a plain object) and record (bytes). The
  same plan gives every record the same (split_id, member, index) in every run, whatever
  the runner split, so downstream can deduplicate on them. It is the schema transform
  ``beam:schematransform:spate-io:s3io:read_with_positions:v1``, the one Beam YAML's
  ReadFromS3WithPositions uses.
  """

  def expand(self, pbegin: pvalue.PBegin) -> pvalue.PCollection:
    return pbegin | SchemaAwareExternalTransform(
        READ_WITH_POSITIONS_URN,
        self._service,
        rearrange_based_on_discovery=True,
        **self._fields)
