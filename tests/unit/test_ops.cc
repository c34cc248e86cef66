// The operator summary, its Prometheus exposition and the top screen, on a
// snapshot of the hand-written 16-node cluster.
#include <cmath>
#include <stdexcept>

#include "core/ops.h"
#include "core/preempt.h"
#include "core/priority.h"
#include "fixtures.h"
#include "suites.h"

using namespace mlsched;

namespace {

struct Scene {
  Cluster cluster = fixture_cluster();
  OpsSnapshot snap;
  Scene() {
    for (const auto& n : cluster.nodes()) {
      NodeState ns;
      ns.gpu_busy.assign(n.gpus, false);
      snap.state.push_back(ns);
      snap.health.push_back({"idle", ""});
    }
    snap.cluster = &cluster;
    snap.now = 1'000'000;
  }
  size_t index(const std::string& node) { return static_cast<size_t>(cluster.find_node(node) - cluster.nodes().data()); }
  void occupy(const std::string& node, uint32_t gpus) {
    for (uint32_t g = 0; g < gpus; ++g) snap.state[index(node)].gpu_busy[g] = true;
    snap.health[index(node)].state = gpus == cluster.find_node(node)->gpus ? "allocated" : "mixed";
  }
  void drain(const std::string& node, const std::string& reason) {
    snap.state[index(node)].usable = false;
    snap.health[index(node)] = {"drained", reason};
  }
};

// A line of the exposition, whole.
bool has_line(const std::string& text, const std::string& line) { return contains("\n" + text, "\n" + line + "\n"); }

}  // namespace

START_TEST(writer_escapes_and_checks_names) {
  MetricsWriter w;
  w.family("m_total", "counter", "a \\ b\nc");
  w.sample({{"path", "C:\\x \"q\"\nz"}, {"b", "2"}}, 3);
  ck_assert_string_eq(w.text(),
                      "# HELP m_total a \\\\ b\\nc\n# TYPE m_total counter\n"
                      "m_total{path=\"C:\\\\x \\\"q\\\"\\nz\",b=\"2\"} 3\n");
  ck_assert(!MetricsWriter::valid_metric_name("9lives"));
  ck_assert(!MetricsWriter::valid_metric_name("a-b"));
  ck_assert(MetricsWriter::valid_metric_name("a:b_9"));
  ck_assert(!MetricsWriter::valid_label_name("__name"));
  ck_assert(!MetricsWriter::valid_label_name("a:b"));
  bool threw = false;
  try {
    w.family("bad-name", "gauge", "x");
  } catch (const std::invalid_argument& e) {
    threw = contains(e.what(), "metric name 'bad-name' is not valid");
  }
  ck_assert(threw);
  threw = false;
  try {
    w.family("m_total", "gauge", "again");
  } catch (const std::invalid_argument& e) {
    threw = contains(e.what(), "written twice");
  }
  ck_assert(threw);
  threw = false;
  try {
    w.family("m2", "summaryish", "x");
  } catch (const std::invalid_argument& e) {
    threw = contains(e.what(), "unknown type 'summaryish'");
  }
  ck_assert(threw);
  threw = false;
  try {
    w.sample({{"le-x", "1"}}, 1);
  } catch (const std::invalid_argument& e) {
    threw = contains(e.what(), "label name 'le-x' is not valid");
  }
  ck_assert(threw);
  threw = false;
  try {
    MetricsWriter fresh;
    fresh.sample({}, 1);
  } catch (const std::invalid_argument& e) {
    threw = contains(e.what(), "before any family");
  }
  ck_assert(threw);
}
END_TEST

START_TEST(values_round_trip) {
  ck_assert_string_eq(MetricsWriter::format_value(0), "0");
  ck_assert_string_eq(MetricsWriter::format_value(64), "64");
  ck_assert_string_eq(MetricsWriter::format_value(0.1), "0.1");
  ck_assert_string_eq(MetricsWriter::format_value(1.0 / 3), "0.3333333333333333");
  ck_assert_string_eq(MetricsWriter::format_value(604800), "604800");
  ck_assert_string_eq(MetricsWriter::format_value(NAN), "NaN");
  ck_assert_string_eq(MetricsWriter::format_value(INFINITY), "+Inf");
  ck_assert_string_eq(MetricsWriter::format_value(-INFINITY), "-Inf");
}
END_TEST

START_TEST(percentiles_nearest_rank) {
  ck_assert_int_eq(percentile({}, 50), 0);
  ck_assert_int_eq(percentile({7}, 90), 7);
  ck_assert_int_eq(percentile({40, 10, 30, 20}, 50), 20);
  ck_assert_int_eq(percentile({40, 10, 30, 20}, 90), 40);
  ck_assert_int_eq(percentile({40, 10, 30, 20}, 100), 40);
}
END_TEST

START_TEST(summary_counts_gpus_teams_and_queue) {
  Scene sc;
  sc.occupy("gpu01", 8);
  sc.occupy("gpu02", 2);
  sc.occupy("gpu09", 3);
  sc.drain("gpu16", "bad fan");
  sc.snap.running = {{11, "nlp", {{"h100", 8}}, 0}, {12, "nlp", {{"h100", 2}}, 2}, {13, "vision", {{"a100", 3}}, 0}};
  sc.snap.pending = {{20, "vision", "Resources", 30, 16, 0},
                     {21, "vision", "Priority", 400, 8, 1},
                     {22, "research", "JobHeldUser", 100000, 1, 0}};
  sc.snap.teams = {{"nlp", 1, 0.25, 0.8, 5000, 0.1}, {"vision", 2, 0.5, 0.2, 1200, 0.75}};
  sc.snap.entitlement = {{"nlp", {{"h100", 16}, {"a100", 16}}}, {"vision", {{"h100", 32}, {"a100", 32}}}};
  const OpsSummary s = summarize(sc.snap);

  ck_assert_uint_eq(s.by_type.at("h100").total, 64);
  ck_assert_uint_eq(s.by_type.at("h100").allocated, 10);
  ck_assert_uint_eq(s.by_type.at("h100").idle, 54);
  ck_assert_uint_eq(s.by_type.at("a100").allocated, 3);
  ck_assert_uint_eq(s.by_type.at("a100").unavailable, 8);
  ck_assert_uint_eq(s.by_type.at("a100").idle, 53);
  ck_assert_uint_eq(s.by_domain.at("nvl0").at("h100").allocated, 10);
  ck_assert_uint_eq(s.by_domain.at("nvl3").at("a100").unavailable, 8);
  ck_assert_uint_eq(s.teams.at("nlp").gpus_in_use.at("h100"), 10);
  ck_assert_uint_eq(s.teams.at("nlp").entitlement_total(), 32);
  ck_assert_uint_eq(s.teams.at("vision").pending_gpus, 24);
  // A team with pending jobs but no sshare row is still listed, without shares.
  ck_assert(!s.teams.at("research").has_shares);
  ck_assert_uint_eq(s.pending_by_reason.at("Resources"), 1);
  ck_assert_uint_eq(s.wait_count, 3);
  ck_assert_int_eq(s.wait_p50, 400);
  ck_assert_int_eq(s.wait_max, 100000);
  // Buckets are cumulative: 30 s is under 60; 400 s under 900; 100000 s only under 7 d.
  ck_assert_uint_eq(s.wait_bucket_counts[0], 1);
  ck_assert_uint_eq(s.wait_bucket_counts[2], 2);
  ck_assert_uint_eq(s.wait_bucket_counts.back(), 3);
  ck_assert_uint_eq(s.jobs_restarted, 2);
  ck_assert_uint_eq(s.restarts, 3);
  ck_assert_uint_eq(s.unavailable_nodes.size(), 1);
  ck_assert_string_eq(s.unavailable_nodes[0].name, "gpu16");
  ck_assert_string_eq(s.gpu_map[1].gpus, "##......");
  ck_assert_string_eq(s.gpu_map[15].gpus, "xxxxxxxx");
  // Usable: 15 nodes; free 6 on gpu02, 5 on gpu09 and 8 on each of 12 idle nodes.
  ck_assert_uint_eq(s.fragmentation.free_gpus, 107);
  ck_assert_uint_eq(s.fragmentation.idle_nodes, 12);
}
END_TEST

START_TEST(summary_rejects_mismatched_snapshot) {
  Scene sc;
  sc.snap.health.pop_back();
  bool threw = false;
  try {
    summarize(sc.snap);
  } catch (const std::invalid_argument& e) {
    threw = contains(e.what(), "parallel to the cluster's nodes");
  }
  ck_assert(threw);
}
END_TEST

START_TEST(metrics_text_is_complete_and_ordered) {
  Scene sc;
  sc.occupy("gpu01", 8);
  sc.drain("gpu16", "bad \"fan\"");
  sc.snap.running = {{11, "nlp", {{"h100", 8}}, 0}};
  sc.snap.pending = {{20, "vision", "Resources", 30, 16, 0}};
  sc.snap.teams = {{"vision", 2, 0.5, 0, 0, 1}, {"nlp", 1, 0.25, 1, 5000, 0.0625}};
  sc.snap.entitlement = {{"nlp", {{"h100", 16}}}};
  const std::string text = format_metrics(summarize(sc.snap));
  ck_assert(has_line(text, "# TYPE mlsched_gpus gauge"));
  ck_assert(has_line(text, "mlsched_gpus{gpu_type=\"h100\",state=\"allocated\"} 8"));
  ck_assert(has_line(text, "mlsched_gpus{gpu_type=\"a100\",state=\"unavailable\"} 8"));
  ck_assert(has_line(text, "mlsched_nvlink_domain_gpus{nvlink_domain=\"nvl0\",gpu_type=\"h100\",state=\"idle\"} 24"));
  ck_assert(has_line(text, "mlsched_team_gpus_in_use{team=\"nlp\",gpu_type=\"h100\"} 8"));
  ck_assert(has_line(text, "mlsched_team_gpu_entitlement{team=\"nlp\",gpu_type=\"h100\"} 16"));
  ck_assert(has_line(text, "mlsched_team_fairshare{team=\"nlp\"} 0.0625"));
  ck_assert(has_line(text, "mlsched_jobs_pending{reason=\"Resources\"} 1"));
  ck_assert(has_line(text, "# TYPE mlsched_queue_wait_seconds histogram"));
  ck_assert(has_line(text, "mlsched_queue_wait_seconds_bucket{le=\"60\"} 1"));
  ck_assert(has_line(text, "mlsched_queue_wait_seconds_bucket{le=\"+Inf\"} 1"));
  ck_assert(has_line(text, "mlsched_queue_wait_seconds_sum 30"));
  ck_assert(has_line(text, "mlsched_queue_wait_seconds_count 1"));
  ck_assert(has_line(text, "mlsched_nodes{state=\"drained\"} 1"));
  // Every free GPU of a usable node sits on a wholly idle node.
  ck_assert(has_line(text, "mlsched_fragmentation_index{level=\"node\"} 0"));
  // Sorted by label value whatever order the snapshot came in: teams alphabetically.
  ck_assert(text.find("mlsched_team_share{team=\"nlp\"}") < text.find("mlsched_team_share{team=\"vision\"}"));
  // Every family has HELP right before TYPE; same input, same bytes.
  ck_assert(text.find("# HELP mlsched_gpus ") < text.find("# TYPE mlsched_gpus "));
  ck_assert_string_eq(text, format_metrics(summarize(sc.snap)));
}
END_TEST

START_TEST(top_screen_shows_teams_map_and_drained_nodes) {
  Scene sc;
  sc.occupy("gpu09", 2);
  sc.drain("gpu16", "bad fan");
  sc.snap.running = {{11, "nlp", {{"a100", 2}}, 0}};
  sc.snap.pending = {{20, "vision", "Resources", 90, 16, 0}, {21, "vision", "Resources", 30, 8, 0},
                     {22, "vision", "JobHeldUser", 10, 8, 0}};
  sc.snap.teams = {{"nlp", 1, 0.25, 1, 50, 0.125}};
  sc.snap.entitlement = {{"nlp", {{"a100", 16}, {"h100", 16}}}};
  const std::string plain = format_top(summarize(sc.snap), false);
  ck_assert_contains(plain, "  nlp               2       32     0.125       1       0         0  a100:2\n");
  ck_assert_contains(plain, "  vision            0        0         -       0       3        32\n");
  ck_assert_contains(plain, "queue: 3 pending; waited p50 30 s, p90 2 min, max 2 min");
  ck_assert_contains(plain, "by reason: Resources 2, JobHeldUser 1");
  ck_assert_contains(plain, "gpu16      drained           8 GPUs  \"bad fan\"");
  ck_assert_contains(plain, "  nvl2 a100    gpu09 ##...... gpu10 ........");
  ck_assert_contains(plain, "gpu16 xxxxxxxx");
  ck_assert(!contains(plain, "\033["));
  const std::string coloured = format_top(summarize(sc.snap), true);
  ck_assert_contains(coloured, "\033[33m#\033[0m");
  ck_assert_contains(coloured, "\033[31mx\033[0m");
}
END_TEST

START_TEST(pools_show_their_gpus_and_the_jobs_that_accept_them) {
  // Two pools (partitions): h100 = gpu[01-08], a100 = gpu[09-16]; gpu16 drained.
  Scene sc;
  sc.occupy("gpu01", 8);
  sc.occupy("gpu09", 2);
  sc.drain("gpu16", "bad fan");
  sc.snap.pools = {{"h100", expand_hostlist("gpu[01-08]")}, {"a100", expand_hostlist("gpu[09-16]")}};
  OpsPendingJob both{20, "vision", "Resources", 90, 16, 0, "h100,a100"};
  OpsPendingJob h100{21, "vision", "Priority", 30, 8, 0, "h100"};
  OpsPendingJob elsewhere{22, "nlp", "Resources", 10, 4, 0, "debug"};
  sc.snap.pending = {both, h100, elsewhere};
  const OpsSummary s = summarize(sc.snap);
  ck_assert_int_eq(s.by_pool.size(), 2);
  const PoolSummary& h = s.by_pool.at("h100");
  const PoolSummary& a = s.by_pool.at("a100");
  ck_assert_int_eq(h.gpus.total, 64);
  ck_assert_int_eq(h.gpus.allocated, 8);
  ck_assert_int_eq(h.gpus.idle, 56);
  ck_assert_int_eq(a.gpus.allocated, 2);
  ck_assert_int_eq(a.gpus.idle, 54);
  ck_assert_int_eq(a.gpus.unavailable, 8);
  // A job that names both pools counts in each; one of a pool not listed, in none.
  ck_assert_int_eq(h.pending_jobs, 2);
  ck_assert_int_eq(h.pending_gpus, 24);
  ck_assert_int_eq(a.pending_jobs, 1);
  ck_assert_int_eq(a.pending_gpus, 16);

  const std::string text = format_metrics(s);
  ck_assert(has_line(text, "mlsched_pool_gpus{pool=\"a100\",state=\"unavailable\"} 8"));
  ck_assert(has_line(text, "mlsched_pool_gpus{pool=\"h100\",state=\"allocated\"} 8"));
  ck_assert(has_line(text, "mlsched_pool_jobs_pending{pool=\"h100\"} 2"));
  ck_assert(has_line(text, "mlsched_pool_pending_gpus{pool=\"a100\"} 16"));
  const std::string top = format_top(s, false);
  ck_assert_contains(top, "GPUs by pool    total  alloc   idle  unavail  pending pend GPUs\n");
  ck_assert_contains(top, "  a100             64      2     54        8        1        16\n");
  ck_assert_contains(top, "  h100             64      8     56        0        2        24\n");

  // One pool (or none known): no pool block on the screen.
  sc.snap.pools.resize(1);
  ck_assert(!contains(format_top(summarize(sc.snap), false), "GPUs by pool"));
}
END_TEST

START_TEST(interrupted_runs_only_when_accounting_was_read) {
  Scene sc;
  sc.snap.interrupted = {{"requeued", 8, 600}, {"requeued", 2, 300}, {"preempted", 4, 3600}};
  std::string text = format_metrics(summarize(sc.snap));
  // Unknown is not zero: without accounting the series are left out.
  ck_assert(!contains(text, "mlsched_interrupted"));
  ck_assert(!contains(format_top(summarize(sc.snap), false), "interrupted"));

  sc.snap.accounting_read = true;
  const OpsSummary s = summarize(sc.snap);
  ck_assert_uint_eq(s.interrupted.at("requeued").runs, 2);
  ck_assert(s.interrupted.at("requeued").gpu_seconds == 8 * 600 + 2 * 300);
  text = format_metrics(s);
  ck_assert(has_line(text, "mlsched_interrupted_runs{cause=\"node_fail\"} 0"));
  ck_assert(has_line(text, "mlsched_interrupted_runs{cause=\"requeued\"} 2"));
  ck_assert(has_line(text, "mlsched_interrupted_gpu_seconds{cause=\"preempted\"} 14400"));
  ck_assert_contains(format_top(s, false),
                     "interrupted in the last 24 h: 3 runs, 5.5 GPU-hours at most lost (preempted 1, requeued 2)");
}
END_TEST

START_TEST(preemptions_counted_per_team_apart_from_other_requeues) {
  Scene sc;
  sc.snap.teams = {{"vision", 2, 0.5, 0, 0, 1}, {"nlp", 1, 0.25, 1, 5000, 0.0625}};
  // nlp: one job preempted twice (and once requeued at its time limit), one
  // preempted once; vision: requeued after a node failure, never preempted.
  sc.snap.preemptions = {{11, "nlp", 3, 2, 100}, {12, "nlp", 1, 1, 28}, {13, "vision", 1, 0, 0}};
  const OpsSummary s = summarize(sc.snap);
  ck_assert_uint_eq(s.preemptions.at("nlp").preemptions, 3);
  ck_assert_uint_eq(s.preemptions.at("nlp").jobs_preempted, 2);
  ck_assert(s.preemptions.at("nlp").lost_gpu_seconds == 128);
  ck_assert_uint_eq(s.preemptions.at("nlp").other_requeues, 1);
  ck_assert_uint_eq(s.preemptions.at("vision").preemptions, 0);
  ck_assert_uint_eq(s.preemptions.at("vision").other_requeues, 1);
  ck_assert_uint_eq(s.preemptions_total.preemptions, 3);
  ck_assert_uint_eq(s.preemptions_total.other_requeues, 2);
  ck_assert(s.preemptions_total.lost_gpu_seconds == 128);
  const std::string text = format_metrics(s);
  ck_assert(has_line(text, "# TYPE mlsched_preemptions gauge"));
  ck_assert(has_line(text, "mlsched_preemptions 3"));
  ck_assert(has_line(text, "mlsched_preemption_lost_gpu_seconds 128"));
  ck_assert(has_line(text, "mlsched_requeues_other_causes 2"));
  ck_assert(has_line(text, "mlsched_team_preemptions{team=\"nlp\"} 3"));
  ck_assert(has_line(text, "mlsched_team_preemptions{team=\"vision\"} 0"));
  ck_assert(has_line(text, "mlsched_team_preemption_lost_gpu_seconds{team=\"nlp\"} 128"));
  ck_assert(has_line(text, "mlsched_team_requeues_other_causes{team=\"vision\"} 1"));
  ck_assert(contains(text, "ended within MinJobAge"));
  const std::string top = format_top(s, false);
  ck_assert_contains(top, "preemptions: 3 of 2 jobs, 0.0 GPU-hours (128 GPU-seconds) lost, estimated at each; 2 requeues for other "
                       "causes\n");
  ck_assert_contains(top, "  nlp             3 preempted      0.0 GPU-hours (128 GPU-seconds) lost    1 other requeues\n");
  ck_assert_contains(top, "  vision          0 preempted      0.0 GPU-hours (0 GPU-seconds) lost    1 other requeues\n");

  // Nothing preempted: every team is still there, at zero.
  sc.snap.preemptions.clear();
  const std::string none = format_metrics(summarize(sc.snap));
  ck_assert(has_line(none, "mlsched_preemptions 0"));
  ck_assert(has_line(none, "mlsched_team_preemptions{team=\"nlp\"} 0"));
}
END_TEST

START_TEST(job_table_marks_win_over_accounting_and_runs_are_told_apart) {
  // Accounting holds two runs of job 11 (its marks grow) and job 14 the controller
  // no longer holds; the controller's record of 11 is the newest.
  const auto merged = merge_job_preemptions({{11, "nlp", 2, 2, 90}},
                                            {{11, "nlp", 0, 0, 0}, {11, "nlp", 1, 1, 40}, {14, "research", 1, 1, 8}});
  ck_assert_uint_eq(merged.size(), 2);
  ck_assert_uint_eq(merged[0].job_id, 11);
  ck_assert_uint_eq(merged[0].preempted, 2);
  ck_assert(merged[0].lost_gpu_seconds == 90);
  ck_assert_uint_eq(merged[1].job_id, 14);
  ck_assert_str_eq(merged[1].team.c_str(), "research");
  const auto acct_only = merge_job_preemptions({}, {{11, "nlp", 1, 1, 40}, {11, "nlp", 2, 2, 90}});
  ck_assert_uint_eq(acct_only.size(), 1);
  ck_assert_uint_eq(acct_only[0].preempted, 2);
  ck_assert_uint_eq(acct_only[0].restarts, 2);

  // A requeued run was a preemption when the last one recorded fell within it.
  ck_assert(run_ended_by_preemption(1005, 1000, 1010));
  ck_assert(run_ended_by_preemption(1000, 1000, 1000));
  ck_assert(!run_ended_by_preemption(0, 1000, 1010));      // never preempted
  ck_assert(!run_ended_by_preemption(900, 1000, 1010));    // an earlier run's preemption
  ck_assert(!run_ended_by_preemption(1011, 1000, 1010));
  ck_assert(run_ended_by_preemption(1011, 1000, 0));       // end not recorded yet
}
END_TEST

// `mlsched top` counts the GPUs a pending job asks for from its tres_req_str; an
// untyped --gres=gpu:N job asks for N, not 2N.
START_TEST(pending_gpus_count_untyped_requests_once) {
  ck_assert_int_eq(pending_gpus("cpu=2,mem=8G,node=1,billing=2,gres/gpu=4"), 4);
  ck_assert_int_eq(pending_gpus("cpu=8,node=1,gres/gpu=8,gres/gpu:h100=8"), 8);
  ck_assert_int_eq(pending_gpus("cpu=8,node=2,gres/gpu=12,gres/gpu:h100=8"), 12);
  ck_assert_int_eq(pending_gpus("cpu=1,mem=1G,node=1"), 0);
}
END_TEST

// One definition of borrowing: priority's marks, preempt's estimate and top's
// count come out the same for one scene (nlp guaranteed 6 a100; jobs 1 (4 GPUs,
// oldest), 2 (2), 3 (4, newest): 3 borrows), and a pending job would borrow
// exactly when held + its GPUs exceed the guarantee.
START_TEST(borrowing_has_one_definition_for_every_caller) {
  const auto guarantee = [](const std::string& team, const std::string&) -> uint32_t { return team == "nlp" ? 6 : 0; };
  std::vector<GpuHolding> held = {{3, "nlp", 300, {{{"a100", 4}}, 0}},
                                  {1, "nlp", 100, {{{"a100", 4}}, 0}},
                                  {2, "nlp", 200, {{{"a100", 2}}, 0}}};
  const std::vector<bool> core = borrowing_in_start_order(held, guarantee);
  ck_assert(core[0] && !core[1] && !core[2]);

  std::vector<PreemptCandidate> running(3);
  for (size_t i = 0; i < 3; ++i) {
    running[i].job_id = held[i].job_id;
    running[i].team = "nlp";
    running[i].gpu_type = "a100";
    running[i].start_time = held[i].start_time;
    running[i].gpus_on_node["gpu01"] = held[i].gpus.by_type.at("a100");
  }
  mark_borrowing(running, guarantee);
  for (size_t i = 0; i < 3; ++i) ck_assert(running[i].borrowing == core[i]);

  Scene sc;
  for (const auto& h : held) sc.snap.running.push_back({h.job_id, "nlp", h.gpus.by_type, 0, h.start_time});
  sc.snap.entitlement = {{"nlp", {{"a100", 6}}}};
  const OpsSummary s = summarize(sc.snap);
  ck_assert_uint_eq(s.teams.at("nlp").borrowed_gpus, 4);
  ck_assert_contains(format_top(s, false), "a100:10 (borrowing 4)\n");
  ck_assert(has_line(format_metrics(s), "mlsched_team_gpus_borrowed{team=\"nlp\"} 4"));

  ck_assert(!would_borrow(4, 2, 6));
  ck_assert(would_borrow(4, 3, 6));
  ck_assert_uint_eq(gpus_of_type({{"a100", 4}, {"H100", 2}}, "h100"), 2);
  ck_assert_uint_eq(gpus_of_type({{"a100", 4}, {"H100", 2}}, ""), 6);
}
END_TEST


// Jobs by ML state: one gauge family with a state label, every state present (0
// too), and the seconds spent checkpointing; top lists the non-zero ones.
START_TEST(ml_state_gauges_count_every_state) {
  Scene sc;
  sc.snap.ml_jobs = {{MlState::running, 0},       {MlState::running, 0},   {MlState::checkpointing, 999'990},
                     {MlState::checkpointing, 999'995}, {MlState::preempted, 0}, {MlState::completed, 0}};
  const OpsSummary s = summarize(sc.snap);
  const std::string text = format_metrics(s);
  ck_assert(has_line(text, "# TYPE mlsched_jobs_by_ml_state gauge"));
  ck_assert(has_line(text, "mlsched_jobs_by_ml_state{state=\"running\"} 2"));
  ck_assert(has_line(text, "mlsched_jobs_by_ml_state{state=\"checkpointing\"} 2"));
  ck_assert(has_line(text, "mlsched_jobs_by_ml_state{state=\"preempted\"} 1"));
  ck_assert(has_line(text, "mlsched_jobs_by_ml_state{state=\"queued\"} 0"));
  ck_assert(has_line(text, "mlsched_jobs_by_ml_state{state=\"cancelled\"} 0"));
  ck_assert(has_line(text, "mlsched_checkpointing_seconds 15"));
  // States in life order, each once.
  ck_assert(text.find("state=\"queued\"") < text.find("state=\"cancelled\""));
  ck_assert_contains(format_top(s, false),
                     "  ML states: running 2, checkpointing 2, preempted 1, completed 1 (checkpointing for 15 s in all)\n");
}
END_TEST

Suite* ops_suite() {
  Suite* s = suite_create("ops");
  TCase* tc = tcase_create("ops");
  tcase_add_test(tc, writer_escapes_and_checks_names);
  tcase_add_test(tc, pools_show_their_gpus_and_the_jobs_that_accept_them);
  tcase_add_test(tc, values_round_trip);
  tcase_add_test(tc, percentiles_nearest_rank);
  tcase_add_test(tc, summary_counts_gpus_teams_and_queue);
  tcase_add_test(tc, borrowing_has_one_definition_for_every_caller);
  tcase_add_test(tc, summary_rejects_mismatched_snapshot);
  tcase_add_test(tc, metrics_text_is_complete_and_ordered);
  tcase_add_test(tc, top_screen_shows_teams_map_and_drained_nodes);
  tcase_add_test(tc, interrupted_runs_only_when_accounting_was_read);
  tcase_add_test(tc, preemptions_counted_per_team_apart_from_other_requeues);
  tcase_add_test(tc, job_table_marks_win_over_accounting_and_runs_are_told_apart);
  tcase_add_test(tc, pending_gpus_count_untyped_requests_once);
  tcase_add_test(tc, ml_state_gauges_count_every_state);
  suite_add_tcase(s, tc);
  return s;
}
