"""Python harnesses in a process that imported s3io_beam name metrics apart from Go's."""

import unittest

from apache_beam.portability.api import metrics_pb2
from apache_beam.runners.worker import sdk_worker

import s3io_beam  # pylint: disable=unused-import


class ShortIdsTest(unittest.TestCase):

  def test_short_ids_start_beyond_the_go_harness_count(self):
    cache = sdk_worker.ShortIdCache()
    info = metrics_pb2.MonitoringInfo(urn='beam:metric:element_count:v1', type='beam:metrics:sum_int64:v1')
    info.labels['PCOLLECTION'] = 'p'
    self.assertEqual(cache.get_short_id(info), '10000000001')
    self.assertEqual(cache.get_short_id(info), '10000000001')

  def test_the_harness_cache_made_at_import_is_offset_too(self):
    info = metrics_pb2.MonitoringInfo(urn='beam:metric:element_count:v1', type='beam:metrics:sum_int64:v1')
    info.labels['PCOLLECTION'] = 'shared-cache-test'
    self.assertGreaterEqual(int(sdk_worker.SHORT_ID_CACHE.get_short_id(info), 16), 1 << 40)


if __name__ == '__main__':
  unittest.main()
