# MLSCHED_CHECK_CHECK: the Check unit-test framework.
AC_DEFUN([MLSCHED_CHECK_CHECK], [
  PKG_CHECK_MODULES([CHECK], [check >= 0.11], [],
    [AC_MSG_ERROR([Check not found ($CHECK_PKG_ERRORS). On Debian 12: apt-get install check])])
])
