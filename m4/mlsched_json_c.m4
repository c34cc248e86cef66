# MLSCHED_CHECK_JSON_C: libjson-c, for the mlsched tool's --json output.
AC_DEFUN([MLSCHED_CHECK_JSON_C], [
  PKG_CHECK_MODULES([JSON_C], [json-c >= 0.13], [],
    [AC_MSG_ERROR([json-c not found ($JSON_C_PKG_ERRORS). On Debian 12: apt-get install libjson-c-dev])])
])
