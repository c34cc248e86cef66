# job_submit/mlsched (included from Makefile.am).
plugin_LTLIBRARIES += src/plugins/job_submit/mlsched/job_submit_mlsched.la
src_plugins_job_submit_mlsched_job_submit_mlsched_la_SOURCES = \
	src/plugins/job_submit/mlsched/job_submit_mlsched.cc \
	$(RELEASE_JOB_SUBMIT_SOURCES)
src_plugins_job_submit_mlsched_job_submit_mlsched_la_CPPFLAGS = $(PLUGIN_CPPFLAGS)
src_plugins_job_submit_mlsched_job_submit_mlsched_la_CXXFLAGS = $(PLUGIN_CXXFLAGS)
src_plugins_job_submit_mlsched_job_submit_mlsched_la_LDFLAGS = $(PLUGIN_LDFLAGS)
src_plugins_job_submit_mlsched_job_submit_mlsched_la_LIBADD = $(PLUGIN_LIBADD)
EXTRA_src_plugins_job_submit_mlsched_job_submit_mlsched_la_DEPENDENCIES = src/plugins/plugin.map

