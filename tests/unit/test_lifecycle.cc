// An ML job's states (core/lifecycle: ml_status) through its life, the history of
// its runs built from accounting's per-run records, and the bounds on what is
// stored on the job.
#include <string>

#include "core/checkpoint.h"
#include "core/job_record.h"
#include "core/lifecycle.h"
#include "core/preempt.h"
#include "suites.h"

using namespace mlsched;

namespace {

const std::string kDirectives =
    "mlsched: type=training gpu-type=a100 locality=any locality-mode=prefer checkpoint-signal=USR1 "
    "checkpoint-grace=30 checkpoint-interval=2 preemptible=yes max-restarts=3";

SlurmJobView view(const std::string& state) {
  SlurmJobView v;
  v.state = state;
  v.admin_comment = kDirectives;
  return v;
}

}  // namespace

// One job through its whole life: each step of Slurm's state plus mlsched's record
// gives the state the README's diagram shows.
START_TEST(states_follow_a_jobs_life) {
  SlurmJobView v = view("PENDING");
  v.reason = "Resources";
  v.queued_since = 1000;
  MlStatus s = ml_status(v);
  ck_assert_str_eq(ml_state_name(s.state), "queued");
  ck_assert_uint_eq(s.run, 0);
  ck_assert_string_eq(s.detail, "waiting: Resources");

  v.state = "RUNNING";
  v.configuring = true;
  v.start_time = 1010;
  ck_assert_str_eq(ml_state_name(ml_status(v).state), "placed");

  v.configuring = false;
  v.comment = "my run " + std::string(kCheckpointReportKey) + "=1020,step-20";
  s = ml_status(v);
  ck_assert_str_eq(ml_state_name(s.state), "running");
  ck_assert_uint_eq(s.run, 1);
  ck_assert(s.last_checkpoint && s.last_checkpoint->time == 1020);
  ck_assert_string_eq(s.last_checkpoint->name, "step-20");

  // preempt/mlsched picked it: the mark is recorded when it is signalled.
  v.admin_comment = with_preemption_recorded(kDirectives, 815, 1030, 16);
  s = ml_status(v);
  ck_assert_str_eq(ml_state_name(s.state), "checkpointing");
  ck_assert_uint_eq(s.preempted_by, 815);
  ck_assert_contains(format_status(s), "checkpointing: checkpoint signal sent (preempted by job 815); grace running");
  // Slurm's own preempt_time says the same without a mark (another preempt plugin).
  SlurmJobView stock = view("RUNNING");
  stock.start_time = 1010;
  stock.preempt_time = 1030;
  ck_assert_str_eq(ml_state_name(ml_status(stock).state), "checkpointing");

  // Requeued after its checkpoint: Slurm clears the run's times and resets the
  // submit time to the requeue; the preemption lies within the grace before it.
  v.state = "PENDING";
  v.start_time = 0;
  v.reason = "BeginTime";
  v.restarts = 1;
  v.queued_since = 1034;
  v.comment = "my run " + std::string(kCheckpointReportKey) + "=1031,step-41";
  s = ml_status(v);
  ck_assert_str_eq(ml_state_name(s.state), "preempted");
  ck_assert_uint_eq(s.run, 1);
  ck_assert_string_eq(s.detail, "after run 1, preempted by job 815; waiting to resume from step-41 (Slurm: BeginTime)");

  // Running again: resumed from the checkpoint the comment names, until it reports its own.
  // The preemption mark of the first run does not make it a victim again, however soon
  // it restarted.
  v.state = "RUNNING";
  v.start_time = 1031;
  ck_assert_str_eq(ml_state_name(ml_status(v).state), "resumed");
  v.start_time = 1100;
  s = ml_status(v);
  ck_assert_str_eq(ml_state_name(s.state), "resumed");
  ck_assert_uint_eq(s.run, 2);
  ck_assert_string_eq(s.resumed_from, "step-41");
  ck_assert_string_eq(s.detail, "run 2, resumed from step-41");

  // A node fails later: requeued again, long after the preemption: not "preempted".
  v.state = "PENDING";
  v.start_time = 0;
  v.restarts = 2;
  v.queued_since = 5000;
  s = ml_status(v);
  ck_assert_str_eq(ml_state_name(s.state), "requeued");
  ck_assert_uint_eq(s.run, 2);

  v.state = "COMPLETED";
  v.start_time = 5100;
  v.end_time = 5200;
  s = ml_status(v);
  ck_assert_str_eq(ml_state_name(s.state), "completed");
  ck_assert_uint_eq(s.run, 3);
}
END_TEST

START_TEST(ends_are_named) {
  SlurmJobView v = view("CANCELLED");
  ck_assert_string_eq(format_status(ml_status(v)), "cancelled: cancelled while queued");
  v.restarts = 1;  // requeued once, cancelled while it waited (Slurm cleared the run's start)
  ck_assert_string_eq(format_status(ml_status(v)), "cancelled: cancelled while waiting after run 1");
  v.start_time = v.end_time = 500;  // as slurmctld shows a waiting job it cancelled
  ck_assert_string_eq(format_status(ml_status(v)), "cancelled: cancelled while waiting after run 1");
  v.restarts = 0;
  v.start_time = v.end_time = 10;  // a run cancelled in the second it started: it held nodes
  v.allocated = true;
  ck_assert_string_eq(format_status(ml_status(v)), "cancelled: cancelled in run 1");
  v.state = "FAILED";
  v.exit_code = 3 << 8;
  ck_assert_string_eq(format_status(ml_status(v)), "failed: exit code 3 in run 1");
  v.state = "TIMEOUT";
  ck_assert_string_eq(format_status(ml_status(v)), "failed: time limit reached in run 1");
  v.state = "OUT_OF_MEMORY";
  ck_assert_str_eq(ml_state_name(ml_status(v).state), "failed");
  // A state Slurm may add later is a failure with its name, not a crash.
  v.state = "SOMETHING_NEW";
  ck_assert_str_eq(ml_state_name(ml_status(v).state), "failed");
  // Every state has a name, in life order.
  ck_assert_uint_eq(ml_states().size(), 10);
  ck_assert_str_eq(ml_state_name(ml_states().front()), "queued");
  ck_assert_str_eq(ml_state_name(ml_states().back()), "cancelled");
}
END_TEST

namespace {

AccountedRun acct(const std::string& state, int64_t start, int64_t end, const std::string& nodes, uint32_t gpus,
                  const std::string& comment, const std::string& admin) {
  AccountedRun r;
  r.state = state;
  r.start = start;
  r.end = end;
  r.nodes = nodes;
  r.gpus = gpus;
  r.comment = comment;
  r.admin_comment = admin;
  return r;
}

std::string report(int64_t t, const std::string& name) { return std::string(kCheckpointReportKey) + "=" + std::to_string(t) + "," + name; }

}  // namespace

// Preempted once, then a node lost, then completed: three runs with their causes,
// checkpoints, and GPU-time used and lost, from accounting's records.
START_TEST(history_of_three_runs) {
  const std::string preempted = with_preemption_recorded(kDirectives, 815, 1030, 16);
  HistoryInput in;
  in.job_id = 812;
  in.name = "train";
  in.user = "ml-bob";
  in.account = "nlp";
  in.accounting_read = true;
  in.now = 9000;
  // Given out of order, with a pending record of the requeued job (no start).
  in.accounted = {
      acct("COMPLETED", 3000, 3100, "gpu13", 8, report(3050, "step-300"), preempted),
      acct("REQUEUED", 1000, 1034, "gpu15", 8, report(1031, "step-41"), preempted),
      acct("PENDING", 0, 0, "", 0, "", preempted),
      acct("NODE_FAIL", 2000, 2060, "gpu[15-16]", 16, report(2040, "step-120"), preempted),
  };
  in.node_events = {{"gpu16", 2050, "Not responding"}, {"gpu01", 2050, "elsewhere"}, {"gpu16", 100, "long ago"}};
  const JobHistory h = build_history(in);
  ck_assert_uint_eq(h.runs.size(), 3);
  const RunRecord& r1 = h.runs[0];
  ck_assert_uint_eq(r1.run, 1);
  ck_assert_str_eq(run_end_name(r1.end_cause), "preempted");
  ck_assert_uint_eq(r1.preempted_by, 815);
  ck_assert(!r1.resumed_from);
  ck_assert_string_eq(r1.ended_with->name, "step-41");
  ck_assert_double_eq(r1.gpu_seconds, 8 * 34);
  ck_assert_double_eq(r1.lost_gpu_seconds, 8 * 3);
  const RunRecord& r2 = h.runs[1];
  ck_assert_str_eq(run_end_name(r2.end_cause), "node_failure");
  ck_assert_string_eq(r2.end_detail, "node failure on gpu16");
  ck_assert_string_eq(r2.resumed_from->name, "step-41");
  ck_assert_string_eq(r2.ended_with->name, "step-120");
  ck_assert_double_eq(r2.gpu_seconds, 16 * 60);
  ck_assert_double_eq(r2.lost_gpu_seconds, 16 * 20);
  const RunRecord& r3 = h.runs[2];
  ck_assert_str_eq(run_end_name(r3.end_cause), "completed");
  ck_assert_string_eq(r3.resumed_from->name, "step-120");
  ck_assert_double_eq(r3.lost_gpu_seconds, 0);
  ck_assert_double_eq(h.gpu_seconds, 8 * 34 + 16 * 60 + 8 * 100);
  ck_assert_double_eq(h.lost_gpu_seconds, 8 * 3 + 16 * 20);
  // Left the controller: the state comes from accounting's last record.
  ck_assert(!h.in_controller && h.status_known);
  ck_assert_str_eq(ml_state_name(h.status.state), "completed");
  ck_assert_uint_eq(h.status.run, 3);

  const std::string text = format_history(h, in.now);
  ck_assert_contains(text, "job 812 train (ml-bob, account nlp): completed: finished in run 3");
  ck_assert_contains(text, "runs:       3 (from accounting)");
  ck_assert_contains(text, "  ended:        preempted by job 815\n");
  ck_assert_contains(text, "  ended:        node failure on gpu16\n");
  ck_assert_contains(text, "  resumed from: nothing (first run)\n");
  ck_assert_contains(text, "  resumed from: step-41 marked at");
  ck_assert_contains(text, "  checkpoint:   step-120 marked at");
  ck_assert_contains(text, "slurmctld:  no longer holds the job; from accounting only");
}
END_TEST

// Accounting unreachable: the controller's run is shown and what is unknown is said.
START_TEST(history_without_accounting_says_what_is_unknown) {
  HistoryInput in;
  in.job_id = 900;
  in.accounting_read = false;
  in.accounting_problem = "cannot reach the accounting database (slurmdbd): Connection refused";
  SlurmJobView v = view("RUNNING");
  v.restarts = 2;
  v.start_time = 500;
  v.comment = report(450, "step-9");
  in.controller = v;
  in.controller_nodes = "gpu13";
  in.controller_gpus = 8;
  in.gpu_indices = {{"gpu13", {0, 1, 2, 3, 4, 5, 6, 7}}};
  in.now = 600;
  const JobHistory h = build_history(in);
  ck_assert_uint_eq(h.runs.size(), 1);
  ck_assert_uint_eq(h.runs[0].run, 3);
  ck_assert_str_eq(run_end_name(h.runs[0].end_cause), "running");
  ck_assert_string_eq(h.runs[0].resumed_from->name, "step-9");
  ck_assert_double_eq(h.runs[0].gpu_seconds, 8 * 100);
  const std::string text = format_history(h, in.now);
  ck_assert_contains(text, "runs 1-2 unknown: accounting (slurmdbd) could not be read (cannot reach");
  ck_assert_contains(text, "GPUs:         gpu13 GPU 0,1,2,3,4,5,6,7");
  ck_assert_contains(text, "resumed: run 3, resumed from step-9");
}
END_TEST

// Hostile or broken accounting text: names with control bytes are escaped, a
// report with a bad name keeps its time, garbage is no report; many runs are cut.
START_TEST(history_is_bounded_and_escapes) {
  HistoryInput in;
  in.job_id = 7;
  in.name = "evil\x1b[2J";
  in.accounting_read = true;
  for (int i = 0; i < 1200; ++i)
    in.accounted.push_back(acct("REQUEUED", 100 + i * 10, 105 + i * 10, "gpu[01-", 1,
                                std::string(kCheckpointReportKey) + "=" + std::to_string(101 + i * 10) + ",bad\x07name",
                                "mlsched: preempted=x"));
  in.now = 100000;
  const JobHistory h = build_history(in);
  ck_assert_uint_eq(h.runs.size(), kMaxHistoryRuns);
  ck_assert_uint_eq(h.runs.front().run, 201);
  ck_assert(h.runs.front().ended_with.has_value());
  ck_assert_string_eq(h.runs.front().ended_with->name, "");
  const std::string text = format_history(h, in.now);
  ck_assert(text.find('\x1b') == std::string::npos && text.find('\x07') == std::string::npos);
  ck_assert_contains(text, "evil\\x1b[2J");
  ck_assert_contains(text, "only the newest 1000 of 1200 runs are listed");
}
END_TEST

// Checkpoint reports carry the checkpoint's name; old reports (time only) still read.
START_TEST(checkpoint_report_names) {
  std::string c = with_checkpoint_report("nlp sweep 1", 1700000000, "step-41");
  ck_assert_string_eq(c, "nlp sweep 1 mlsched-checkpoint=1700000000,step-41");
  ck_assert_int_eq(checkpoint_report(c).value(), 1700000000);
  ck_assert_string_eq(checkpoint_report_of(c)->name, "step-41");
  ck_assert_string_eq(without_checkpoint_report(c), "nlp sweep 1");
  c = with_checkpoint_report(c, 1700000005, "ckpt/epoch 3");  // a space: name left out
  ck_assert_string_eq(c, "nlp sweep 1 mlsched-checkpoint=1700000005");
  ck_assert_string_eq(checkpoint_report_of(c)->name, "");
  ck_assert_string_eq(with_checkpoint_report("", 5, std::string(65, 'a')), "mlsched-checkpoint=5");
  ck_assert(!checkpoint_report_of("mlsched-checkpoint=,step-1"));
  ck_assert(!checkpoint_report_of("mlsched-checkpoint=-1"));
  // The resume report is a word of its own: each kind replaces only its own, and
  // job_submit's comparison (without_checkpoint_report) ignores both.
  c = with_resume_report("nlp sweep 1 mlsched-checkpoint=1700000005,step-9", 1700000005, "step-9");
  c = with_checkpoint_report(c, 1700000100, "step-20");
  ck_assert_string_eq(c, "nlp sweep 1 mlsched-resumed=1700000005,step-9 mlsched-checkpoint=1700000100,step-20");
  ck_assert_string_eq(resume_report_of(c)->name, "step-9");
  ck_assert_int_eq(checkpoint_report(c).value(), 1700000100);
  ck_assert_string_eq(without_checkpoint_report(c), "nlp sweep 1");
  ck_assert_string_eq(with_resume_report(c, 1700000100, "step-20"),
                      "nlp sweep 1 mlsched-checkpoint=1700000100,step-20 mlsched-resumed=1700000100,step-20");
}
END_TEST

// A run's own report can land after accounting recorded its end (the job was
// requeued a moment after a checkpoint): the next run's resume report still says
// which checkpoint the run ended with, and the state names what a run resumed from
// whatever it reported since.
START_TEST(resume_reports_fill_in_late_checkpoint_reports) {
  HistoryInput in;
  in.job_id = 5;
  in.accounting_read = true;
  in.now = 5000;
  in.accounted = {acct("NODE_FAIL", 1000, 1100, "gpu[13-14]", 16, report(1080, "step-100"), kDirectives),
                  acct("COMPLETED", 1200, 1300, "gpu[13,15]", 16,
                       with_checkpoint_report(with_resume_report("", 1098, "step-120"), 1250, "step-200"),
                       kDirectives)};
  in.node_events = {{"gpu14", 1100, "Not responding"}};
  const JobHistory h = build_history(in);
  ck_assert_uint_eq(h.runs.size(), 2);
  ck_assert_string_eq(h.runs[0].ended_with->name, "step-120");
  ck_assert_double_eq(h.runs[0].lost_gpu_seconds, 16 * 2);
  ck_assert_string_eq(h.runs[1].resumed_from->name, "step-120");
  ck_assert_string_eq(h.runs[1].ended_with->name, "step-200");

  SlurmJobView v = view("RUNNING");
  v.restarts = 1;
  v.start_time = 1200;
  v.comment = with_checkpoint_report(with_resume_report("", 1098, "step-120"), 1250, "step-200");
  const MlStatus s = ml_status(v);
  ck_assert_str_eq(ml_state_name(s.state), "resumed");
  ck_assert_string_eq(s.resumed_from, "step-120");
  ck_assert_string_eq(s.last_checkpoint->name, "step-200");
}
END_TEST

// A long-lived job preempted 1,000 times (and requeued after each): mlsched's
// record on it keeps counts and the last preemption, so the AdminComment stays
// the same size but for the digits of the counts.
START_TEST(record_stays_bounded_after_1000_preemptions) {
  std::string admin = kDirectives + "; site note";
  size_t after_first = 0;
  for (int i = 1; i <= 1000; ++i) {
    admin = with_preemption_recorded(admin, 800 + i, 1764780000 + i * 100, 16);
    admin = with_run_end_recorded(admin, 8 * 90, 1764770000);
    if (i == 1) after_first = admin.size();
  }
  const JobRecord r = decode_job_record(admin);
  ck_assert_uint_eq(r.preemptions.times, 1000);
  ck_assert_uint_eq(r.preemptions.last_by, 1800);
  ck_assert_double_eq(r.preemptions.lost_gpu_seconds, 16000);
  ck_assert_double_eq(r.marks.attained_gpu_seconds, 720000);
  // Only the counts' digits grew (1 -> 1000, 16 -> 16000, 720 -> 720000 ...).
  ck_assert_msg(admin.size() <= after_first + 16, "grew from %zu to %zu: %s", after_first, admin.size(), admin.c_str());
  ck_assert_uint_lt(admin.size(), 512);
  ck_assert_contains(admin, "; site note");
}
END_TEST

START_TEST(job_list_is_aligned_and_escaped) {
  JobListRow a;
  a.job_id = 812;
  a.name = "train\x1b]0;x";
  a.user = "ml-bob";
  a.now = 1000;
  SlurmJobView v = view("RUNNING");
  v.start_time = 900;
  v.comment = report(988, "step-7");
  a.status = ml_status(v);
  JobListRow b;
  b.job_id = 9;
  b.name = "q";
  b.user = "ml-alice";
  b.status = ml_status(view("PENDING"));
  const std::string text = format_job_list({a, b});
  ck_assert_contains(text, "JOBID  NAME           USER      STATE    RUN  CHECKPOINT  REASON\n");
  ck_assert_contains(text, "812    train\\x1b]0;x  ml-bob    running  1    12 s ago    run 1\n");
  ck_assert_contains(text, "9      q              ml-alice  queued   -    -           waiting\n");
}
END_TEST

Suite* lifecycle_suite() {
  Suite* s = suite_create("lifecycle");
  TCase* tc = tcase_create("core");
  tcase_add_test(tc, states_follow_a_jobs_life);
  tcase_add_test(tc, ends_are_named);
  tcase_add_test(tc, history_of_three_runs);
  tcase_add_test(tc, history_without_accounting_says_what_is_unknown);
  tcase_add_test(tc, history_is_bounded_and_escapes);
  tcase_add_test(tc, checkpoint_report_names);
  tcase_add_test(tc, resume_reports_fill_in_late_checkpoint_reports);
  tcase_add_test(tc, record_stays_bounded_after_1000_preemptions);
  tcase_add_test(tc, job_list_is_aligned_and_escaped);
  suite_add_tcase(s, tc);
  return s;
}
