"""python -m s3io_beam: prints the YAML provider file's path and the service this would use."""

import sys

from s3io_beam import PROVIDERS_YAML, find_service


def main() -> int:
  print(f'providers: {PROVIDERS_YAML}')
  try:
    print(f'expansion service: {find_service()}')
  except (FileNotFoundError, PermissionError) as e:
    print(f'expansion service: {e}', file=sys.stderr)
    return 1
  return 0


if __name__ == '__main__':
  sys.exit(main())
