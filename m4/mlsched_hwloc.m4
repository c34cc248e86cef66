# MLSCHED_CHECK_HWLOC: hwloc 2.x, for `mlsched topo` (GPU and NVLink discovery).
AC_DEFUN([MLSCHED_CHECK_HWLOC], [
  PKG_CHECK_MODULES([HWLOC], [hwloc >= 2.0], [],
    [AC_MSG_ERROR([hwloc 2.x not found ($HWLOC_PKG_ERRORS). On Debian 12: apt-get install libhwloc-dev])])
])
