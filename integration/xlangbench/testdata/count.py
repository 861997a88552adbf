"""Counts the records and bytes s3io reads under a prefix, from Python.

The Python half of BenchmarkCrossLanguage: the same read and the same per-record work as
the Go half (a length per record, summed), so that the difference is the language
boundary: the records cross from the Go worker to the Python one through the runner.
"""
import sys
import typing

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.transforms.external import ExternalTransform
from apache_beam.transforms.external import NamedTupleBasedPayloadBuilder


class ReadConfig(typing.NamedTuple):
  bucket: str
  prefix: typing.Optional[str]
  endpoint: typing.Optional[str]
  use_path_style: typing.Optional[bool]


def main(job_endpoint, expansion, endpoint, bucket, prefix, out):
  opts = PipelineOptions([
      "--runner=PortableRunner", "--job_endpoint=" + job_endpoint,
      "--environment_type=LOOPBACK"
  ])
  with beam.Pipeline(options=opts) as p:
    records = p | ExternalTransform(
        "beam:transform:spate-io:s3io:read:v1",
        NamedTupleBasedPayloadBuilder(
            ReadConfig(bucket, prefix, endpoint, True)),
        expansion)
    (
        records
        | beam.Map(lambda r: (1, len(r)))
        | beam.CombineGlobally(lambda rs: tuple(map(sum, zip(*rs))) or (0, 0))
        | beam.Map(lambda t: "%d %d" % t)
        | beam.io.WriteToText(out, shard_name_template=""))


if __name__ == "__main__":
  main(*sys.argv[1:7])
