# Check unit tests of the core (included from Makefile.am).
check_PROGRAMS += tests/unit/test_core
tests_unit_test_core_SOURCES = \
	tests/unit/test_main.cc tests/unit/suites.h tests/unit/fixtures.h \
	tests/unit/test_text.cc tests/unit/test_tres.cc tests/unit/test_hostlist.cc tests/unit/test_config.cc \
	tests/unit/test_cluster.cc tests/unit/test_directives.cc tests/unit/test_job_record.cc tests/unit/test_submit.cc \
	tests/unit/test_placement.cc \
	tests/unit/test_priority.cc \
	tests/unit/test_preempt.cc tests/unit/test_checkpoint.cc \
	tests/unit/test_topo.cc tests/unit/test_why.cc tests/unit/test_ops.cc tests/unit/test_lifecycle.cc tests/unit/test_node_failures.cc \
	tests/unit/test_pipeline.cc \
	tests/unit/test_periodic_worker.cc src/plugins/common/periodic_worker.cc
tests_unit_test_core_CXXFLAGS = $(AM_CXXFLAGS) $(CHECK_CFLAGS)
tests_unit_test_core_LDADD = src/core/libmlsched_pipeline.la src/core/libmlsched_core.la $(CHECK_LIBS) -lpthread

