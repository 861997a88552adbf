"""Keeps this process's metric short IDs apart from the Go worker's, for prism.

SDK harnesses name each metric in their reports by a short ID of their own choosing, and a
runner asks the harness that sent an unknown one what it means. prism (Beam 2.78) keeps one
table of short IDs per job, not per harness, so when a Python harness and s3io's Go harness
both report, their IDs collide: both count from 1 (Python as hex, Go in base 36), and prism
decodes one harness's payload as the other's metric, which fails the job ("error decoding
metrics beam:metric:sampled_byte_size:v1 ... EOF") or misattributes counts.

Python harnesses in this process (LOOPBACK workers, which is how a pipeline runs on a local
job server) count their short IDs from 2**40 instead: hex IDs of 11 digits, which
the Go harness's base-36 count would reach only after 36**10 metrics. IDs are opaque to
every runner, so this changes nothing elsewhere.
"""

import functools

_START = 1 << 40


def _offset(cache) -> None:
  # IDs already given out keep their values: the harness has reported them.
  with cache._lock:
    if cache._last_short_id < _START:
      cache._last_short_id += _START


def install() -> None:
  """Makes the harness's short ID cache, and any made later, count from 2**40."""
  try:
    from apache_beam.runners.worker import sdk_worker
  except ImportError:  # a Beam without the Python harness: nothing to keep apart
    return
  cache = getattr(sdk_worker, 'ShortIdCache', None)
  if cache is None or getattr(cache, '_s3io_offset', False):
    return
  # The one every SdkHarness of the process uses, made when sdk_worker was imported.
  shared = getattr(sdk_worker, 'SHORT_ID_CACHE', None)
  if isinstance(shared, cache) and hasattr(shared, '_last_short_id'):
    _offset(shared)
  init = cache.__init__

  @functools.wraps(init)
  def offset_init(self, *args, **kwargs):
    init(self, *args, **kwargs)
    if hasattr(self, '_last_short_id'):
      _offset(self)

  cache.__init__ = offset_init
  cache._s3io_offset = True
