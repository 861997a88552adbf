"""Read S3 with s3io from Python and Beam YAML pipelines.

s3io (https://github.com/spate-io/beam-s3) is a Beam Go SDK transform that reads everything
under an S3 bucket and prefix: each object pinned to the ETag it was planned with, compressed
objects (gzip, zstd, bzip2, xz, ...) and archive entries (tar, zip) decoded, large objects
read in segments, objects that change or vanish during the job quarantined and named. This
package serves it to Python through Beam's cross-language expansion: the transforms here
are expanded by s3io's Go expansion service (s3io-expansion) and run in a Go environment
(s3io-boot), while the rest of the pipeline stays in Python.

    import apache_beam as beam
    from s3io_beam import ReadFromS3

    with beam.Pipeline(options=options) as p:
      (p
       | ReadFromS3('my-bucket', 'logs/2026/', framer='ndjson')
       | beam.Map(json.loads)
       | ...)

The pipeline must run on a portable runner (Flink, Prism, Dataflow Runner v2...): the
DirectRunner cannot run Go transforms.
"""

import os

from s3io_beam._config import S3ReadConfig
from s3io_beam._service import S3ioExpansionService, find_service
from s3io_beam.transforms import (
    ReadFromS3,
    ReadFromS3WithFailures,
    ReadFromS3WithPositions,
    ReadResult,
)

#: The Beam YAML provider file for ReadFromS3, ReadFromS3WithFailures and
#: ReadFromS3WithPositions, for a pipeline's ``providers: [{include: ...}]``.
PROVIDERS_YAML = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'providers.yaml')

__all__ = [
    'PROVIDERS_YAML',
    'ReadFromS3',
    'ReadFromS3WithFailures',
    'ReadFromS3WithPositions',
    'ReadResult',
    'S3ReadConfig',
    'S3ioExpansionService',
    'find_service',
]
