# Plugin load and symbol tests (included from Makefile.am).
check_PROGRAMS += tests/plugins/test_plugin_load
tests_plugins_test_plugin_load_SOURCES = tests/plugins/test_plugin_load.cc
tests_plugins_test_plugin_load_CXXFLAGS = $(AM_CXXFLAGS) $(CHECK_CFLAGS)
tests_plugins_test_plugin_load_LDADD = $(CHECK_LIBS) -ldl
tests_plugins_test_plugin_load_CPPFLAGS = $(AM_CPPFLAGS) \
	-DSLURMFULL_LIB='"$(SLURMFULL_LIB)"' \
	-DSLURM_PUBLIC_LIB='"$(SLURM_PUBLIC_LIB)"' \
	-DEXPECTED_SLURM_VERSION=$(SLURM_VERSION_NUMBER) \
	-DSLURM_SOURCE_DIR='"$(SLURM_SOURCE_DIR)"' \
	-DPLUGIN_BUILD_DIR='"$(abs_top_builddir)/src/plugins"'

