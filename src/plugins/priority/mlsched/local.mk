# priority/mlsched (included from Makefile.am).
plugin_LTLIBRARIES += src/plugins/priority/mlsched/priority_mlsched.la
src_plugins_priority_mlsched_priority_mlsched_la_SOURCES = \
	src/plugins/priority/mlsched/priority_mlsched.cc \
	$(RELEASE_PRIORITY_SOURCES)
src_plugins_priority_mlsched_priority_mlsched_la_CPPFLAGS = $(PLUGIN_CPPFLAGS)
src_plugins_priority_mlsched_priority_mlsched_la_CXXFLAGS = $(PLUGIN_CXXFLAGS)
src_plugins_priority_mlsched_priority_mlsched_la_LDFLAGS = $(PLUGIN_LDFLAGS)
src_plugins_priority_mlsched_priority_mlsched_la_LIBADD = $(PLUGIN_LIBADD)
EXTRA_src_plugins_priority_mlsched_priority_mlsched_la_DEPENDENCIES = src/plugins/plugin.map
