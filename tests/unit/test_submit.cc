#include <csignal>

#include "core/submit.h"
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

Suite* submit_suite() {
  Suite* s = suite_create("submit");
  TCase* tc = tcase_create("plan");
  tcase_add_test(tc, plain_jobs_are_left_alone);
  tcase_add_test(tc, single_type_becomes_typed_gres);
  tcase_add_test(tc, gpus_per_job_and_task_are_typed_too);
  tcase_add_test(tc, type_list_becomes_matching_or_constraint);
  tcase_add_test(tc, type_list_needs_node_features);
  tcase_add_test(tc, reject_classes_have_clear_messages);
  tcase_add_test(tc, locality_without_topology);
  tcase_add_test(tc, prefer_mode_accepts_with_a_note);
  tcase_add_test(tc, several_problems_are_listed_together);
  tcase_add_test(tc, signals_and_requeue);
  tcase_add_test(tc, comment_directives_for_srun);
  suite_add_tcase(s, tc);
  return s;
}
