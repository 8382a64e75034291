"""python3 -m keel ARGS: the keel command line (same arguments, output and exit codes)."""

import sys

from ._keel import cli_main


def main() -> int:
    return cli_main(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
