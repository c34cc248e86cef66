# The mlsched command-line tool (included from Makefile.am).
bin_PROGRAMS = src/tools/mlsched/mlsched
src_tools_mlsched_mlsched_SOURCES = \
	src/tools/mlsched/cli.h src/tools/mlsched/main.cc \
	src/tools/mlsched/topo_cmd.cc src/tools/mlsched/topo_discover.h src/tools/mlsched/topo_discover.cc \
	src/tools/mlsched/why_cmd.cc src/tools/mlsched/history_cmd.cc \
	src/tools/mlsched/run_cmd.cc \
	src/tools/mlsched/ops_cmd.cc \
	src/tools/mlsched/pipeline_cmd.cc
src_tools_mlsched_mlsched_CPPFLAGS = $(AM_CPPFLAGS) $(RELEASE_CPPFLAGS) $(SLURM_CPPFLAGS) $(JSON_C_CFLAGS) $(HWLOC_CFLAGS)
src_tools_mlsched_mlsched_LDADD = src/tools/mlsched/libmlsched_shares.la src/core/libmlsched_pipeline.la src/core/libmlsched_core.la \
	$(SLURM_TOOL_LIBS) $(JSON_C_LIBS) $(HWLOC_LIBS)
# shares.cc alone needs Slurm's internal headers (see there): it is built apart so
# that no other tool source can reach them.
noinst_LTLIBRARIES += src/tools/mlsched/libmlsched_shares.la
src_tools_mlsched_libmlsched_shares_la_SOURCES = src/tools/mlsched/shares.cc
src_tools_mlsched_libmlsched_shares_la_CPPFLAGS = $(AM_CPPFLAGS) $(SLURM_CPPFLAGS) $(SLURM_INTERNAL_CPPFLAGS)

# `mlsched topo` against hwloc XML: the hand-written fixtures always, the
# real-machine exports of ../shared/topologies when they are there (else SKIP).
TESTS += tests/fixtures/topo/check-fixtures.sh tests/fixtures/topo/check-shared.sh
EXTRA_DIST += tests/fixtures/topo

# `mlsched run` / `mlsched ckpt done` with tests/fake-trainer, outside Slurm.
TESTS += tests/tools/check-run-ckpt.sh
# The Python hostlist module of scripts/cluster and bench/replay, against scontrol.
TESTS += tests/tools/check-hostlist.py
EXTRA_DIST += tests/tools tests/fake-trainer
