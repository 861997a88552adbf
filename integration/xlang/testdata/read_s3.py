"""Reads s3://BUCKET/PREFIX with s3io from a Python pipeline and writes every record, hex.

The records cross from s3io's Go environment as bytes; Python's own transforms (Map,
WriteToText) run in Python's. Hex lines keep each record's bytes exact whatever they hold.

  python read_s3.py --bucket=B --prefix=P --endpoint=URL --out=DIR/records \
      [--failures_out=DIR/failures] [--metrics_out=FILE] \
      --runner=PortableRunner --job_endpoint=localhost:8099 --environment_type=LOOPBACK

With --failures_out it uses ReadFromS3WithFailures and writes each failure as a JSON line.
--config takes a JSON object of more ReadFromS3 arguments (s3io's configuration fields).
"""

import argparse
import json
import logging

import apache_beam as beam
from apache_beam.metrics.metric import MetricsFilter
from apache_beam.options.pipeline_options import PipelineOptions

from s3io_beam import ReadFromS3, ReadFromS3WithFailures


def failure_json(f) -> str:
  return json.dumps({
      'bucket': f.bucket,
      'key': f.key,
      'etag': f.etag,
      'version_id': f.version_id,
      'split_id': f.split_id,
      'member': f.member,
      'first_record': f.first_record,
      'reason': f.reason,
      'message': f.message,
      'attempts': f.attempts,
  }, sort_keys=True)


def main(argv=None):
  parser = argparse.ArgumentParser()
  parser.add_argument('--bucket', required=True)
  parser.add_argument('--prefix', default='')
  parser.add_argument('--endpoint')
  parser.add_argument('--out', required=True)
  parser.add_argument('--failures_out')
  parser.add_argument('--metrics_out')
  parser.add_argument('--config', type=json.loads, default={})
  args, pipeline_args = parser.parse_known_args(argv)

  read_args = dict(
      bucket=args.bucket,
      prefix=args.prefix,
      endpoint=args.endpoint,
      use_path_style=True,
      **args.config)
  with beam.Pipeline(options=PipelineOptions(pipeline_args)) as p:
    if args.failures_out:
      records, failures = p | ReadFromS3WithFailures(**read_args)
      (failures
       | 'FailureJSON' >> beam.Map(failure_json)
       | 'WriteFailures' >> beam.io.WriteToText(args.failures_out))
    else:
      records = p | ReadFromS3(**read_args)
    (records
     | 'Hex' >> beam.Map(lambda record: record.hex())
     | 'WriteRecords' >> beam.io.WriteToText(args.out))

  if args.metrics_out:
    counters = p.result.metrics().query(MetricsFilter().with_namespace('s3io'))['counters']
    values = {}
    for c in counters:
      value = c.committed if c.committed is not None else c.attempted
      values[c.key.metric.name] = values.get(c.key.metric.name, 0) + (value or 0)
    with open(args.metrics_out, 'w', encoding='utf-8') as f:
      json.dump(values, f, sort_keys=True)


if __name__ == '__main__':
  logging.getLogger().setLevel(logging.INFO)
  main()
