# MLSCHED_CHECK_MUNGE: munge, which Slurm authenticates with. The plugins never call it
# directly; the tool and the test cluster need the library and the daemon.
AC_DEFUN([MLSCHED_CHECK_MUNGE], [
  AC_ARG_WITH([munge],
    [AS_HELP_STRING([--with-munge=PREFIX], [munge prefix @<:@/usr@:>@])],
    [MUNGE_CPPFLAGS="-I$withval/include"; MUNGE_LDFLAGS="-L$withval/lib"], [])
  mlsched_save_CPPFLAGS="$CPPFLAGS"; mlsched_save_LDFLAGS="$LDFLAGS"
  CPPFLAGS="$CPPFLAGS $MUNGE_CPPFLAGS"; LDFLAGS="$LDFLAGS $MUNGE_LDFLAGS"
  AC_CHECK_HEADER([munge.h], [],
    [AC_MSG_ERROR([munge.h not found. On Debian 12: apt-get install libmunge-dev])])
  AC_CHECK_LIB([munge], [munge_encode], [MUNGE_LIBS="$MUNGE_LDFLAGS -lmunge"],
    [AC_MSG_ERROR([libmunge not found. On Debian 12: apt-get install libmunge-dev])])
  AC_PATH_PROG([MUNGED], [munged], [], [$PATH:/usr/sbin:/sbin])
  AS_IF([test -z "$MUNGED"], [AC_MSG_ERROR([munged not found. On Debian 12: apt-get install munge])])
  CPPFLAGS="$mlsched_save_CPPFLAGS"; LDFLAGS="$mlsched_save_LDFLAGS"
  AC_SUBST([MUNGE_CPPFLAGS])
  AC_SUBST([MUNGE_LIBS])
])
