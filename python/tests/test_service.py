"""Which expansion service the wrapper uses, and what it says when there is none."""

import os
import stat
import tempfile
import unittest
from unittest import mock

from s3io_beam import _service


class FindServiceTest(unittest.TestCase):

  def setUp(self):
    self.dir = tempfile.mkdtemp()
    self.binary = os.path.join(self.dir, 's3io-expansion')
    with open(self.binary, 'w') as f:
      f.write('#!/bin/sh\n')
    os.chmod(self.binary, stat.S_IRWXU)
    env = {k: v for k, v in os.environ.items() if k != _service.ENV_VAR}
    env['PATH'] = self.dir + os.pathsep + '/usr/bin:/bin'
    self.env = mock.patch.dict(os.environ, env, clear=True)
    self.env.start()
    self.addCleanup(self.env.stop)
    # The package's own binary, if the installed package has one, would come before PATH.
    packaged = mock.patch.object(
        _service, 'packaged_binary', return_value=os.path.join(self.dir, 'none'))
    packaged.start()
    self.addCleanup(packaged.stop)

  def test_an_address_is_used_as_it_is(self):
    self.assertEqual(_service.find_service('localhost:8097'), 'localhost:8097')
    self.assertEqual(_service.find_service('10.0.0.7:50000'), '10.0.0.7:50000')

  def test_the_argument_then_the_environment_then_path(self):
    other = os.path.join(self.dir, 'other')
    with open(other, 'w') as f:
      f.write('')
    os.chmod(other, stat.S_IRWXU)
    os.environ[_service.ENV_VAR] = other
    self.assertEqual(_service.find_service(self.binary), self.binary)
    self.assertEqual(_service.find_service(), other)
    del os.environ[_service.ENV_VAR]
    self.assertEqual(_service.find_service(), self.binary)

  def test_a_missing_binary_says_how_to_build_it(self):
    os.environ['PATH'] = '/nonexistent'
    with self.assertRaisesRegex(FileNotFoundError, 'go build -o DIR/s3io-expansion'):
      _service.find_service()
    with self.assertRaisesRegex(FileNotFoundError, r'(?s)expansion_service=.*/nope.*go build'):
      _service.find_service('/nope/s3io-expansion')

  def test_a_binary_is_started_on_a_free_port_with_its_flags(self):
    s = _service.S3ioExpansionService(
        self.binary, environment_type='EXTERNAL', environment_config='localhost:50000')
    self.assertEqual(
        s.command(), [
            self.binary, '--port={{PORT}}', '--environment_type=EXTERNAL',
            '--environment_config=localhost:50000'
        ])

  def test_flags_for_a_running_service_are_refused(self):
    with self.assertRaisesRegex(ValueError, 'running one at localhost:8097'):
      _service.S3ioExpansionService('localhost:8097', environment_type='DOCKER').resolve()


if __name__ == '__main__':
  unittest.main()
