# preempt/mlsched (included from Makefile.am).
plugin_LTLIBRARIES += src/plugins/preempt/mlsched/preempt_mlsched.la
src_plugins_preempt_mlsched_preempt_mlsched_la_SOURCES = src/plugins/preempt/mlsched/preempt_mlsched.cc
src_plugins_preempt_mlsched_preempt_mlsched_la_CPPFLAGS = $(PLUGIN_CPPFLAGS)
src_plugins_preempt_mlsched_preempt_mlsched_la_CXXFLAGS = $(PLUGIN_CXXFLAGS)
src_plugins_preempt_mlsched_preempt_mlsched_la_LDFLAGS = $(PLUGIN_LDFLAGS)
src_plugins_preempt_mlsched_preempt_mlsched_la_LIBADD = $(PLUGIN_LIBADD)
EXTRA_src_plugins_preempt_mlsched_preempt_mlsched_la_DEPENDENCIES = src/plugins/plugin.map
