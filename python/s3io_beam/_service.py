"""Finding and starting s3io's Go expansion service.

The service is one Go program, ``s3io-expansion``, that serves Beam's ExpansionService and
ArtifactRetrievalService on a port. It is started the way Beam starts its Java expansion
services: by ``apache_beam.utils.subprocess_server.SubprocessServer``, on a free port, shared
by every transform expanded within one ``with beam.Pipeline() as p:`` block and stopped at
its end.
"""

import os
import shutil
from typing import Dict, List, Optional, Sequence, Union

import grpc
from apache_beam.transforms.external import ExpansionAndArtifactRetrievalStub
from apache_beam.utils import subprocess_server

BINARY = 's3io-expansion'
ENV_VAR = 'S3IO_EXPANSION'

_BUILD_HINT = (
    'build it from the repository (https://github.com/spate-io/beam-s3) with\n'
    '  go build -o DIR/s3io-expansion ./cmd/s3io-expansion && '
    'go build -o DIR/s3io-boot ./cmd/s3io-boot\n'
    f'and set {ENV_VAR}=DIR/s3io-expansion, put DIR on PATH, or reinstall this package with '
    '`pip install ./python` from the repository with go on PATH, which builds both into it')


def packaged_binary() -> str:
  """The path where ``pip install ./python`` puts the service when go was on PATH."""
  return os.path.join(os.path.dirname(os.path.abspath(__file__)), '_bin', BINARY)


def is_address(value: str) -> bool:
  """Whether value is a running service's address ('host:port') rather than a binary."""
  return bool(subprocess_server.is_service_endpoint(value)) and not os.path.exists(value)


def find_service(explicit: Optional[str] = None) -> str:
  """Returns the address or binary of the expansion service to use.

  In order: explicit (an address 'host:port' is used as it is; anything else is a path to
  the binary), the environment variable S3IO_EXPANSION (the same), the binary this package
  was installed with, then ``s3io-expansion`` on PATH. Raises FileNotFoundError saying how
  to build it when there is none.
  """
  for source, value in (('expansion_service', explicit), (ENV_VAR, os.environ.get(ENV_VAR))):
    if not value:
      continue
    if is_address(value):
      return value
    if not os.path.isfile(value):
      raise FileNotFoundError(
          f'{source}={value!r} is neither a host:port address nor a file; {_BUILD_HINT}')
    if not os.access(value, os.X_OK):
      raise PermissionError(f'{source}={value!r} is not executable')
    return value
  packaged = packaged_binary()
  if os.access(packaged, os.X_OK):
    return packaged
  on_path = shutil.which(BINARY)
  if on_path:
    return on_path
  raise FileNotFoundError(
      f's3io expansion service not found: no expansion_service argument, no {ENV_VAR} in the '
      f'environment, no {packaged} and no {BINARY} on PATH; {_BUILD_HINT}')


class S3ioExpansionService:
  """s3io's expansion service: a running one at an address, or a binary started on demand.

  Pass it as ``expansion_service`` to ReadFromS3 (or to Beam's ExternalTransform) to choose
  the service or the environment its transforms run in; a str is also accepted there. Used
  as a context manager it yields the stub Beam's ExternalTransform calls. A binary is
  started with ``--port={{PORT}}`` and the extra arguments, by Beam's SubprocessServer, so
  that within ``with beam.Pipeline() as p:`` one process serves every expansion.

  Args:
    service: a 'host:port' address or a path to the s3io-expansion binary; None finds one
      as find_service does.
    environment_type: the environment the service gives s3io's transforms: 'PROCESS' (the
      service's default: the runner's worker host runs s3io-boot), 'EXTERNAL' (a worker
      pool, ``s3io-boot --worker_pool``) or 'DOCKER'. Only for a binary this starts.
    environment_config: for PROCESS the path of s3io-boot on the worker host (default: next
      to the s3io-expansion binary), for EXTERNAL the worker pool's host:port, for DOCKER
      the image. Only for a binary this starts.
    extra_args: more flags for a binary this starts.
  """

  def __init__(
      self,
      service: Optional[str] = None,
      *,
      environment_type: Optional[str] = None,
      environment_config: Optional[str] = None,
      extra_args: Sequence[str] = ()):
    self._service = service
    self._args: List[str] = []
    if environment_type:
      self._args.append(f'--environment_type={environment_type}')
    if environment_config:
      self._args.append(f'--environment_config={environment_config}')
    self._args.extend(extra_args)
    self._resolved: Optional[str] = None
    self._server: Optional[subprocess_server.SubprocessServer] = None
    self._count = 0
    self._stub = None
    self._channel = None

  def resolve(self) -> str:
    """Returns the address or binary this service uses, finding it on first use."""
    if self._resolved is None:
      self._resolved = find_service(self._service)
      if self._args and is_address(self._resolved):
        raise ValueError(
            f'environment_type, environment_config and extra_args configure a service this '
            f'starts, not the running one at {self._resolved}')
    return self._resolved

  def command(self) -> List[str]:
    """The command line that starts the binary ({{PORT}} is Beam's placeholder)."""
    return [self.resolve(), '--port={{PORT}}', *self._args]

  def __enter__(self) -> ExpansionAndArtifactRetrievalStub:
    if self._count == 0:
      target = self.resolve()
      if is_address(target):
        # The service is plain gRPC; Beam's own path for an address string uses local
        # channel credentials, which only loopback addresses accept.
        self._channel = grpc.insecure_channel(
            target,
            options=[('grpc.max_receive_message_length', -1),
                     ('grpc.max_send_message_length', -1)])
        self._stub = ExpansionAndArtifactRetrievalStub(self._channel)
      else:
        self._server = subprocess_server.SubprocessServer(
            ExpansionAndArtifactRetrievalStub, self.command(), logger='S3ioExpansionService')
        self._stub = self._server.start()
    self._count += 1
    return self._stub

  def __exit__(self, *exc_info) -> None:
    self._count -= 1
    if self._count == 0:
      if self._server is not None:
        self._server.stop()
        self._server = None
      if self._channel is not None:
        self._channel.close()
        self._channel = None
      self._stub = None

  def __repr__(self) -> str:
    return f'S3ioExpansionService({self._resolved or self._service!r})'


ServiceLike = Union[None, str, S3ioExpansionService]


# One S3ioExpansionService per address or binary, so that Beam's discovery cache (keyed by
# the service object) answers each transform after the first without a call.
_services: Dict[str, S3ioExpansionService] = {}


def as_service(expansion_service: ServiceLike) -> S3ioExpansionService:
  """Returns expansion_service as an S3ioExpansionService (None finds the default one)."""
  if isinstance(expansion_service, S3ioExpansionService):
    return expansion_service
  if expansion_service is None or isinstance(expansion_service, str):
    target = find_service(expansion_service)
    if target not in _services:
      _services[target] = S3ioExpansionService(target)
    return _services[target]
  raise TypeError(
      'expansion_service: want None, a host:port address, a path to s3io-expansion or an '
      f'S3ioExpansionService, got {type(expansion_service).__name__}')

