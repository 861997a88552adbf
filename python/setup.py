"""Builds s3io's Go binaries into the package when it is installed from the repository.

``pip install ./python`` (pip builds a local directory in place, so ../go.mod is there)
runs ``go build`` for cmd/s3io-expansion and cmd/s3io-boot into s3io_beam/_bin/, where the
wrapper finds the service and the service finds s3io-boot (next to itself). Without go on
PATH, outside the repository, or with S3IO_BEAM_SKIP_GO=1, the package installs without
them and the wrapper takes the service from S3IO_EXPANSION or PATH instead. A go build
that fails fails the install: a package silently missing its service would fail later, at
pipeline construction, far from the cause.
"""

import os
import shutil
import subprocess
import sys

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.command.bdist_wheel import bdist_wheel

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
MODULE = 'module github.com/spate-io/beam-s3'
BINARIES = ('s3io-expansion', 's3io-boot')


def _repo_root():
  """The repository root when this tree is in it, else None (an sdist, a copy)."""
  try:
    with open(os.path.join(REPO, 'go.mod'), encoding='utf-8') as f:
      first = f.readline().strip()
  except OSError:
    return None
  return REPO if first == MODULE else None


def _say(msg):
  # setuptools' announce is below pip's verbosity; this shows with pip install -v.
  print(msg, file=sys.stderr, flush=True)


def _go():
  if os.environ.get('S3IO_BEAM_SKIP_GO'):
    return None
  return shutil.which('go')


class BuildPyWithGo(build_py):
  """build_py that also builds the Go binaries into the package's _bin directory."""

  def run(self):
    # build/ outlives an install: files and binaries of an earlier one must not be packaged
    # again.
    shutil.rmtree(os.path.join(self.build_lib, 's3io_beam'), ignore_errors=True)
    super().run()
    out = os.path.join(os.path.abspath(self.build_lib), 's3io_beam', '_bin')
    repo, go = _repo_root(), _go()
    if repo is None or go is None:
      _say(
          's3io-beam: not building the Go binaries (%s); the wrapper will look for '
          's3io-expansion in S3IO_EXPANSION or PATH' %
          ('S3IO_BEAM_SKIP_GO is set' if os.environ.get('S3IO_BEAM_SKIP_GO') else
           'go is not on PATH' if go is None else f'{REPO} is not the repository'))
      return
    os.makedirs(out, exist_ok=True)
    for name in BINARIES:
      if not os.path.isdir(os.path.join(repo, 'cmd', name)):
        _say(f's3io-beam: {repo}/cmd/{name} is missing; not building it')
        continue
      _say(f's3io-beam: go build -o {out}/{name} ./cmd/{name}')
      subprocess.run([go, 'build', '-o', os.path.join(out, name), f'./cmd/{name}'],
                     cwd=repo,
                     check=True)


class PlatformWheel(bdist_wheel):
  """Tags the wheel with the platform: it holds native binaries, though no Python ABI."""

  def finalize_options(self):
    super().finalize_options()
    self.root_is_pure = _repo_root() is None or _go() is None

  def get_tag(self):
    python, abi, plat = super().get_tag()
    if not self.root_is_pure:
      python, abi = 'py3', 'none'
    return python, abi, plat


setup(cmdclass={'build_py': BuildPyWithGo, 'bdist_wheel': PlatformWheel})
