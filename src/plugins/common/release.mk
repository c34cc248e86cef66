# The version seam (src/plugins/common/release.h), included from Makefile.am: the
# adapter files of the Slurm release line configure found (SLURM_RELEASE_LINE).
# Each line's directory holds slurm_release.h (on the plugins' include path) and one
# file per plugin whose Slurm-facing entry points differ.
RELEASE_CPPFLAGS = -I$(top_srcdir)/src/plugins/common/slurm-$(SLURM_RELEASE_LINE)
if SLURM_24_11
RELEASE_COMMON_SOURCES = src/plugins/common/slurm-24.11/slurm_release.h src/plugins/common/slurm-24.11/ctld.cc
RELEASE_SELECT_SOURCES = src/plugins/common/slurm-24.11/select.cc
RELEASE_PRIORITY_SOURCES = src/plugins/common/slurm-24.11/priority.cc
RELEASE_JOB_SUBMIT_SOURCES = src/plugins/common/slurm-24.11/job_submit.cc
else
RELEASE_COMMON_SOURCES = src/plugins/common/slurm-22.05/slurm_release.h src/plugins/common/slurm-22.05/ctld.cc
RELEASE_SELECT_SOURCES = src/plugins/common/slurm-22.05/select.cc
RELEASE_PRIORITY_SOURCES = src/plugins/common/slurm-22.05/priority.cc
RELEASE_JOB_SUBMIT_SOURCES = src/plugins/common/slurm-22.05/job_submit.cc
endif
RELEASE_COMMON_SOURCES += src/plugins/common/release.h
RELEASE_SELECT_SOURCES += src/plugins/common/select_forwards.inc
EXTRA_DIST += src/plugins/common/slurm-22.05 src/plugins/common/slurm-24.11
