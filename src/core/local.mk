# Slurm-free core library (included from Makefile.am).
noinst_LTLIBRARIES += src/core/libmlsched_core.la
src_core_libmlsched_core_la_SOURCES = \
	src/core/text.h src/core/text.cc \
	src/core/safe_file.h src/core/safe_file.cc \
	src/core/types.h src/core/types.cc \
	src/core/tres.h src/core/tres.cc \
	src/core/hostlist.h src/core/hostlist.cc \
	src/core/config.h src/core/config.cc \
	src/core/cluster.h src/core/cluster.cc \
	src/core/directives.h src/core/directives.cc \
	src/core/job_record.h src/core/job_record.cc \
	src/core/submit.h src/core/submit.cc \
	src/core/placement.h src/core/placement.cc \
	src/core/fairshare.h src/core/fairshare.cc \
	src/core/priority.h src/core/priority.cc \
	src/core/preempt.h src/core/preempt.cc \
	src/core/checkpoint.h src/core/checkpoint.cc \
	src/core/topo.h src/core/topo.cc \
	src/core/why.h src/core/why.cc \
	src/core/ops.h src/core/ops.cc \
	src/core/lifecycle.h src/core/lifecycle.cc \
	src/core/node_failures.h src/core/node_failures.cc
src_core_libmlsched_core_la_CXXFLAGS = $(AM_CXXFLAGS) -fvisibility=hidden


# Pipelines (core/pipeline): Slurm-free, but it reads the pipeline file with json-c,
# so it is a library of its own that only the tool and the unit tests link; the
# plugins link libmlsched_core.la alone.
noinst_LTLIBRARIES += src/core/libmlsched_pipeline.la
src_core_libmlsched_pipeline_la_SOURCES = src/core/pipeline.h src/core/pipeline.cc
src_core_libmlsched_pipeline_la_CPPFLAGS = $(AM_CPPFLAGS) $(JSON_C_CFLAGS)
src_core_libmlsched_pipeline_la_CXXFLAGS = $(AM_CXXFLAGS) -fvisibility=hidden
src_core_libmlsched_pipeline_la_LIBADD = $(JSON_C_LIBS)
