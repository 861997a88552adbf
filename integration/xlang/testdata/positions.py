"""Reads s3://BUCKET/PREFIX with ReadFromS3WithPositions and writes a line per record:
key, entry, member, index and the record's bytes in hex, tab-separated.

  python positions.py BUCKET PREFIX ENDPOINT OUT --runner=PortableRunner ...
"""

import sys

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions

from s3io_beam import ReadFromS3WithPositions


def line(row) -> str:
  return '\t'.join([row.key, row.entry, str(row.member), str(row.index), row.record.hex()])


def main(bucket, prefix, endpoint, out, *pipeline_args):
  with beam.Pipeline(options=PipelineOptions(list(pipeline_args))) as p:
    (p
     | ReadFromS3WithPositions(bucket, prefix, endpoint=endpoint, use_path_style=True)
     | beam.Map(line)
     | beam.io.WriteToText(out))


if __name__ == '__main__':
  main(*sys.argv[1:])
