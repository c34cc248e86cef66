#!/bin/sh
# make check: the benchmarks' own unit tests (metric math, topology, sacct fields, the
# choice of a representative trace window). No cluster and no ../shared needed.
set -e
srcdir=$(cd "$(dirname "$0")/../.." && pwd)
exec /usr/bin/python3 -m pytest -q -p no:cacheprovider "$srcdir/bench/replay" "$srcdir/bench/lib"
