"""The Python floor of BenchmarkCrossLanguage: the same records made in Python.

The pipeline makes N records of the benchmark's average size in a Python DoFn, passes them
through the runner (a Reshuffle, as s3io's records pass from the Go worker to the Python
one) and does count.py's per-record work. What count.py takes beyond this is the cost of
reading through s3io and of the language boundary.
"""
import sys

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions


def main(job_endpoint, n, size, out):
  n, size = int(n), int(size)
  record = b'{"obj":1,"n":1,"pad":"' + b"x" * max(0, size - 23) + b'"}'

  def make(_):
    for _ in range(n):
      yield record

  opts = PipelineOptions([
      "--runner=PortableRunner", "--job_endpoint=" + job_endpoint,
      "--environment_type=LOOPBACK"
  ])
  with beam.Pipeline(options=opts) as p:
    (
        p
        | beam.Impulse()
        | beam.FlatMap(make)
        | beam.Reshuffle()
        | beam.Map(lambda r: (1, len(r)))
        | beam.CombineGlobally(lambda rs: tuple(map(sum, zip(*rs))) or (0, 0))
        | beam.Map(lambda t: "%d %d" % t)
        | beam.io.WriteToText(out, shard_name_template=""))


if __name__ == "__main__":
  main(*sys.argv[1:5])
