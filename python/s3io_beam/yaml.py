"""Beam YAML transforms: ReadFromS3, ReadFromS3WithFailures and ReadFromS3WithPositions.

Each is a schema transform of the expansion service, so its outputs are Rows, as YAML
needs: ``output`` has one field, ``record`` (bytes), and ReadFromS3WithFailures also has
``failures`` (the Failure rows ReadFromS3WithFailures in Python describes). The callables
here are what ``providers.yaml`` (an inline ``python`` provider) names; YAML calls them with
the transform's ``config`` as keyword arguments.
"""

import inspect
import typing
from typing import Any, Callable, Optional

from apache_beam.transforms.external import SchemaAwareExternalTransform

from s3io_beam import _config
from s3io_beam._service import as_service
from s3io_beam.transforms import _S3ioRead

READ = 'beam:schematransform:spate-io:s3io:read:v1'
READ_WITH_FAILURES = 'beam:schematransform:spate-io:s3io:read_with_failures:v1'
READ_WITH_POSITIONS = 'beam:schematransform:spate-io:s3io:read_with_positions:v1'


def _args_doc() -> str:
  doc = inspect.getdoc(_S3ioRead.__init__) or ''
  args = doc[doc.index('Args:'):]
  return args[:args.index('      label:')].rstrip() if '      label:' in args else args


def _transform(identifier: str, name: str, summary: str) -> Callable[..., Any]:
  """Returns the YAML callable for one schema transform, its signature the config schema."""

  def create(**config: Any) -> SchemaAwareExternalTransform:
    service = as_service(config.pop('expansion_service', None))
    return SchemaAwareExternalTransform(
        identifier, service, rearrange_based_on_discovery=True, **_config.normalize(config))

  hints = typing.get_type_hints(_config.S3ReadConfig)
  params = [
      inspect.Parameter(
          n,
          inspect.Parameter.KEYWORD_ONLY,
          default=inspect.Parameter.empty if n == 'bucket' else None,
          annotation=hints[n]) for n in _config.S3ReadConfig._fields
  ]
  params.append(
      inspect.Parameter(
          'expansion_service',
          inspect.Parameter.KEYWORD_ONLY,
          default=None,
          annotation=Optional[str]))
  create.__signature__ = inspect.Signature(params)
  create.__name__ = create.__qualname__ = name
  create.__doc__ = f'{summary}\n\n{identifier}\n\n{_args_doc()}\n'
  # A root: YAML must not look for its input.
  create._yaml_requires_inputs = False
  return create


read_from_s3 = _transform(
    READ, 'read_from_s3',
    'Reads the records of every object under s3://bucket/prefix with s3io, as Rows with '
    'one field, record (bytes). The job fails after reading if an object could not be read '
    'whole.')
read_from_s3_with_failures = _transform(
    READ_WITH_FAILURES, 'read_from_s3_with_failures',
    'Reads like ReadFromS3; the objects that could not be read whole are the failures '
    'output (Rows: bucket, key, etag, version_id, split_id, member, first_record, reason, '
    'message, attempts), and the job succeeds.')
read_from_s3_with_positions = _transform(
    READ_WITH_POSITIONS, 'read_from_s3_with_positions',
    'Reads like ReadFromS3, each record as a Row with where it was read: split_id, key, '
    'member, index, entry and record (bytes).')
