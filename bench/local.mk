# Benchmarks (included from Makefile.am). Built by `make bench`, never by `make check`:
# speed is measured and reported, not asserted.
EXTRA_PROGRAMS = bench/placement_bench bench/priority_bench
bench_placement_bench_SOURCES = bench/placement_bench.cc
bench_placement_bench_CXXFLAGS = $(AM_CXXFLAGS) -O2
bench_placement_bench_LDADD = src/core/libmlsched_core.la
bench_priority_bench_SOURCES = bench/priority_bench.cc
bench_priority_bench_CXXFLAGS = $(AM_CXXFLAGS) -O2
bench_priority_bench_LDADD = src/core/libmlsched_core.la
CLEANFILES = $(EXTRA_PROGRAMS)

bench: $(EXTRA_PROGRAMS)
.PHONY: bench

# The replay's unit tests (metric math, topology, the representative trace window)
# do run in `make check`: they check arithmetic and choices, not speed.
TESTS += tests/tools/check-replay.sh
