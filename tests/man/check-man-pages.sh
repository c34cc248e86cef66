#!/bin/sh
# The manual pages: each renders with `man -l` without a single groff warning, and
# each says what the code does: mlsched(1) lists every command, option and wait
# reason the tool's --help prints; mlsched.conf(5) and mlsched-directives(7) are
# checked against the parser's keys and built-in defaults (check_man_pages). A
# copy of mlsched.conf(5) with one default changed must fail, so the check can fail.
here=$(cd "$(dirname "$0")" && pwd)
doc=$here/../../doc
build=${top_builddir:-.}
tool=$build/src/tools/mlsched/mlsched
checker=$build/tests/man/check_man_pages
status=0
fail() { echo "FAIL: $*"; status=1; }

command -v man >/dev/null || { echo "FAIL: man (man-db) is not installed"; exit 1; }
[ -x "$tool" ] || { echo "FAIL: $tool not built"; exit 1; }
[ -x "$checker" ] || { echo "FAIL: $checker not built"; exit 1; }

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
for page in mlsched.1 mlsched.conf.5 mlsched-directives.7; do
  # --warnings turns on groff's warnings; man-db prints them on stderr.
  if ! LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -E UTF-8 -l "$doc/$page" >"$scratch/$page.txt" 2>"$scratch/$page.err"; then
    fail "$page: man -l failed: $(cat "$scratch/$page.err")"
  elif [ -s "$scratch/$page.err" ]; then
    fail "$page: man -l warns:"; sed 's/^/  /' "$scratch/$page.err"
  elif [ "$(wc -l <"$scratch/$page.txt")" -lt 20 ]; then
    fail "$page: renders to almost nothing"
  else
    echo "PASS: $page renders without warnings ($(wc -l <"$scratch/$page.txt") lines)"
  fi
  # The same text in ASCII, where \- is a plain '-', for the searches below.
  LC_ALL=C MANWIDTH=200 man -E ascii -l "$doc/$page" 2>/dev/null | col -bx >"$scratch/$page.ascii"
done

# mlsched(1): every command of `mlsched --help`, with every option of its own --help.
page=$scratch/mlsched.1.ascii
commands=$("$tool" --help | sed -n 's/^  \([a-z][a-z]*\) .*/\1/p')
[ -n "$commands" ] || fail "mlsched --help lists no commands"
n=0
for cmd in $commands; do
  grep -q "^ *\(exec \)\{0,1\}mlsched $cmd" "$page" || fail "mlsched(1) has no section for 'mlsched $cmd'"
  for opt in $("$tool" "$cmd" --help | grep -o -- '--[a-z][a-z-]*' | sort -u); do
    n=$((n + 1))
    grep -q -- "$opt" "$page" || fail "mlsched(1) does not document '$cmd $opt' (from mlsched $cmd --help)"
  done
done
reasons=$("$tool" why --help | sed -n 's/^  \([A-Z][A-Za-z]*\) .*/\1/p')
[ -n "$reasons" ] || fail "mlsched why --help lists no reasons"
for r in $reasons; do
  grep -q "^ *$r\b" "$page" || fail "mlsched(1) does not explain the wait reason $r"
done
for section in "EXIT STATUS" "EXAMPLES"; do
  grep -q "^$section" "$page" || fail "mlsched(1) has no $section section"
done
[ $status -eq 0 ] && echo "PASS: mlsched(1) documents $(echo $commands | wc -w) commands, $n options, $(echo $reasons | wc -w) wait reasons"

"$checker" conf "$doc/mlsched.conf.5" && echo "PASS: mlsched.conf(5) matches the parser" || fail "mlsched.conf(5)"
"$checker" directives "$doc/mlsched-directives.7" && echo "PASS: mlsched-directives(7) matches the parser" ||
  fail "mlsched-directives(7)"

# The check can fail: one default changed, one key dropped.
sed 's/^Default: \\fB600\\fR\.$/Default: \\fB601\\fR./' "$doc/mlsched.conf.5" >"$scratch/wrong-default.5"
cmp -s "$doc/mlsched.conf.5" "$scratch/wrong-default.5" && fail "self-test: could not change MaxCheckpointGrace's default"
if out=$("$checker" conf "$scratch/wrong-default.5" 2>&1); then
  fail "check_man_pages accepted a page with MaxCheckpointGrace's default changed to 601"
else
  echo "$out" | grep -q "MaxCheckpointGrace: the documented default '601' is not the built-in default" &&
    echo "PASS: a wrong default is caught" || fail "unexpected message for a wrong default: $out"
fi
sed '/^\\fBLargeGangNodes\\fR=/d' "$doc/mlsched.conf.5" >"$scratch/missing-key.5"
if out=$("$checker" conf "$scratch/missing-key.5" 2>&1); then
  fail "check_man_pages accepted a page without LargeGangNodes"
else
  echo "$out" | grep -q "key LargeGangNodes is accepted by the code but not documented" &&
    echo "PASS: an undocumented key is caught" || fail "unexpected message for a missing key: $out"
fi
# The version the tool prints (configure's, through mlsched_config.h) is the one
# each page's header names; the Slurm release it was built with follows it.
printed=$("$tool" --version)
version=${printed%% (built with Slurm *}
case "$printed" in "mlsched "[0-9]*" (built with Slurm "[0-9]*")") ;; *) fail "mlsched --version printed '$printed'";; esac
for page in mlsched.1 mlsched.conf.5 mlsched-directives.7; do
  grep -q "^\.TH .*\"$version\"" "$doc/$page" || fail "$page: its .TH line does not name '$version'"
done
[ $status -eq 0 ] && echo "PASS: mlsched --version and the pages agree: $version"
exit $status
