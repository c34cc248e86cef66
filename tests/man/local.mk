# The manual pages: installed by `make install`, checked by `make check` against the
# code they describe (included from Makefile.am).
man_MANS = doc/mlsched.1 doc/mlsched.conf.5 doc/mlsched-directives.7
EXTRA_DIST += $(man_MANS) tests/man/check-man-pages.sh

check_PROGRAMS += tests/man/check_man_pages
tests_man_check_man_pages_SOURCES = tests/man/check_man_pages.cc
tests_man_check_man_pages_LDADD = src/core/libmlsched_core.la
TESTS += tests/man/check-man-pages.sh
