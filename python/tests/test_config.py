"""The configuration row: exact Beam types, conversions, and what is refused before expansion."""

import datetime
import unittest

from apache_beam.coders import RowCoder
from apache_beam.portability.api import external_transforms_pb2, schema_pb2

from s3io_beam import _config
from s3io_beam import ReadFromS3

UTC = datetime.timezone.utc


def decode(payload: bytes):
  msg = external_transforms_pb2.ExternalConfigurationPayload.FromString(payload)
  types = {f.name: (f.type.atomic_type, f.type.nullable) for f in msg.schema.fields}
  return types, RowCoder(msg.schema).decode(msg.payload)


class PayloadTest(unittest.TestCase):

  def test_each_field_has_its_exact_type_and_none_is_left_out(self):
    types, row = decode(
        _config.payload(
            dict(
                bucket='b',
                prefix=None,
                use_path_style=True,
                max_attempts=3,
                max_requests_per_second=2,
                framer='ndjson',
                read_timeout=datetime.timedelta(seconds=90))))
    A = schema_pb2.AtomicType
    self.assertEqual(
        types, {
            'bucket': (A.STRING, False),
            'max_attempts': (A.INT64, True),
            'use_path_style': (A.BOOLEAN, True),
            'max_requests_per_second': (A.DOUBLE, True),
            'framer': (A.STRING, True),
            'read_timeout': (A.STRING, True),
        })
    self.assertEqual(row.max_requests_per_second, 2.0)
    self.assertEqual(row.read_timeout, '90s')
    self.assertIs(row.use_path_style, True)

  def test_every_contract_field_is_known(self):
    self.assertEqual(
        set(_config.FIELD_TYPES), {
            'bucket', 'prefix', 'match', 'start_after', 'modified_after', 'modified_before',
            'skip_archived', 'versions_pinned', 'versions_as_of', 'region', 'endpoint',
            'use_path_style', 'expected_bucket_owner', 'requester_pays', 'max_attempts',
            'read_timeout', 'max_requests_per_second', 'verify_checksums', 'framer',
            'compression', 'skip_header_records', 'max_record_bytes', 'list_parallelism',
            'split_target_bytes', 'max_split_members', 'part_bytes', 'max_requests_in_flight',
            'read_buffer_bytes', 'worker_buffer_bytes'
        })

  def test_wrong_types_are_refused_naming_the_field(self):
    for fields, name in [
        (dict(bucket='b', max_attempts=True), 'max_attempts'),
        (dict(bucket='b', max_attempts='3'), 'max_attempts'),
        (dict(bucket='b', use_path_style=1), 'use_path_style'),
        (dict(bucket='b', endpoint=8080), 'endpoint'),
        (dict(bucket='b', max_requests_per_second='fast'), 'max_requests_per_second'),
        (dict(bucket='b', modified_after=20260101), 'modified_after'),
        (dict(bucket='b', read_timeout=90), 'read_timeout'),
        (dict(bucket='b', compresion='gzip'), 'compresion'),
        (dict(prefix='p'), 'bucket'),
    ]:
      with self.subTest(name=name), self.assertRaisesRegex(TypeError, name):
        _config.normalize(fields)


class ConversionTest(unittest.TestCase):

  def test_instants_are_rfc3339_utc(self):
    plus2 = datetime.timezone(datetime.timedelta(hours=2))
    self.assertEqual(
        _config.rfc3339(datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=plus2), 'f'),
        '2026-01-02T01:04:05Z')
    self.assertEqual(
        _config.rfc3339(datetime.datetime(2026, 1, 2, 3, 4, 5, 120000, tzinfo=UTC), 'f'),
        '2026-01-02T03:04:05.120000Z')
    self.assertEqual(_config.rfc3339('2026-01-02T00:00:00+01:00', 'f'), '2026-01-02T00:00:00+01:00')

  def test_a_naive_datetime_is_refused(self):
    with self.assertRaisesRegex(ValueError, 'modified_before.*no time zone'):
      _config.normalize(dict(bucket='b', modified_before=datetime.datetime(2026, 1, 2)))

  def test_durations_are_go_durations(self):
    td = datetime.timedelta
    self.assertEqual(_config.go_duration(td(minutes=2), 'f'), '120s')
    self.assertEqual(_config.go_duration(td(seconds=1, milliseconds=500), 'f'), '1500000us')
    self.assertEqual(_config.go_duration(td(seconds=-1), 'f'), '-1s')
    self.assertEqual(_config.go_duration('1m30s', 'f'), '1m30s')


class TransformTest(unittest.TestCase):

  def test_a_wrong_type_fails_where_the_transform_is_built(self):
    with self.assertRaisesRegex(TypeError, 'split_target_bytes'):
      ReadFromS3('b', 'p/', split_target_bytes=1.5, expansion_service='localhost:1')

  def test_the_transform_keeps_its_fields(self):
    t = ReadFromS3('b', 'p/', framer='ndjson', expansion_service='localhost:1')
    self.assertEqual(t._fields, {'bucket': 'b', 'prefix': 'p/', 'framer': 'ndjson'})


if __name__ == '__main__':
  unittest.main()
