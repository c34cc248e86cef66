#include <algorithm>
#include <csignal>

#include "core/submit.h"
#include "core/text.h"
#include "fixtures.h"
#include "suites.h"

using namespace mlsched;

static JobRequest job(const std::string& directives, const std::string& tres_per_node = "gres:gpu:8",
                      uint32_t nodes = 1) {
  JobRequest r;
  r.script = "#!/bin/bash\n#SBATCH -N " + std::to_string(nodes) + "\n#MLSCHED " + directives + "\nsrun x\n";
  r.tres_per_node = tres_per_node;
  r.min_nodes = nodes;
  return r;
}

START_TEST(plain_jobs_are_left_alone) {
  JobRequest r;
  r.script = "#!/bin/bash\nhostname\n";
  r.tres_per_node = "gres:gpu:2";
  SubmitPlan p = plan_submit(r, Config{}, fixture_cluster());
  ck_assert(p.accepted());
  ck_assert(!p.has_directives);
  ck_assert(!p.tres_per_node && !p.requeue && !p.warn_signal);
  ck_assert_string_eq(p.user_message().c_str(), "");
}
END_TEST

START_TEST(single_type_becomes_typed_gres) {
  SubmitPlan p = plan_submit(job("gpu-type=h100 checkpoint-signal=USR1 checkpoint-grace=300 max-restarts=5", "gres:gpu:8", 2),
                             Config{}, fixture_cluster());
  ck_assert_msg(p.accepted(), "%s", p.user_message().c_str());
  ck_assert_string_eq(p.tres_per_node.value().c_str(), "gres:gpu:h100:8");
  ck_assert_int_eq(p.warn_signal.value(), SIGUSR1);
  ck_assert_int_eq(p.warn_time.value(), 300);
  ck_assert(p.warn_batch_only);
  ck_assert(p.requeue.value());
  ck_assert_contains(p.stored, "mlsched: type=training gpu-type=h100 ");
  ck_assert_contains(p.stored, "max-restarts=5");
}
END_TEST

START_TEST(gpus_per_job_and_task_are_typed_too) {
  JobRequest r = job("gpu-type=A100", "");
  r.tres_per_job = "gres:gpu:4";
  SubmitPlan p = plan_submit(r, Config{}, fixture_cluster());
  ck_assert_msg(p.accepted(), "%s", p.user_message().c_str());
  ck_assert_string_eq(p.tres_per_job.value().c_str(), "gres:gpu:a100:4");  // cluster's spelling
  ck_assert(!p.tres_per_node);
  ck_assert_string_eq(type_gpu_tres("gres:gpu:2,gres:shard:1", "h100").c_str(), "gres:gpu:h100:2,gres:shard:1");
}
END_TEST

START_TEST(type_list_becomes_matching_or_constraint) {
  JobRequest r = job("gpu-type=h100,a100");
  SubmitPlan p = plan_submit(r, Config{}, fixture_cluster());
  ck_assert_msg(p.accepted(), "%s", p.user_message().c_str());
  ck_assert(!p.tres_per_node);
  ck_assert_string_eq(p.features.value().c_str(), "[h100|a100]");
  ck_assert_string_eq(p.prefer.value().c_str(), "h100");
  // Under select/mlsched the order is followed by placement: no --prefer.
  r.placement_orders_types = true;
  p = plan_submit(r, Config{}, fixture_cluster());
  ck_assert_string_eq(p.features.value().c_str(), "[h100|a100]");
  ck_assert(!p.prefer);
  r.placement_orders_types = false;
  r.features = "bigmem";
  p = plan_submit(r, Config{}, fixture_cluster());
  ck_assert_string_eq(p.features.value().c_str(), "bigmem&[h100|a100]");
  r.features = "a|b";
  p = plan_submit(r, Config{}, fixture_cluster());
  ck_assert(!p.accepted());
  ck_assert_contains(p.user_message(), "cannot be combined with a --constraint");
}
END_TEST

START_TEST(type_list_needs_node_features) {
  Cluster c;
  GpuNode n;
  n.name = "g1";
  n.gpu_type = "h100";
  n.gpus = 8;
  c.add_node(n);
  n.name = "g2";
  n.gpu_type = "a100";
  c.add_node(n);
  SubmitPlan p = plan_submit(job("gpu-type=h100,a100"), Config{}, c);
  ck_assert(!p.accepted());
  ck_assert_contains(p.user_message(), "nodes with h100 GPUs lack the node feature 'h100'");
}
END_TEST

START_TEST(reject_classes_have_clear_messages) {
  struct Case {
    JobRequest req;
    const char* message;
  } cases[] = {
      {job("gpu-type=h200"), "gpu-type=h200: this cluster has no h200 GPUs (it has a100, h100)"},
      {job("gpu-type=h100", ""), "gpu-type=h100 needs GPUs: add --gres=gpu:N"},
      {job("gpu-type=h100", "gres:gpu:a100:2"), "conflicts with the job's GPU request for a100"},
      {job("locality=nvlink-domain", ""), "locality=nvlink-domain places GPUs; this job asks for none"},
      {job("gpu-type=h100 locality=nvlink-domain locality-mode=strict", "gres:gpu:8", 6),
       "locality=nvlink-domain locality-mode=strict: the job needs 48 GPUs (6 nodes x 8) in one NVLink domain, "
       "but the largest has 32 h100 GPUs (nvl0)"},
      {job("locality=node locality-mode=strict", "gres:gpu:8", 2), "locality=node keeps a job on one node"},
      {job("gpu-type=a100", "gres:gpu:8", 9), "the whole cluster has 64 a100 GPUs on 8 suitable nodes"},
      {job("gpu-type=a100", "gres:gpu:16", 1), "asks for 16 GPUs of type a100"},
      {job("type=sweep preemptible=no"), "sweep jobs must be preemptible"},
  };
  for (auto& c : cases) {
    SubmitPlan p = plan_submit(c.req, Config{}, fixture_cluster());
    ck_assert_msg(!p.accepted(), "accepted: %s", c.req.script.c_str());
    ck_assert_contains(p.user_message(), c.message);
  }
}
END_TEST

START_TEST(locality_without_topology) {
  SubmitPlan p = plan_submit(job("locality=nvlink-domain locality-mode=strict"), Config{},
                             fixture_cluster(false, false));
  ck_assert(!p.accepted());
  ck_assert_contains(p.user_message(), "this cluster declares no NVLink domains");
  p = plan_submit(job("locality=switch locality-mode=strict"), Config{}, fixture_cluster(false, false));
  ck_assert_contains(p.user_message(), "no switch topology");
}
END_TEST

START_TEST(prefer_mode_accepts_with_a_note) {
  SubmitPlan p = plan_submit(job("gpu-type=h100 locality=nvlink-domain locality-mode=prefer", "gres:gpu:8", 6),
                             Config{}, fixture_cluster());
  ck_assert_msg(p.accepted(), "%s", p.user_message().c_str());
  ck_assert_contains(p.user_message(), "with locality-mode=prefer the job runs wider");
  // Fits in a domain: nothing to say.
  p = plan_submit(job("gpu-type=h100 locality=nvlink-domain locality-mode=strict", "gres:gpu:8", 4), Config{},
                  fixture_cluster());
  ck_assert(p.accepted());
  ck_assert_string_eq(p.user_message().c_str(), "");
}
END_TEST

START_TEST(several_problems_are_listed_together) {
  JobRequest r = job("gpu_type=h100 preemptible=perhaps");
  SubmitPlan p = plan_submit(r, Config{}, fixture_cluster());
  const std::string m = p.user_message();
  ck_assert_contains(m, "mlsched: 2 problems with this job:");
  ck_assert_contains(m, "\n  line 3: unknown key 'gpu_type'");
  ck_assert_contains(m, "\n  line 3: preemptible=perhaps must be yes or no");
}
END_TEST

START_TEST(signals_and_requeue) {
  // The user's own --signal stands and is recorded.
  JobRequest r = job("type=training");
  r.warn_signal = SIGUSR2;
  r.warn_time = 60;
  SubmitPlan p = plan_submit(r, Config{}, fixture_cluster());
  ck_assert(p.accepted());
  ck_assert(!p.warn_signal);
  ck_assert_int_eq(p.directives.checkpoint_signal, SIGUSR2);
  ck_assert_contains(p.stored, "checkpoint-signal=USR2 checkpoint-grace=60");
  // A conflicting directive is refused.
  r = job("checkpoint-signal=USR1");
  r.warn_signal = SIGUSR2;
  p = plan_submit(r, Config{}, fixture_cluster());
  ck_assert_contains(p.user_message(), "checkpoint-signal=USR1 conflicts with --signal=USR2");
  // No signal unless the job says it handles one.
  p = plan_submit(job("type=training"), Config{}, fixture_cluster());
  ck_assert(!p.warn_signal);
  ck_assert(p.requeue.value());
  // Not preemptible, no restarts: requeue untouched.
  p = plan_submit(job("type=inference"), Config{}, fixture_cluster());
  ck_assert(!p.requeue);
  // --no-requeue on a preemptible job: accepted with a warning.
  r = job("type=training");
  r.requeue = false;
  p = plan_submit(r, Config{}, fixture_cluster());
  ck_assert(p.accepted());
  ck_assert(!p.requeue);
  ck_assert_contains(p.user_message(), "--no-requeue: when preempted this job is cancelled");
}
END_TEST

START_TEST(a_time_limit_too_short_for_the_checkpoint_signal_is_noted) {
  // grace 30 s: a limit must be longer than 90 s, or the signal may come before
  // the script runs. Accepted either way: the job may still be useful.
  JobRequest r = job("checkpoint-signal=USR1 checkpoint-grace=30");
  r.time_limit = 1;
  SubmitPlan p = plan_submit(r, Config{}, fixture_cluster());
  ck_assert(p.accepted());
  ck_assert_contains(p.user_message(), "--time=1 is not longer than checkpoint-grace (30 s) + 60 s: Slurm may send the "
                                       "checkpoint signal before the job's script has started, and the checkpoint is "
                                       "lost; give --time=2 or more");
  r.time_limit = 2;
  p = plan_submit(r, Config{}, fixture_cluster());
  ck_assert(p.user_message().find("--time=") == std::string::npos);
  // The user's own --signal=USR2@120 with a 3-minute limit: 180 <= 180.
  r = job("type=training");
  r.warn_signal = SIGUSR2;
  r.warn_time = 120;
  r.time_limit = 3;
  p = plan_submit(r, Config{}, fixture_cluster());
  ck_assert_contains(p.user_message(), "--time=3 is not longer than checkpoint-grace (120 s) + 60 s");
  ck_assert_contains(p.user_message(), "give --time=4 or more");
  // No signal, or no limit given: nothing to say.
  r = job("type=training");
  r.time_limit = 1;
  ck_assert(plan_submit(r, Config{}, fixture_cluster()).user_message().find("--time=") == std::string::npos);
  r = job("checkpoint-grace=30");
  ck_assert(plan_submit(r, Config{}, fixture_cluster()).user_message().find("--time=") == std::string::npos);
}
END_TEST

START_TEST(comment_directives_for_srun) {
  JobRequest r;
  r.comment = "mlsched: type=interactive gpu-type=a100";
  r.tres_per_node = "gres:gpu:1";
  SubmitPlan p = plan_submit(r, Config{}, fixture_cluster());
  ck_assert_msg(p.accepted(), "%s", p.user_message().c_str());
  ck_assert_string_eq(p.tres_per_node.value().c_str(), "gres:gpu:a100:1");
  ck_assert_contains(p.stored, "type=interactive");
  ck_assert_contains(p.stored, "locality=node");
  r.comment = "mlsched: gpu-typo=a100";
  p = plan_submit(r, Config{}, fixture_cluster());
  ck_assert_contains(p.user_message(), "--comment: unknown key 'gpu-typo'; did you mean 'gpu-type'?");
}
END_TEST


// ==== hostile submissions: bounded, escaped, every problem at once ==============

static size_t count_lines(const std::string& s) { return static_cast<size_t>(std::count(s.begin(), s.end(), '\n')) + 1; }

START_TEST(a_flood_of_bad_lines_gives_a_bounded_message) {
  JobRequest r;
  r.script = "#!/bin/bash\n";
  for (int i = 0; i < 300000; ++i) r.script += "#MLSCHED b" + std::to_string(i) + "=1\n";
  r.script += "srun x\n";
  r.tres_per_node = "gres:gpu:1";
  SubmitPlan p = plan_submit(r, Config{}, fixture_cluster());
  ck_assert(!p.accepted());
  ck_assert_uint_le(p.errors.size(), kMaxProblemsKept);  // slurmctld keeps no more than this
  const std::string msg = p.user_message();
  ck_assert_contains(msg, "mlsched: 300000 problems with this job:");
  ck_assert_contains(msg, "line 2: unknown key 'b0'");
  ck_assert_contains(msg, "... and 299980 more");
  ck_assert_uint_le(count_lines(msg), SubmitPlan::kMaxProblemsShown + 2);
  ck_assert_uint_lt(msg.size(), 8000);
}
END_TEST

START_TEST(long_keys_and_values_are_cut_when_echoed) {
  const std::string key(10000, 'k'), value(100000, 'v');
  SubmitPlan p = plan_submit(job(key + "=1 checkpoint-grace=" + value), Config{}, fixture_cluster());
  ck_assert(!p.accepted());
  const std::string msg = p.user_message();
  ck_assert_contains(msg, "unknown key '" + std::string(kMaxShownBytes, 'k') + "...(9936 more bytes)'");
  ck_assert_contains(msg, "checkpoint-grace=" + std::string(kMaxShownBytes, 'v') + "...(99936 more bytes) is not");
  ck_assert_uint_lt(msg.size(), 2000);
}
END_TEST

START_TEST(control_bytes_are_escaped_in_messages) {
  // ESC (a terminal sequence), DEL, VT, FF and U+202E (right-to-left override).
  SubmitPlan p = plan_submit(job("gpu-type=h\x1b[2Jx \x7f\x0b\x0c=1 type=\xe2\x80\xaeniart"), Config{}, fixture_cluster());
  ck_assert(!p.accepted());
  const std::string msg = p.user_message();
  for (char c : msg) ck_assert_msg(static_cast<unsigned char>(c) >= 0x20 || c == '\n', "raw control byte %d", c);
  ck_assert(msg.find("\xe2\x80\xae") == std::string::npos);
  ck_assert_contains(msg, "\\x1b[2Jx");
  ck_assert_contains(msg, "\\x7f\\x0b\\x0c");
  ck_assert_contains(msg, "type=\\u{202e}niart is not a job type");
  const std::string once = escape_controls("a\x1b b\xe2\x80\xae\xc2\x9b");
  ck_assert_string_eq(once, "a\\x1b b\\u{202e}\\u{009b}");
  ck_assert_string_eq(escape_controls(once), once);  // escaping twice changes nothing
}
END_TEST

START_TEST(every_problem_is_reported_at_once) {
  SubmitPlan p = plan_submit(job("gpu-type=h100;rm -rf /"), Config{}, fixture_cluster());
  ck_assert(!p.accepted());
  const std::string msg = p.user_message();
  ck_assert_contains(msg, "mlsched: 3 problems with this job:");
  ck_assert_contains(msg, "'-rf' is not key=value");
  ck_assert_contains(msg, "'/' is not key=value");
  ck_assert_contains(msg, "gpu-type=h100;rm names 'h100;rm', which is not a GPU type");
}
END_TEST


START_TEST(updates_may_restore_but_not_change_directives) {
  SubmitPlan plan = plan_submit([] {
    JobRequest r;
    r.script = "#!/bin/bash\nsrun x\n";
    r.comment = "mlsched: gpu-type=h100 checkpoint-grace=5m";
    r.tres_per_node = "gres:gpu:1";
    return r;
  }(), Config{}, fixture_cluster());
  ck_assert_msg(plan.accepted(), "%s", plan.user_message().c_str());
  JobUpdate u;
  u.admin_comment = plan.stored;
  u.current_comment = "mlsched: gpu-type=h100 checkpoint-grace=5m";
  // A plain note, a cleared comment, and the checkpoint report pass.
  for (const std::string c : {"first try", "", "mlsched: gpu-type=h100 checkpoint-grace=5m mlsched-checkpoint=17"}) {
    u.comment = c;
    ck_assert_msg(check_update(u, Config{}).allowed(), "refused %s", c.c_str());
  }
  // The comment was cleared; putting the original directives back is no change.
  u.current_comment = "";
  u.comment = "mlsched: gpu-type=h100 checkpoint-grace=5m";
  ck_assert_msg(check_update(u, Config{}).allowed(), "%s", check_update(u, Config{}).reason.c_str());
  u.comment = "mlsched: checkpoint-grace=300 gpu-type=H100";  // same meaning, other spelling
  ck_assert(check_update(u, Config{}).allowed());
  // Other directives are refused, with the reason.
  for (const std::string c : {"mlsched: gpu-type=a100 checkpoint-grace=5m", "mlsched: gpu-type=h100",
                              "mlsched: gpu-type=h100 checkpoint-grace=5m bogus=1"}) {
    u.comment = c;
    const UpdateVerdict v = check_update(u, Config{});
    ck_assert_msg(!v.allowed(), "allowed %s", c.c_str());
    ck_assert(v.kind == UpdateVerdict::Kind::directives_fixed);
    ck_assert_contains(v.reason, "mlsched: a job's directives are fixed at submission");
    ck_assert_contains(v.reason, "gpu-type=h100");
  }
  // A GPU type the directives exclude.
  u.comment.reset();
  u.request.tres_per_node = "gres:gpu:a100:1";
  UpdateVerdict v = check_update(u, Config{});
  ck_assert(v.kind == UpdateVerdict::Kind::gpu_type_excluded);
  ck_assert_contains(v.reason, "GPU type a100 is outside this job's gpu-type directive (h100)");
  u.request.tres_per_node = "gres:gpu:h100:2";
  ck_assert(check_update(u, Config{}).allowed());
}
END_TEST

// Two leaves of two h100 nodes under one spine: a strict locality=switch gang of
// three nodes fits under the spine (placement places it there), so job_submit
// must not refuse it for fitting under no single leaf.
static Cluster spine_cluster() {
  Cluster c;
  for (int i = 1; i <= 4; ++i) {
    GpuNode n;
    n.name = "g" + std::to_string(i);
    n.gpu_type = "h100";
    n.gpus = 8;
    c.add_node(n);
  }
  c.set_switches({{"leaf0", 0, {"g1", "g2"}}, {"leaf1", 0, {"g3", "g4"}}, {"spine", 1, {"g1", "g2", "g3", "g4"}}});
  return c;
}

START_TEST(strict_switch_gang_fits_under_a_spine) {
  const Cluster c = spine_cluster();
  SubmitPlan p = plan_submit(job("gpu-type=h100 locality=switch locality-mode=strict", "gres:gpu:8", 3), Config{}, c);
  ck_assert_msg(p.accepted(), "%s", p.user_message().c_str());
  // Five nodes fit under no switch at all: still refused, naming the largest one.
  p = plan_submit(job("gpu-type=h100 locality=switch locality-mode=strict", "gres:gpu:8", 5), Config{}, c);
  ck_assert(!p.accepted());
}
END_TEST

// One normalized gang request for select and why: per-task GPUs count per task
// (for why) but are cons_tres's to place; the directives' gpu-type wins over the
// TRES type, and without one the TRES type stays.
START_TEST(gang_request_is_one_normalization) {
  JobRequest r;
  r.tres_per_node = "gres:gpu:h100:8";
  GangRequest g = gang_request(read_gpu_request(r), 2, 0, std::nullopt);
  ck_assert(g.placed_by_mlsched);
  ck_assert_uint_eq(g.request.gang.nodes, 2);
  ck_assert_uint_eq(g.request.gang.gpus_per_node, 8);
  ck_assert(g.request.gpu_types == std::vector<std::string>{"h100"});
  JobDirectives d;
  d.locality = Locality::nvlink_domain;
  d.locality_mode = LocalityMode::strict;
  g = gang_request(read_gpu_request(r), 2, 0, d);
  ck_assert(g.request.gpu_types == std::vector<std::string>{"h100"});
  ck_assert(g.request.locality == Locality::nvlink_domain && g.request.mode == LocalityMode::strict);
  d.gpu_types = {"a100", "h100"};
  g = gang_request(read_gpu_request(r), 2, 0, d);
  ck_assert(g.request.gpu_types == (std::vector<std::string>{"a100", "h100"}));
  JobRequest t;
  t.tres_per_task = "gres:gpu:1";
  g = gang_request(read_gpu_request(t), 1, 4, std::nullopt);
  ck_assert(!g.placed_by_mlsched);
  ck_assert_uint_eq(g.request.gang.total_gpus, 4);
}
END_TEST


// A region of one GPU type, as scripts/cluster's region shapes are.
static Cluster region_of(const char* type) {
  Cluster c;
  for (const char* n : {"r1", "r2"}) c.add_node(GpuNode{n, type, 8, {}, "", "", {type}});
  return c;
}

START_TEST(a_type_only_another_region_has_is_left_to_that_region) {
  // east (h100) is the origin; west declares a100 as a cluster feature.
  JobRequest r = job("gpu-type=a100");
  r.other_region_gpu_types = std::vector<std::string>{"a100"};
  SubmitPlan p = plan_submit(r, Config{}, region_of("h100"));
  ck_assert_msg(p.accepted(), "%s", p.user_message().c_str());
  ck_assert(!p.tres_per_node && !p.features && !p.prefer);  // nothing east could run
  ck_assert_string_eq(p.cluster_features.value().c_str(), "a100");
  ck_assert_contains(p.stored, "gpu-type=a100");
  // A list the regions split: east rewrites for its h100; siblings go where either is.
  r = job("gpu-type=h100,A100");
  r.other_region_gpu_types = std::vector<std::string>{"a100"};
  p = plan_submit(r, Config{}, region_of("h100"));
  ck_assert_msg(p.accepted(), "%s", p.user_message().c_str());
  ck_assert_string_eq(p.tres_per_node.value().c_str(), "gres:gpu:h100:8");
  ck_assert_string_eq(p.cluster_features.value().c_str(), "h100,a100");
  ck_assert_contains(p.stored, "gpu-type=h100,a100");
  // The user's own --cluster-constraint stays.
  r.cluster_features = "eu";
  ck_assert(!plan_submit(r, Config{}, region_of("h100")).cluster_features);
}
END_TEST

START_TEST(a_type_no_region_has_is_refused_with_what_each_has) {
  JobRequest r = job("gpu-type=v100");
  r.other_region_gpu_types = std::vector<std::string>{"a100"};
  SubmitPlan p = plan_submit(r, Config{}, region_of("h100"));
  ck_assert(!p.accepted());
  ck_assert_contains(p.user_message(), "gpu-type=v100: this cluster has no v100 GPUs (it has h100), nor does another "
                                       "region of its federation (they have a100)");
  // Not federated (or a region declares no features): only this cluster's types.
  r = job("gpu-type=a100");
  p = plan_submit(r, Config{}, region_of("h100"));
  ck_assert(!p.accepted());
  ck_assert_contains(p.user_message(), "gpu-type=a100: this cluster has no a100 GPUs (it has h100)");
  ck_assert(p.user_message().find("region") == std::string::npos);
}
END_TEST

START_TEST(a_sibling_copy_is_rewritten_for_its_own_region) {
  // What east's rewrite of `gpu-type=h100,a100` sends west: typed for h100.
  JobRequest r = job("gpu-type=h100,a100", "gres:gpu:h100:8");
  r.cluster_features = "h100,a100";
  r.sibling_copy = true;
  SubmitPlan p = plan_submit(r, Config{}, region_of("a100"));
  ck_assert_msg(p.accepted(), "%s", p.user_message().c_str());
  ck_assert_string_eq(p.tres_per_node.value().c_str(), "gres:gpu:a100:8");
  ck_assert(!p.cluster_features);  // the origin's stays
  // From an origin with both types: "[h100|a100]" and --prefer=h100 go, then a100 only.
  r = job("gpu-type=h100,a100");
  r.features = "bigmem&[h100|a100]";
  r.prefer = "h100";
  r.sibling_copy = true;
  p = plan_submit(r, Config{}, region_of("a100"));
  ck_assert_msg(p.accepted(), "%s", p.user_message().c_str());
  ck_assert_string_eq(p.tres_per_node.value().c_str(), "gres:gpu:a100:8");
  ck_assert_string_eq(p.features.value().c_str(), "bigmem");
  ck_assert_string_eq(p.prefer.value().c_str(), "");
  // Without sibling_copy the same request is the user's own, and conflicts.
  r.sibling_copy = false;
  r.tres_per_node = "gres:gpu:h100:8";
  ck_assert(!plan_submit(r, Config{}, region_of("a100")).accepted());
}
END_TEST

START_TEST(origin_rewrite_is_undone_only_for_the_jobs_types) {
  JobRequest r;
  r.tres_per_node = "gres:gpu:h100:8,gres:shard:2";
  r.tres_per_job = "gres:gpu:v100:2";
  r.features = "[x|y]";
  r.prefer = "bigmem";
  JobRequest u = without_origin_rewrite(r, {"H100", "a100"});
  ck_assert_string_eq(u.tres_per_node.c_str(), "gres:gpu:8,gres:shard:2");
  ck_assert_string_eq(u.tres_per_job.c_str(), "gres:gpu:v100:2");  // not one of the job's types
  ck_assert_string_eq(u.features.c_str(), "[x|y]");                // the user's own
  ck_assert_string_eq(u.prefer.c_str(), "bigmem");
  r.features = "[h100|a100]";
  ck_assert_string_eq(without_origin_rewrite(r, {"h100", "a100"}).features.c_str(), "");
}
END_TEST

Suite* submit_suite() {
  Suite* s = suite_create("submit");
  TCase* tc = tcase_create("plan");
  // The 300,000-line submission takes seconds under the sanitizers (--enable-sanitizers).
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, plain_jobs_are_left_alone);
  tcase_add_test(tc, a_type_only_another_region_has_is_left_to_that_region);
  tcase_add_test(tc, a_type_no_region_has_is_refused_with_what_each_has);
  tcase_add_test(tc, a_sibling_copy_is_rewritten_for_its_own_region);
  tcase_add_test(tc, origin_rewrite_is_undone_only_for_the_jobs_types);
  tcase_add_test(tc, a_flood_of_bad_lines_gives_a_bounded_message);
  tcase_add_test(tc, long_keys_and_values_are_cut_when_echoed);
  tcase_add_test(tc, control_bytes_are_escaped_in_messages);
  tcase_add_test(tc, every_problem_is_reported_at_once);
  tcase_add_test(tc, updates_may_restore_but_not_change_directives);
  tcase_add_test(tc, single_type_becomes_typed_gres);
  tcase_add_test(tc, gpus_per_job_and_task_are_typed_too);
  tcase_add_test(tc, type_list_becomes_matching_or_constraint);
  tcase_add_test(tc, type_list_needs_node_features);
  tcase_add_test(tc, reject_classes_have_clear_messages);
  tcase_add_test(tc, locality_without_topology);
  tcase_add_test(tc, prefer_mode_accepts_with_a_note);
  tcase_add_test(tc, several_problems_are_listed_together);
  tcase_add_test(tc, signals_and_requeue);
  tcase_add_test(tc, a_time_limit_too_short_for_the_checkpoint_signal_is_noted);
  tcase_add_test(tc, comment_directives_for_srun);
  tcase_add_test(tc, strict_switch_gang_fits_under_a_spine);
  tcase_add_test(tc, gang_request_is_one_normalization);
  suite_add_tcase(s, tc);
  return s;
}
