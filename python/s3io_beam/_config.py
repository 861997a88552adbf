"""The configuration row every s3io transform takes, and its conversion from Python values.

The expansion service reads the row by field name and checks each field's Beam type, so the
schema is spelled out here, field by field, instead of being inferred from the values
(Python's ``int`` could be INT32 or INT64 to an inference, and ``True`` is an ``int``).
Fields left at None are left out of the row: the service applies s3io's defaults to them.
"""

import datetime
import typing
from typing import Any, Dict, NamedTuple, Optional, Union

from apache_beam.transforms.external import NamedTupleBasedPayloadBuilder


class S3ReadConfig(NamedTuple):
  """Every configuration field of s3io's reading transforms, with its Beam type.

  ``bucket`` is required; every other field is optional and, when None, left to s3io's
  default. The Go documentation of ``s3io.Config`` describes each field
  (``go doc github.com/spate-io/beam-s3/s3io Config``); the names here are its fields' names
  in snake case.
  """
  bucket: str
  prefix: Optional[str] = None
  match: Optional[str] = None
  start_after: Optional[str] = None
  modified_after: Optional[str] = None
  modified_before: Optional[str] = None
  skip_archived: Optional[bool] = None
  versions_pinned: Optional[bool] = None
  versions_as_of: Optional[str] = None
  region: Optional[str] = None
  endpoint: Optional[str] = None
  use_path_style: Optional[bool] = None
  expected_bucket_owner: Optional[str] = None
  requester_pays: Optional[bool] = None
  max_attempts: Optional[int] = None
  read_timeout: Optional[str] = None
  max_requests_per_second: Optional[float] = None
  verify_checksums: Optional[bool] = None
  framer: Optional[str] = None
  compression: Optional[str] = None
  skip_header_records: Optional[int] = None
  max_record_bytes: Optional[int] = None
  list_parallelism: Optional[int] = None
  split_target_bytes: Optional[int] = None
  max_split_members: Optional[int] = None
  part_bytes: Optional[int] = None
  max_requests_in_flight: Optional[int] = None
  read_buffer_bytes: Optional[int] = None
  worker_buffer_bytes: Optional[int] = None


# The Python type of each field once Optional is taken off: str, int (INT64), bool or float
# (DOUBLE).
FIELD_TYPES: Dict[str, type] = {
    name: next(a for a in typing.get_args(hint) if a is not type(None))
    if typing.get_origin(hint) is Union else hint
    for name, hint in typing.get_type_hints(S3ReadConfig).items()
}

# The fields that hold an instant (RFC 3339 on the wire) or a duration (a Go duration string).
_TIME_FIELDS = ('modified_after', 'modified_before', 'versions_as_of')
_DURATION_FIELDS = ('read_timeout', )


def rfc3339(value: Union[datetime.datetime, str], field: str) -> str:
  """Returns value as an RFC 3339 instant in UTC; a str is passed on as it is.

  A naive datetime is refused rather than guessed at: the same wall-clock time is a
  different instant in every zone.
  """
  if isinstance(value, str):
    return value
  if not isinstance(value, datetime.datetime):
    raise TypeError(
        f'{field}: want a datetime.datetime or an RFC 3339 str, got '
        f'{type(value).__name__} {value!r}')
  if value.tzinfo is None or value.utcoffset() is None:
    raise ValueError(
        f'{field}: {value!r} has no time zone; give an aware datetime such as '
        f'datetime.datetime(2026, 1, 2, tzinfo=datetime.timezone.utc)')
  utc = value.astimezone(datetime.timezone.utc)
  spec = 'microseconds' if utc.microsecond else 'seconds'
  return utc.replace(tzinfo=None).isoformat(timespec=spec) + 'Z'


def go_duration(value: Union[datetime.timedelta, str], field: str) -> str:
  """Returns value as a Go duration string ("90s", "1500us"); a str is passed on as it is.

  The service parses it with Go's time.ParseDuration and checks its range, so a negative
  timedelta is sent as such and refused there, naming the field.
  """
  if isinstance(value, str):
    return value
  if not isinstance(value, datetime.timedelta):
    raise TypeError(
        f'{field}: want a datetime.timedelta or a Go duration str such as "90s", got '
        f'{type(value).__name__} {value!r}')
  micros = (value.days * 86400 + value.seconds) * 1_000_000 + value.microseconds
  if micros % 1_000_000 == 0:
    return f'{micros // 1_000_000}s'
  return f'{micros}us'


def _check_type(name: str, value: Any) -> Any:
  want = FIELD_TYPES[name]
  if want is float and isinstance(value, int) and not isinstance(value, bool):
    return float(value)
  # bool is an int to Python, but a BOOLEAN is not an INT64 to the service.
  if want is int and isinstance(value, bool) or not isinstance(value, want):
    raise TypeError(f'{name}: want {want.__name__}, got {type(value).__name__} {value!r}')
  return value


def normalize(fields: Dict[str, Any]) -> Dict[str, Any]:
  """Checks and converts the given fields, and drops those that are None.

  Raises TypeError naming a field of the wrong type or one that s3io does not have; the
  values themselves are checked by the service, with s3io's own messages.
  """
  unknown = sorted(set(fields) - set(FIELD_TYPES))
  if unknown:
    raise TypeError(f'unknown s3io configuration field(s) {unknown}; known: {sorted(FIELD_TYPES)}')
  if fields.get('bucket') is None:
    raise TypeError('bucket is required')
  out = {}
  for name, value in fields.items():
    if value is None:
      continue
    if name in _TIME_FIELDS:
      value = rfc3339(value, name)
    elif name in _DURATION_FIELDS:
      value = go_duration(value, name)
    out[name] = _check_type(name, value)
  return out


def payload(fields: Dict[str, Any]) -> bytes:
  """Returns the ExternalConfigurationPayload for the given fields, normalized first.

  The row holds only the fields that are set (None ones are left out), in S3ReadConfig's
  order, each with its exact Beam type (nullable, as the service declares every field but
  bucket), so that the service sees what the caller chose and nothing else.
  """
  values = normalize(fields)
  hints = typing.get_type_hints(S3ReadConfig)
  row_type = NamedTuple(
      'S3ReadConfigRow', [(n, hints[n]) for n in S3ReadConfig._fields if n in values])
  return NamedTupleBasedPayloadBuilder(row_type(**values)).payload()
