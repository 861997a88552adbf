"""The Beam YAML provider file and the callables it names."""

import inspect
import unittest

from apache_beam.yaml import yaml_provider

import s3io_beam
from s3io_beam import yaml as s3io_yaml


class ProvidersTest(unittest.TestCase):

  def test_the_packaged_file_provides_the_three_reads(self):
    providers = yaml_provider.load_providers(s3io_beam.PROVIDERS_YAML)
    self.assertEqual(len(providers), 1)
    self.assertEqual(
        set(providers[0].provided_transforms()),
        {'ReadFromS3', 'ReadFromS3WithFailures', 'ReadFromS3WithPositions'})
    for typ in providers[0].provided_transforms():
      self.assertFalse(providers[0].requires_inputs(typ, {}), typ)

  def test_the_config_schema_is_the_fields(self):
    provider = yaml_provider.load_providers(s3io_beam.PROVIDERS_YAML)[0]
    schema = provider.config_schema('ReadFromS3')
    names = [f.name for f in schema.fields]
    self.assertEqual(names[:3], ['bucket', 'prefix', 'match'])
    self.assertIn('expansion_service', names)
    described = {f.name for f in schema.fields if f.description}
    self.assertIn('compression', described)

  def test_the_callables_take_keywords_only(self):
    params = inspect.signature(s3io_yaml.read_from_s3).parameters
    self.assertIs(params['bucket'].default, inspect.Parameter.empty)
    self.assertIsNone(params['framer'].default)
    with self.assertRaisesRegex(TypeError, 'read_timout'):
      s3io_yaml.read_from_s3(bucket='b', read_timout='1s', expansion_service='localhost:1')


if __name__ == '__main__':
  unittest.main()
