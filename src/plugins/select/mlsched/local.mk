# select/mlsched (included from Makefile.am).
plugin_LTLIBRARIES += src/plugins/select/mlsched/select_mlsched.la
src_plugins_select_mlsched_select_mlsched_la_SOURCES = src/plugins/select/mlsched/select_mlsched.cc \
	$(RELEASE_SELECT_SOURCES)
src_plugins_select_mlsched_select_mlsched_la_CPPFLAGS = $(PLUGIN_CPPFLAGS)
src_plugins_select_mlsched_select_mlsched_la_CXXFLAGS = $(PLUGIN_CXXFLAGS)
src_plugins_select_mlsched_select_mlsched_la_LDFLAGS = $(PLUGIN_LDFLAGS)
src_plugins_select_mlsched_select_mlsched_la_LIBADD = $(PLUGIN_LIBADD)
EXTRA_src_plugins_select_mlsched_select_mlsched_la_DEPENDENCIES = src/plugins/plugin.map
