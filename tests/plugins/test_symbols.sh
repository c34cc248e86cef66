#!/usr/bin/env bash
# Checks each built plugin's dynamic symbols against what slurmctld offers:
#  - it exports only what Slurm's loader looks up (nothing of the core's C++ leaks
#    into a daemon that loads other plugins too);
#  - every Slurm symbol it needs is defined by libslurmfull or slurmctld itself, so a
#    lazily bound function cannot turn out missing at its first call in the controller;
#  - select/mlsched exports no select_p_* symbol its release's loader no longer asks
#    for (a leftover of another release's interface), read from the configured source
#    (SLURM_SOURCE_DIR) of the Slurm it was built against.
set -u
top=${top_builddir:-.}
slurmfull=${SLURMFULL_LIB:-$(ls /usr/lib/*/slurm-wlm/libslurmfull.so 2>/dev/null | head -1)}
slurmctld=${SLURMCTLD:-$(command -v slurmctld || echo /usr/sbin/slurmctld)}
allowed='^(plugin_name|plugin_type|plugin_version|plugin_id|init|fini|job_submit|job_modify|priority_p_[a-z_]+|select_p_[a-z_]+|preempt_p_[a-z_]+)$'
pass=0 fail=0
provided=$(mktemp); trap 'rm -f "$provided"' EXIT
{ nm -D --defined-only "$slurmfull"; nm -D --defined-only "$slurmctld"; } | awk '{print $3}' | sort -u > "$provided"

plugins=("$top"/src/plugins/*/mlsched/.libs/*_mlsched.so)
[ -f "${plugins[0]}" ] || { echo "no plugin built under $top/src/plugins"; echo "0 passed, 1 failed"; exit 1; }
for so in "${plugins[@]}"; do
  name=$(basename "$so")
  extra=$(nm -D --defined-only "$so" | awk '{print $3}' | grep -Ev "$allowed" | grep -v '^$' || true)
  if [ -n "$extra" ]; then
    echo "FAIL: $name exports more than the loader symbols:"; echo "$extra" | head -20
    fail=$((fail + 1))
  else
    echo "ok: $name exports only loader symbols"; pass=$((pass + 1))
  fi
  # Unversioned undefined symbols are Slurm's (libc/libstdc++ ones carry @VERSION).
  # A sanitizer build (--enable-sanitizers) links the ASan/UBSan runtime, whose
  # interceptors (memcpy, strlen, ...) are unversioned: what it defines is not a
  # symbol Slurm must define.
  runtime=$(mktemp)
  for lib in $(readelf -d "$so" | sed -n 's/.*NEEDED.*\[\(lib\(asan\|ubsan\)\.so[.0-9]*\)\]/\1/p'); do
    path=$(g++ -print-file-name="$lib")
    [ -f "$path" ] && nm -D --defined-only "$path" | awk '{print $3}'
  done | sort -u > "$runtime"
  missing=$(nm -D --undefined-only "$so" | awk '$1 == "U" && $2 !~ /@/ {print $2}' |
            grep -Ev '^__(asan|ubsan|lsan|sanitizer)_' | sort -u | comm -23 - "$provided" | comm -23 - "$runtime")
  rm -f "$runtime"
  if [ -n "$missing" ]; then
    echo "FAIL: $name needs symbols neither libslurmfull nor slurmctld defines:"; echo "$missing"
    fail=$((fail + 1))
  else
    echo "ok: $name needs only symbols slurmctld provides"; pass=$((pass + 1))
  fi
done
select_so="$top/src/plugins/select/mlsched/.libs/select_mlsched.so"
loader=""
for f in src/common/select.c src/interfaces/select.c; do
  [ -f "${SLURM_SOURCE_DIR:-/nonexistent}/$f" ] && loader="$SLURM_SOURCE_DIR/$f" && break
done
if [ -z "$loader" ]; then
  echo "FAIL: no select loader under SLURM_SOURCE_DIR='${SLURM_SOURCE_DIR:-}'"; fail=$((fail + 1))
else
  wanted=$(sed -n '/syms\[\] = {/,/};/p' "$loader" | grep -o '"select_p_[a-z_]*"' | tr -d '"' | sort -u)
  stale=$(nm -D --defined-only "$select_so" | awk '{print $3}' | grep '^select_p_' | sort -u | comm -23 - <(echo "$wanted"))
  if [ -z "$wanted" ] || [ -n "$stale" ]; then
    echo "FAIL: select_mlsched.so exports select_p_* symbols $loader does not ask for: ${stale:-(no list found)}"
    fail=$((fail + 1))
  else
    echo "ok: select_mlsched.so exports the $(echo "$wanted" | wc -l) select_p_* symbols of $loader, no others"
    pass=$((pass + 1))
  fi
fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
