#!/usr/bin/env bash
# `mlsched run` and `mlsched ckpt done` outside Slurm, with tests/fake-trainer: the
# checkpoint signal reaches the training, a marked checkpoint is resumed from, a
# stale copy is refused, and every usage error names what is wrong. (On the real
# cluster: tests/integration/test_preempt.py.)
set -u
top=${top_builddir:-.}
src=$(cd "$(dirname "$0")/../.." && pwd)
tool=$top/src/tools/mlsched/mlsched
trainer=$src/tests/fake-trainer
work=$(mktemp -d); trap 'kill "${run_pid:-}" 2>/dev/null; rm -rf "$work"' EXIT
pass=0 fail=0
ok() { echo "ok: $1"; pass=$((pass + 1)); }
bad() { echo "FAIL: $1"; fail=$((fail + 1)); }
expect() {  # expect <name> <want rc> <text the output must contain> <command...>
  local name=$1 want=$2 text=$3; shift 3
  local out rc; out=$("$@" 2>&1); rc=$?
  if [ "$rc" = "$want" ] && [[ "$out" == *"$text"* ]]; then ok "$name"; else bad "$name (rc $rc, want $want): $out"; fi
}
wait_for() {  # wait_for <file> <text>: up to 10 s; a miss fails the check, it is not measured
  for _ in $(seq 1 100); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done; return 1
}
unset SLURM_JOB_ID SLURM_RESTART_COUNT MLSCHED_CHECKPOINT_DIR MLSCHED_RESTART_COUNT
export MLSCHED_TOOL=$tool FAKE_TRAINER_STEP_SECONDS=0.02
ck=$work/ck

# First run: signal -> checkpoint marked; TERM ends it with 128+15.
"$tool" run --checkpoint-dir "$ck" --signal USR1 -- "$trainer" > "$work/run0" 2>&1 &
run_pid=$!
wait_for "$work/run0" "start at step 0" && ok "first run starts from nothing" || bad "first run did not start: $(cat "$work/run0")"
# Signal until a checkpoint after at least one step exists (a slow machine may
# not have finished a step by the first signal).
for _ in $(seq 1 50); do
  kill -USR1 "$run_pid"
  wait_for "$work/run0" "checkpoint at step" || break
  grep -q "checkpoint at step [1-9]" "$work/run0" && break
  sleep 0.1
done
grep -q "checkpoint at step" "$work/run0" && ok "checkpoint signal reaches the training" || bad "no checkpoint: $(cat "$work/run0")"
kill -TERM "$run_pid"; wait "$run_pid"; rc=$?; run_pid=
[ "$rc" = 143 ] && ok "exit code of a training ended by SIGTERM is 143" || bad "exit code $rc"
# The step of the latest *marked* checkpoint, from LATEST itself: a signal still in
# flight may mark one more checkpoint after the output's last line was read (or just
# before TERM cut the trainer's echo), and resuming follows LATEST.
step=$(sed -n 's/.*path=step-\([0-9]*\)$/\1/p' "$ck/LATEST")
[ "${step:-0}" -gt 0 ] && ok "checkpointed after some steps ($step)" || bad "checkpoint step '$step'"
# Written but never marked: must not be chosen.
echo 99999 > "$ck/step-99999"

# Next allocation resumes from the marked checkpoint and finishes.
expect "restart resumes from the latest complete checkpoint" 0 "start at step $step (restart 1" \
  env SLURM_RESTART_COUNT=1 FAKE_TRAINER_STEPS=$((step + 3)) "$tool" run --checkpoint-dir "$ck" --signal USR1 -- "$trainer"

# Fencing: the first allocation's copy is stale now.
expect "stale copy cannot start" 1 "is stale and must not train" \
  env SLURM_RESTART_COUNT=0 "$tool" run --checkpoint-dir "$ck" -- true
expect "stale copy cannot mark" 1 "refused: a newer run of this job (restart 1)" \
  env MLSCHED_CHECKPOINT_DIR="$ck" MLSCHED_RESTART_COUNT=0 "$tool" ckpt done "step-$step"
expect "current run marks" 0 "" env MLSCHED_CHECKPOINT_DIR="$ck" MLSCHED_RESTART_COUNT=1 "$tool" ckpt done "step-$step"
# Inside a job the mark is also reported to slurmctld. When that fails (here libslurm
# cannot even read its configuration) the checkpoint still counts: warning, exit 0.
: > "$work/empty-slurm.conf"
echo "$step" > "$ck/step-reported"
expect "a failed report does not fail the checkpoint" 0 "checkpoint marked, but not reported to slurmctld" \
  env SLURM_JOB_ID=4242 SLURM_CONF="$work/empty-slurm.conf" MLSCHED_CHECKPOINT_DIR="$ck" MLSCHED_RESTART_COUNT=1 \
  "$tool" ckpt done step-reported
grep -q "restart=1 .*path=step-reported$" "$ck/LATEST" && ok "a checkpoint whose report failed is marked" ||
  bad "LATEST after a failed report: $(cat "$ck/LATEST")"

# Usage errors (exit 2) and problems (exit 1), each naming the fix.
expect "run needs a command" 2 "no command to run after --" "$tool" run --checkpoint-dir "$ck"
expect "run outside Slurm needs a directory" 2 "give --checkpoint-dir" "$tool" run -- true
expect "run rejects an unknown signal" 2 "--signal NOPE is not a signal" "$tool" run --checkpoint-dir "$ck" --signal NOPE -- true
expect "run passes the command's exit code" 3 "" "$tool" run --checkpoint-dir "$work/other" -- sh -c 'exit 3'
expect "command options are not mlsched's" 0 "ran with --help" \
  "$tool" run --checkpoint-dir "$work/other" -- sh -c 'echo ran with "$0"' --help
expect "ckpt needs an action" 2 "missing action" "$tool" ckpt
expect "ckpt knows only done" 2 "unknown action 'undo'" "$tool" ckpt undo x
expect "ckpt done needs a path" 2 "missing checkpoint path" "$tool" ckpt done
expect "ckpt done outside mlsched run" 1 "run the training under \`mlsched run\`" "$tool" ckpt done x
expect "ckpt done of a missing path" 1 "does not exist" \
  env MLSCHED_CHECKPOINT_DIR="$ck" MLSCHED_RESTART_COUNT=1 "$tool" ckpt done nothing-here

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
