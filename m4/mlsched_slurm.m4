# MLSCHED_CHECK_SLURM
# Finds the Slurm to build against (public headers, libslurm, Slurm's plugin directory):
# Debian's in /usr, or one installed into a prefix (--with-slurm=PREFIX, e.g. built by
# scripts/slurm-prefix), and a configured Slurm source tree of exactly the same version
# for the internal headers the controller-side plugins need. For /usr without
# --with-slurm-source, scripts/slurm-source fetches and configures Debian's source
# package of the installed version. Picks the release line's adapter directory
# (src/plugins/common/slurm-X.Y, the version seam) from SLURM_VERSION_NUMBER.
# Sets SLURM_CPPFLAGS, SLURM_INTERNAL_CPPFLAGS, SLURM_LIBS, SLURM_PLUGIN_DIR,
# SLURM_SOURCE_DIR, SLURM_VERSION_NUMBER, SLURM_VERSION_STRING, SLURM_RELEASE_LINE,
# SLURMFULL_LIB, SLURM_BINDIR, SLURM_SBINDIR and the conditional SLURM_24_11.
AC_DEFUN([MLSCHED_CHECK_SLURM], [
  AC_ARG_WITH([slurm],
    [AS_HELP_STRING([--with-slurm=PREFIX], [Slurm installation prefix @<:@/usr@:>@ (scripts/slurm-prefix 24.11 prints one)])],
    [SLURM_PREFIX="$withval"], [SLURM_PREFIX=/usr])
  AC_ARG_WITH([slurm-source],
    [AS_HELP_STRING([--with-slurm-source=DIR],
      [configured Slurm source tree of that version (default for /usr: fetch Debian's with scripts/slurm-source; scripts/slurm-prefix --source 24.11 prints one)])],
    [SLURM_SOURCE_DIR="$withval"], [SLURM_SOURCE_DIR=auto])

  AS_IF([test "$SLURM_PREFIX" != /usr], [SLURM_CPPFLAGS="-I$SLURM_PREFIX/include"])
  mlsched_save_CPPFLAGS="$CPPFLAGS"
  CPPFLAGS="$CPPFLAGS $SLURM_CPPFLAGS"
  AC_CHECK_HEADER([slurm/slurm.h], [],
    [AC_MSG_ERROR([slurm/slurm.h not found under $SLURM_PREFIX/include. On Debian 12: apt-get install libslurm-dev (or pass --with-slurm=PREFIX)])])
  AC_COMPUTE_INT([SLURM_VERSION_NUMBER], [SLURM_VERSION_NUMBER], [#include <slurm/slurm_version.h>],
    [AC_MSG_ERROR([cannot read SLURM_VERSION_NUMBER from slurm/slurm_version.h])])
  CPPFLAGS="$mlsched_save_CPPFLAGS"
  SLURM_VERSION_STRING=$(printf '%d.%02d.%d' $(( SLURM_VERSION_NUMBER >> 16 )) $(( (SLURM_VERSION_NUMBER >> 8) & 255 )) $(( SLURM_VERSION_NUMBER & 255 )))
  AC_MSG_NOTICE([installed Slurm is $SLURM_VERSION_STRING])

  # One adapter directory per supported release line; another line is refused here
  # rather than failing later with a wall of compiler errors (docs/porting.md says
  # what the next line needs).
  SLURM_RELEASE_LINE=$(printf '%d.%02d' $(( SLURM_VERSION_NUMBER >> 16 )) $(( (SLURM_VERSION_NUMBER >> 8) & 255 )))
  AS_CASE([$SLURM_RELEASE_LINE],
    [22.05|24.11], [],
    [AC_MSG_ERROR([Slurm $SLURM_VERSION_STRING is not supported: mlsched builds against the 22.05 and 24.11 release lines (src/plugins/common/slurm-22.05, slurm-24.11; docs/porting.md)])])

  # libslurm for the command-line tool, libslurmfull (what slurmctld itself links)
  # for the plugin load test.
  AS_IF([test "$SLURM_PREFIX" = /usr],
    [mlsched_multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)
     mlsched_slurm_libdirs="/usr/lib/$mlsched_multiarch /usr/lib64 /usr/lib"],
    [mlsched_slurm_libdirs="$SLURM_PREFIX/lib $SLURM_PREFIX/lib64"])
  SLURM_PLUGIN_DIR=; SLURMFULL_LIB=; SLURM_PUBLIC_LIB=
  for d in $mlsched_slurm_libdirs; do
    for p in "$d/slurm-wlm" "$d/slurm"; do
      AS_IF([test -z "$SLURM_PLUGIN_DIR" && test -f "$p/select_cons_tres.so"], [SLURM_PLUGIN_DIR="$p"])
      AS_IF([test -z "$SLURMFULL_LIB" && test -f "$p/libslurmfull.so"], [SLURMFULL_LIB="$p/libslurmfull.so"])
    done
    AS_IF([test -z "$SLURMFULL_LIB" && test -f "$d/libslurmfull.so"], [SLURMFULL_LIB="$d/libslurmfull.so"])
    AS_IF([test -z "$SLURM_PUBLIC_LIB" && test -f "$d/libslurm.so"], [SLURM_PUBLIC_LIB="$d/libslurm.so"])
  done
  AS_IF([test -z "$SLURM_PLUGIN_DIR"],
    [AC_MSG_ERROR([Slurm's plugin directory (with select_cons_tres.so) not found. On Debian 12: apt-get install slurm-wlm-basic-plugins])])
  AS_IF([test -z "$SLURMFULL_LIB"],
    [AC_MSG_ERROR([libslurmfull.so not found. On Debian 12: apt-get install slurmctld])])
  mlsched_save_LDFLAGS="$LDFLAGS"
  AS_IF([test "$SLURM_PREFIX" != /usr], [LDFLAGS="$LDFLAGS -L$SLURM_PREFIX/lib"])
  # A prefix is not on the loader's path: the tool finds its libslurm by rpath.
  AS_IF([test "$SLURM_PREFIX" != /usr], [LDFLAGS="$LDFLAGS -Wl,-rpath,$SLURM_PREFIX/lib"])
  AC_CHECK_LIB([slurm], [slurm_load_jobs], [SLURM_LIBS="$LDFLAGS -lslurm"],
    [AC_MSG_ERROR([libslurm not found. On Debian 12: apt-get install libslurm-dev])])
  LDFLAGS="$mlsched_save_LDFLAGS"
  # The mlsched tool links libslurm, except on 24.11: there a client of the public
  # libslurm cannot load topology/tree (the plugin needs a symbol only libslurmfull
  # exports), so slurm_load_topo loses the switches; the tool then links libslurmfull,
  # as Slurm's own commands do.
  AS_IF([test "$SLURM_RELEASE_LINE" = 24.11],
    [mlsched_full_dir=$(dirname "$SLURMFULL_LIB")
     SLURM_TOOL_LIBS="-L$mlsched_full_dir -Wl,-rpath,$mlsched_full_dir -lslurmfull"],
    [SLURM_TOOL_LIBS="$SLURM_LIBS"])
  AC_SUBST([SLURM_TOOL_LIBS])

  # The source tree for the internal headers, configured like the installed binaries.
  AS_IF([test "$SLURM_PREFIX" != /usr && { test "$SLURM_SOURCE_DIR" = auto || test "$SLURM_SOURCE_DIR" = yes; }],
    [AC_MSG_ERROR([--with-slurm=$SLURM_PREFIX needs --with-slurm-source=DIR, the configured source tree of Slurm $SLURM_VERSION_STRING (scripts/slurm-prefix --source $SLURM_RELEASE_LINE prints it)])])
  AS_IF([test "$SLURM_SOURCE_DIR" = auto || test "$SLURM_SOURCE_DIR" = yes],
    [AC_MSG_NOTICE([fetching the matching Slurm source with scripts/slurm-source])
     SLURM_SOURCE_DIR=$("$srcdir/scripts/slurm-source") ||
       AC_MSG_ERROR([scripts/slurm-source failed; fetch and configure Slurm $SLURM_VERSION_STRING yourself and pass --with-slurm-source=DIR])])
  SLURM_SOURCE_DIR=$(cd "$SLURM_SOURCE_DIR" 2>/dev/null && pwd) ||
    AC_MSG_ERROR([--with-slurm-source: no such directory])
  AS_IF([test ! -f "$SLURM_SOURCE_DIR/src/slurmctld/slurmctld.h"],
    [AC_MSG_ERROR([$SLURM_SOURCE_DIR is not a Slurm source tree (no src/slurmctld/slurmctld.h)])])
  AS_IF([test ! -f "$SLURM_SOURCE_DIR/config.h" || test ! -f "$SLURM_SOURCE_DIR/slurm/slurm_version.h"],
    [AC_MSG_ERROR([$SLURM_SOURCE_DIR is not configured (no config.h): run its ./configure with Debian's flags (see scripts/slurm-source)])])
  AC_MSG_CHECKING([Slurm source version])
  mlsched_src_number=$(grep '^#define SLURM_VERSION_NUMBER ' "$SLURM_SOURCE_DIR/slurm/slurm_version.h" | cut -d' ' -f3)
  AS_IF([test -z "$mlsched_src_number"], [mlsched_src_number=0])
  mlsched_src_string=$(printf '%d.%02d.%d' $(( mlsched_src_number >> 16 )) $(( (mlsched_src_number >> 8) & 255 )) $(( mlsched_src_number & 255 )))
  AC_MSG_RESULT([$mlsched_src_string])
  # The plugin loader refuses a plugin whose major.minor.micro differs from the daemon's.
  AS_IF([test "$mlsched_src_string" != "$SLURM_VERSION_STRING"],
    [AC_MSG_ERROR([Slurm version mismatch: installed Slurm is $SLURM_VERSION_STRING but the source in $SLURM_SOURCE_DIR is $mlsched_src_string. Plugins built against it would be refused by slurmctld; use the source of $SLURM_VERSION_STRING (scripts/slurm-source or scripts/slurm-prefix --source fetches it)])])

  # The daemons of the prefix must be the same release as its headers: a prefix
  # rebuilt over another version would give plugins the daemons refuse.
  SLURM_SBINDIR="$SLURM_PREFIX/sbin"; SLURM_BINDIR="$SLURM_PREFIX/bin"
  AS_IF([test -x "$SLURM_SBINDIR/slurmctld"], [
    AC_MSG_CHECKING([version of $SLURM_SBINDIR/slurmctld])
    mlsched_daemon_string=$("$SLURM_SBINDIR/slurmctld" -V 2>/dev/null | cut -d' ' -f2)
    AC_MSG_RESULT([$mlsched_daemon_string])
    AS_IF([test "$mlsched_daemon_string" != "$SLURM_VERSION_STRING"],
      [AC_MSG_ERROR([Slurm version mismatch: the headers under $SLURM_PREFIX/include are $SLURM_VERSION_STRING but $SLURM_SBINDIR/slurmctld is '$mlsched_daemon_string'; rebuild the prefix (scripts/slurm-prefix) or point --with-slurm at the right one])])])

  # -isystem: Slurm's own headers do not have to pass our warning flags.
  SLURM_INTERNAL_CPPFLAGS="-isystem $SLURM_SOURCE_DIR"
  AC_SUBST([SLURM_PREFIX])
  AC_SUBST([SLURM_RELEASE_LINE])
  AC_SUBST([SLURM_BINDIR])
  AC_SUBST([SLURM_SBINDIR])
  AM_CONDITIONAL([SLURM_24_11], [test "$SLURM_RELEASE_LINE" = 24.11])
  AC_SUBST([SLURM_CPPFLAGS])
  AC_SUBST([SLURM_INTERNAL_CPPFLAGS])
  AC_SUBST([SLURM_LIBS])
  AC_SUBST([SLURM_PLUGIN_DIR])
  AC_SUBST([SLURM_SOURCE_DIR])
  AC_SUBST([SLURM_VERSION_NUMBER])
  AC_SUBST([SLURM_VERSION_STRING])
  AC_SUBST([SLURMFULL_LIB])
  AC_SUBST([SLURM_PUBLIC_LIB])
])
