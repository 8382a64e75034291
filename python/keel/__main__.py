"""python3 -m keel ARGS: the keel command line (same arguments, output and exit codes).

mem advise, kv sweep and rand with --cluster/--workers/--shards (or KEEL_CLUSTER set, or
several inputs) run as keel.dist jobs: see keel/dist/cli.py and docs/cluster.md.
"""

import sys

from ._keel import cli_main


def main() -> int:
    argv = sys.argv[1:]
    from .dist import cli as dist_cli

    if dist_cli.wants(argv):
        return dist_cli.main(argv)
    return cli_main(argv)


if __name__ == "__main__":
    sys.exit(main())
