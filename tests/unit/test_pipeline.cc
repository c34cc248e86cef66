// Pipelines (core/pipeline.h): the file's checks, each with the message a user
// sees; the order and the Slurm dependencies of the stages and their retries; the
// membership stored on each job; the status built from the jobs.
#include <string>

#include "core/job_record.h"
#include "core/pipeline.h"
#include "core/submit.h"
#include "core/text.h"
#include "suites.h"

using namespace mlsched;

namespace {

const std::string kThree = R"({
  "pipeline": "nightly",
  "stages": [
    {"name": "data-prep", "script": "data.sh"},
    {"name": "train", "script": "scripts/train.sh", "after": ["data-prep"], "retries": 2},
    {"name": "evaluate", "script": "eval.sh", "after": ["train:ok"]},
    {"name": "report-failure", "script": "fail.sh", "after": ["train:notok"]}
  ]
})";

std::string errors_of(const std::string& text) {
  const PipelineParse p = parse_pipeline(text);
  ck_assert_msg(!p.spec, "expected a refusal of %s", text.c_str());
  ck_assert(!p.errors.empty());
  std::string all;
  for (const auto& e : p.errors) all += e + "\n";
  return all;
}

}  // namespace

START_TEST(reads_a_pipeline) {
  const PipelineParse p = parse_pipeline(kThree);
  ck_assert_msg(p.spec.has_value(), "%s", p.errors.empty() ? "" : p.errors[0].c_str());
  ck_assert_string_eq(p.spec->name, "nightly");
  ck_assert_uint_eq(p.spec->stages.size(), 4);
  ck_assert_uint_eq(p.spec->stages[1].retries, 2);
  ck_assert(p.spec->stages[3].after[0].kind == AfterKind::notok);
  const auto order = submission_order(*p.spec);
  ck_assert_string_eq(order[0]->name, "data-prep");
  ck_assert_string_eq(order[1]->name, "train");
}
END_TEST

START_TEST(refuses_bad_files_with_their_reason) {
  ck_assert_contains(errors_of("{\"pipeline\": \"x\", \"stages\": [}"), "not valid JSON at line 1");
  ck_assert_contains(errors_of("[]"), "one JSON object");
  ck_assert_contains(errors_of(R"({"pipeline": "x", "stages": [{"name": "a", "script": "a.sh"}], "stage": 1})"),
                     "unknown key \"stage\"; did you mean \"stages\"?");
  ck_assert_contains(errors_of(R"({"pipeline": "x", "stages": [{"name": "a", "scirpt": "a.sh"}]})"),
                     "stages[0]: unknown key \"scirpt\"; did you mean \"script\"?");
  ck_assert_contains(errors_of(R"({"pipeline": "x", "stages": [{"name": "a", "script": "a.sh", "gpus": 1}]})"),
                     "stages[0]: unknown key \"gpus\" (a stage has name, script, after, retries)");
  ck_assert_contains(errors_of(R"({"pipeline": "x y", "stages": [{"name": "a", "script": "a.sh"}]})"),
                     "pipeline \"x y\" is not a pipeline name");
  ck_assert_contains(errors_of(R"({"pipeline": "x", "stages": [{"name": "a/b", "script": "a.sh"}]})"),
                     "name \"a/b\" is not a stage name");
  ck_assert_contains(errors_of(R"({"pipeline": "x", "stages": [{"name": "a", "script": "../a.sh"}]})"),
                     "must be a relative path inside the pipeline file's directory");
  ck_assert_contains(errors_of(R"({"pipeline": "x", "stages": [{"name": "a", "script": "/etc/passwd"}]})"),
                     "must be a relative path inside");
  ck_assert_contains(errors_of(R"({"pipeline": "x", "stages": [{"name": "a", "script": "a.sh", "after": ["b"]}]})"),
                     "after names \"b\", which is not a stage of this pipeline");
  ck_assert_contains(errors_of(R"({"pipeline": "x", "stages": [{"name": "a", "script": "a.sh", "after": ["a:maybe"]}]})"),
                     "the kind must be ok");
  ck_assert_contains(errors_of(R"({"pipeline": "x", "stages": [{"name": "a", "script": "a.sh"}, {"name": "a", "script": "b.sh"}]})"),
                     "stages[1] (a): a stage of that name comes earlier");
  ck_assert_contains(errors_of(R"({"pipeline": "x", "stages": [{"name": "a", "script": "a.sh", "retries": 9}]})"),
                     "retries must be a whole number from 0 to 5");
  ck_assert_contains(errors_of(R"({"pipeline": "x", "stages": []})"), "is empty");
  ck_assert_contains(errors_of(R"({"pipeline": "x", "schedule": "61 2 * * *", "stages": [{"name": "a", "script": "a.sh"}]})"),
                     "schedule \"61 2 * * *\": minute 61 is out of range (0-59)");
  ck_assert_contains(errors_of(R"({"pipeline": "x", "concurrency": "forbid", "stages": [{"name": "a", "script": "a.sh"}]})"),
                     "concurrency is only for a pipeline with a schedule");
  ck_assert_contains(errors_of(R"({"pipeline": "x", "schedule": "@daily", "concurrency": "replace", "stages": [{"name": "a", "script": "a.sh"}]})"),
                     "concurrency must be \"forbid\"");
  ck_assert_contains(errors_of(R"({"pipeline": "x", "schedul": "@daily", "stages": [{"name": "a", "script": "a.sh"}]})"),
                     "unknown key \"schedul\"; did you mean \"schedule\"?");
  // Cycles, named in order.
  ck_assert_contains(errors_of(R"({"pipeline": "x", "stages": [
      {"name": "a", "script": "a.sh", "after": ["c"]}, {"name": "b", "script": "b.sh", "after": ["a"]},
      {"name": "c", "script": "c.sh", "after": ["b"]}]})"),
                     "cycle: a -> c -> b -> a");
  // Slurm cannot mix any-of and all-of.
  ck_assert_contains(errors_of(R"({"pipeline": "x", "stages": [
      {"name": "a", "script": "a.sh", "retries": 1}, {"name": "b", "script": "b.sh"},
      {"name": "c", "script": "c.sh", "after": ["a", "b"]}]})"),
                     "stage c: waits for a, which has retries, and for other stages too");
  // Too many stages: refused before they are read.
  std::string many = R"({"pipeline": "x", "stages": [)";
  for (int i = 0; i < 65; ++i) many += std::string(i ? "," : "") + "{\"name\": \"s" + std::to_string(i) + "\", \"script\": \"a.sh\"}";
  ck_assert_contains(errors_of(many + "]}"), "at most 64");
  ck_assert_contains(errors_of(std::string(kMaxPipelineFileBytes + 1, ' ')), "more than the 65536");
}
END_TEST

START_TEST(dependencies_of_stages_and_retries) {
  const PipelineSpec spec = *parse_pipeline(kThree).spec;
  std::map<std::string, std::vector<uint32_t>> ids;
  ck_assert_string_eq(stage_dependency(spec, spec.stages[0], 1, ids), "");
  ids["data-prep"] = {100};
  ck_assert_string_eq(stage_dependency(spec, spec.stages[1], 1, ids), "afterok:100");
  ids["train"] = {101};
  // A retry keeps the upstream edges and waits for every earlier attempt to fail.
  ck_assert_string_eq(stage_dependency(spec, spec.stages[1], 2, ids), "afterok:100,afternotok:101");
  ids["train"] = {101, 102};
  ck_assert_string_eq(stage_dependency(spec, spec.stages[1], 3, ids), "afterok:100,afternotok:101,afternotok:102");
  ids["train"] = {101, 102, 103};
  ck_assert_string_eq(stage_dependency(spec, spec.stages[2], 1, ids), "afterok:101?afterok:102?afterok:103");
  ck_assert_string_eq(stage_dependency(spec, spec.stages[3], 1, ids), "afternotok:101,afternotok:102,afternotok:103");
  const PipelineSpec any = *parse_pipeline(R"({"pipeline": "p", "stages": [{"name": "a", "script": "a", "retries": 1},
      {"name": "b", "script": "b", "after": ["a:any"]}]})").spec;
  ck_assert_string_eq(stage_dependency(any, any.stages[1], 1, {{"a", {7, 8}}}), "afterok:7?afterany:8");
}
END_TEST

// The membership words go through job_submit's plan into the one record codec.
START_TEST(membership_is_stored_and_read_back) {
  const PipelineSpec spec = *parse_pipeline(kThree).spec;
  const PipelineMembership m = membership_of("nightly-3f9a2c", spec.stages[1], 2);
  const std::string words = pipeline_words(m);
  ck_assert_string_eq(words, "pipeline=nightly-3f9a2c stage=train attempt=2/3 after=data-prep:ok");
  JobRequest req;
  req.script = "#!/bin/bash\nhostname\n";
  req.comment = "mlsched: " + words;
  Config config;
  Cluster cluster;
  const SubmitPlan plan = plan_submit(req, config, cluster);
  ck_assert(plan.accepted());
  ck_assert(!plan.has_directives);  // no directive defaults for a plain job
  ck_assert_string_eq(plan.stored, "mlsched: " + words);
  const JobRecord r = decode_job_record(plan.stored);
  ck_assert(r.pipeline.has_value());
  ck_assert(!r.directives.has_value());
  ck_assert_string_eq(r.pipeline->id, "nightly-3f9a2c");
  ck_assert_uint_eq(r.pipeline->attempt, 2);
  ck_assert_uint_eq(r.pipeline->attempts, 3);
  ck_assert_string_eq(r.pipeline->after[0].stage, "data-prep");
  ck_assert(r.unknown_keys().empty());
  // With directives, both are stored.
  req.script = "#!/bin/bash\n#MLSCHED type=inference\nhostname\n";
  const SubmitPlan both = plan_submit(req, config, cluster);
  ck_assert(both.accepted());
  ck_assert_contains(both.stored, "type=inference");
  ck_assert_contains(both.stored, words);
  ck_assert(decode_job_record(both.stored).directives && decode_job_record(both.stored).pipeline);
  // Words that do not read are refused with the reason.
  req.script = "#!/bin/bash\nhostname\n";
  req.comment = "mlsched: pipeline=x stage=a attempt=4/3";
  const SubmitPlan bad = plan_submit(req, config, cluster);
  ck_assert(!bad.accepted());
  ck_assert_contains(bad.user_message(), "attempt=4/3 is not N/M");
  req.comment = "mlsched: stage=a";
  ck_assert_contains(plan_submit(req, config, cluster).user_message(), "pipeline= and stage= go together");
}
END_TEST

namespace {
StageJob job(uint32_t id, const std::string& stage, uint32_t attempt, uint32_t attempts, const std::string& state,
             std::vector<AfterEdge> after = {}) {
  StageJob j;
  j.job_id = id;
  j.membership.id = "p-1";
  j.membership.stage = stage;
  j.membership.attempt = attempt;
  j.membership.attempts = attempts;
  j.membership.after = std::move(after);
  j.name = "p/" + stage;
  j.state = state;
  j.allocated = state != "PENDING";  // callers unset it for jobs that never ran
  return j;
}
}  // namespace

START_TEST(status_of_a_running_pipeline_chains_etas) {
  const time_t now = 1'000'000;
  std::vector<StageJob> jobs;
  jobs.push_back(job(10, "data", 1, 1, "COMPLETED"));
  jobs.back().start = now - 100;
  jobs.back().end = now - 50;
  jobs.push_back(job(11, "train", 1, 1, "RUNNING", {{"data", AfterKind::ok}}));
  jobs.back().start = now - 40;
  jobs.back().time_limit_s = 600;
  jobs.push_back(job(12, "eval", 1, 1, "PENDING", {{"train", AfterKind::ok}}));
  jobs.back().reason = "Dependency";
  jobs.back().time_limit_s = 300;
  const PipelineStatus st = pipeline_status("p-1", jobs, now);
  ck_assert_string_eq(st.state, "running");
  ck_assert_string_eq(st.name, "p");
  ck_assert_string_eq(st.stages[0].state, "completed");
  ck_assert_string_eq(st.stages[1].state, "running");
  ck_assert_int_eq(st.stages[1].expected_end, now + 560);
  ck_assert_string_eq(st.stages[2].state, "waiting");
  ck_assert_contains(st.stages[2].detail, "waits for train (running)");
  ck_assert_int_eq(st.stages[2].eta, now + 560);
  ck_assert_int_eq(st.stages[2].expected_end, now + 860);
  const std::string text = format_pipeline_status(st, now);
  ck_assert_contains(text, "pipeline p-1 (p): running, 3 stages");
  ck_assert_contains(text, "ETA in 9 min");
  ck_assert_contains(pipeline_chain_text(st, "train"), "After it: eval (after ok): waiting, job 12");
}
END_TEST

START_TEST(status_after_a_failure_and_a_retry) {
  const time_t now = 2'000'000;
  std::vector<StageJob> jobs;
  // train: attempt 1 failed, attempt 2 completed, attempt 3 not needed.
  jobs.push_back(job(20, "train", 1, 3, "FAILED"));
  jobs.back().start = now - 300;
  jobs.back().end = now - 200;
  jobs.back().exit_code = 3;
  jobs.push_back(job(21, "train", 2, 3, "COMPLETED"));
  jobs.back().start = now - 190;
  jobs.back().end = now - 100;
  jobs.push_back(job(22, "train", 3, 3, "CANCELLED"));
  jobs.back().reason = "DependencyNeverSatisfied";
  jobs.back().allocated = false;
  jobs.back().start = jobs.back().end = now - 100;
  // prep failed for good: eval (after ok) was cancelled by Slurm, cleanup (notok) ran.
  jobs.push_back(job(23, "prep", 1, 1, "FAILED"));
  jobs.back().start = now - 50;
  jobs.back().end = now - 40;
  jobs.back().exit_code = 1;
  jobs.push_back(job(24, "eval", 1, 1, "CANCELLED", {{"prep", AfterKind::ok}}));
  jobs.back().reason = "DependencyNeverSatisfied";
  jobs.back().allocated = false;
  jobs.back().start = jobs.back().end = now - 39;
  const PipelineStatus st = pipeline_status("p-1", jobs, now);
  ck_assert_string_eq(st.stages[0].state, "completed");
  ck_assert_uint_eq(st.stages[0].current->job_id, 21);
  ck_assert_contains(st.stages[0].detail, "after 1 failed attempt(s)");
  ck_assert_string_eq(st.stages[1].state, "failed");
  ck_assert_contains(st.stages[1].detail, "FAILED (exit code 1)");
  ck_assert_string_eq(st.stages[2].state, "skipped");
  ck_assert_contains(st.stages[2].detail, "cancelled by Slurm, never ran: prep did not succeed");
  ck_assert_int_eq(st.stages[2].start, 0);
  ck_assert_string_eq(st.state, "failed");
  ck_assert_int_eq(st.stages[2].end, 0);
  // why for the failed upstream says what became of the stage after it.
  ck_assert_contains(pipeline_chain_text(st, "prep"), "stage prep: failed (FAILED (exit code 1)). After it: eval (after ok): skipped, job 24");
}
END_TEST

// Slurm sets start = end on a pending job it cancels; a job cancelled in the second
// it started has them equal too. Whether it had nodes tells them apart.
START_TEST(cancelled_stages_say_whether_they_ran) {
  const time_t now = 3'000'000;
  std::vector<StageJob> jobs;
  jobs.push_back(job(30, "a", 1, 1, "CANCELLED"));
  jobs.back().start = jobs.back().end = now - 5;
  jobs.push_back(job(31, "b", 1, 1, "CANCELLED", {{"a", AfterKind::ok}}));
  jobs.back().start = jobs.back().end = now - 5;
  jobs.back().allocated = false;
  jobs.back().reason = "Dependency";
  const PipelineStatus st = pipeline_status("p-1", jobs, now);
  ck_assert_string_eq(st.stages[0].detail, "cancelled while running");
  ck_assert_string_eq(st.stages[1].detail, "cancelled before it ran");
  ck_assert_string_eq(st.state, "cancelled");
}
END_TEST

// Schedules are checked as Slurm's scrontab reads them, each problem named by field.
START_TEST(cron_schedules_are_checked_by_field) {
  for (const char* ok : {"0 2 * * *", "*/15 * * * *", "0 0-6,22,23 * * 1-5", "30 4 1 jan *", "0 12 * * sun",
                         "0 0 1,15 */3 *", "@hourly", "@DAILY", "@midnight", "@weekly", "@monthly", "@annually",
                         " 5  4\t* * * "})
    ck_assert_msg(cron_schedule_problem(ok).empty(), "%s: %s", ok, cron_schedule_problem(ok).c_str());
  ck_assert_contains(cron_schedule_problem(""), "is empty; a cron schedule has five fields");
  ck_assert_contains(cron_schedule_problem("0 2 * *"), "has 4 fields; a cron schedule has five: minute hour");
  ck_assert_contains(cron_schedule_problem("0 2 * * * *"), "has 6 fields");
  ck_assert_contains(cron_schedule_problem("0 24 * * *"), "hour 24 is out of range (0-23)");
  ck_assert_contains(cron_schedule_problem("0 2 0 * *"), "day of month 0 is out of range (1-31)");
  ck_assert_contains(cron_schedule_problem("0 2 * 13 *"), "month 13 is out of range (1-12)");
  ck_assert_contains(cron_schedule_problem("0 2 * * 8"), "day of week 8 is out of range (0-7)");
  ck_assert_contains(cron_schedule_problem("5-1 2 * * *"), "minute range 5-1 runs backwards");
  ck_assert_contains(cron_schedule_problem("*/1 * * * *"), "minute step \"/1\" must be a number from 2 to 59");
  ck_assert_contains(cron_schedule_problem("*/ * * * *"), "minute step \"/\" must be a number");
  ck_assert_contains(cron_schedule_problem("0 2 * foo *"), "month \"foo\" is not a 3-letter month name");
  ck_assert_contains(cron_schedule_problem("0 x * * *"), "hour \"x\" is not a number");
  ck_assert_contains(cron_schedule_problem("0 2,a * * *"), "hour \"2,a\" is not a number, a range a-b or a list");
  ck_assert_contains(cron_schedule_problem("@dialy"), "is not one of @hourly, @daily");
  ck_assert_contains(cron_schedule_problem("@dialy"), "did you mean @daily?");
  ck_assert_contains(cron_schedule_problem(std::string(200, '1')), "longer than 128 characters");
}
END_TEST

START_TEST(schedule_block_replaces_only_its_own_lines) {
  const PipelineParse p = parse_pipeline(R"({"pipeline": "nightly", "schedule": "0 2 * * *", "concurrency": "allow",
                                           "stages": [{"name": "a", "script": "a.sh"}]})");
  ck_assert(p.spec.has_value());
  ck_assert(p.spec->concurrency == Concurrency::allow);
  ScheduleEntry e{"/usr/bin/mlsched", "/home/u/p/nightly.json", "/home/u/p/nightly.schedule.log", "/opt/slurm/bin:/usr/bin:/bin",
                  "/etc/slurm/slurm.conf"};
  const std::string block = schedule_block(*p.spec, e);
  ck_assert_contains(block, "#SCRON --job-name=nightly/schedule\n");
  ck_assert_contains(block, "#SCRON --output=/home/u/p/nightly.schedule.log --open-mode=append\n");
  ck_assert(block.find("--comment") == std::string::npos);
  ck_assert_contains(block, "\n0 2 * * * /usr/bin/env PATH=/opt/slurm/bin:/usr/bin:/bin SLURM_CONF=/etc/slurm/slurm.conf "
                            "/usr/bin/mlsched pipeline fire --name nightly /home/u/p/nightly.json\n");
  const std::string mine = "MAILTO=x\n#SCRON -t 5\n*/5 * * * * /home/u/poll.sh\n";
  bool found = true;
  ck_assert_string_eq(crontab_without(mine, "nightly", &found), mine);
  ck_assert(!found);
  const std::string both = mine + block;
  ck_assert_string_eq(crontab_without(both, "nightly", &found), mine);
  ck_assert(found);
  // Another pipeline's block, and this one disabled by scancel (scrontab -l's form).
  std::string disabled;
  for (const auto& line : split(block, '\n'))
    if (!line.empty()) disabled += std::string(starts_with(line, "#SCRON") || line[0] != '#' ? "#DISABLED: " : "") + line + "\n";
  const std::string other = schedule_block(PipelineSpec{"nightly2", {}, "@daily", Concurrency::forbid}, e);
  ck_assert_string_eq(crontab_without(mine + disabled + other, "nightly", &found), (mine + other));
  ck_assert(found);
  ck_assert_string_eq(crontab_without(block, "nightly"), "");
  ck_assert(crontab_safe_path("/home/u/p-1/x_y.json"));
  for (const char* bad : {"relative/x.json", "/home/u/a b.json", "/home/u/$(id).json", "/home/u/x;y", "/home/u/`x`", "",
                          "/home/u/x'y", "/home/u/x\ny"})
    ck_assert_msg(!crontab_safe_path(bad), "%s", bad);
}
END_TEST

START_TEST(schedule_note_round_trips_and_reads_for_people) {
  ScheduleNote n;
  ck_assert_string_eq(encode_schedule_note(n), "pipeline-schedule;concurrency=forbid;submitted=0;skipped=0;failed=0");
  n.submitted = 3;
  n.skipped = 1;
  n.last = 1'000'000;
  n.last_outcome = "skipped";
  n.last_run = "nightly-0a1b2c";
  const auto back = decode_schedule_note(encode_schedule_note(n));
  ck_assert(back.has_value());
  ck_assert_uint_eq(back->submitted, 3);
  ck_assert_uint_eq(back->skipped, 1);
  ck_assert_int_eq(back->last, 1'000'000);
  ck_assert_string_eq(back->last_run, "nightly-0a1b2c");
  ck_assert_contains(format_schedule_note(*back, 1'000'090),
                     "(2 min ago): skipped, run nightly-0a1b2c was still going (concurrency forbid); 3 runs "
                     "submitted, 1 skipped, 0 failed so far");
  ck_assert(!decode_schedule_note("nightly data"));
  ck_assert(!decode_schedule_note("pipeline-schedule;outcome=launched"));
  ck_assert(!decode_schedule_note("pipeline-schedule;submitted=-1"));
  ck_assert(!decode_schedule_note("pipeline-schedule;run=a b"));
  ck_assert(is_run_of("nightly-0a1b2c", "nightly"));
  ck_assert(!is_run_of("nightly2-0a1b2c", "nightly"));
  ck_assert(!is_run_of("nightly-0a1b2", "nightly"));
  ck_assert(!is_run_of("nightly-0a1b2z", "nightly"));
}
END_TEST

Suite* pipeline_suite() {
  Suite* s = suite_create("pipeline");
  TCase* tc = tcase_create("pipeline");
  tcase_add_test(tc, reads_a_pipeline);
  tcase_add_test(tc, refuses_bad_files_with_their_reason);
  tcase_add_test(tc, dependencies_of_stages_and_retries);
  tcase_add_test(tc, membership_is_stored_and_read_back);
  tcase_add_test(tc, status_of_a_running_pipeline_chains_etas);
  tcase_add_test(tc, status_after_a_failure_and_a_retry);
  tcase_add_test(tc, cancelled_stages_say_whether_they_ran);
  tcase_add_test(tc, cron_schedules_are_checked_by_field);
  tcase_add_test(tc, schedule_block_replaces_only_its_own_lines);
  tcase_add_test(tc, schedule_note_round_trips_and_reads_for_people);
  suite_add_tcase(s, tc);
  return s;
}
