#include <cstdlib>
#include <fstream>
#include <iterator>
#include <unistd.h>
#include <csignal>

#include "core/config.h"
#include "suites.h"

using namespace mlsched;

static std::string all_errors(const ConfigResult& r) {
  std::string s;
  for (const auto& e : r.errors) s += e + "\n";
  return s;
}

START_TEST(empty_file_gives_documented_defaults) {
  auto r = parse_config("# nothing\n\n", "mlsched.conf");
  ck_assert(r.config.has_value());
  const Config& c = *r.config;
  ck_assert_int_eq(c.max_checkpoint_grace, 600);
  ck_assert(c.default_job_type == JobType::training);
  ck_assert(c.defaults_for(JobType::training).preemptible == PreemptiblePolicy::yes);
  ck_assert(c.defaults_for(JobType::sweep).preemptible == PreemptiblePolicy::required);
  ck_assert(c.defaults_for(JobType::inference).preemptible == PreemptiblePolicy::no);
  ck_assert(c.defaults_for(JobType::interactive).locality == Locality::node);
  ck_assert_int_eq(c.defaults_for(JobType::training).checkpoint_signal, SIGUSR1);
}
END_TEST

START_TEST(full_file_is_typed) {
  auto r = parse_config(
      "MaxCheckpointGrace=10m DefaultJobType=sweep  # comment\n"
      "JobType=training Preemptible=no CheckpointSignal=USR2 CheckpointGrace=90 MaxRestarts=7 "
      "Locality=nvlink-domain LocalityMode=strict CheckpointInterval=30m\n"
      "NvlinkDomain=nvl0 Nodes=gpu[01-04]\n"
      "nvlinkdomain=nvl1 nodes=gpu[05-08]\n",
      "mlsched.conf");
  ck_assert_msg(r.config.has_value(), "%s", all_errors(r).c_str());
  const Config& c = *r.config;
  ck_assert_int_eq(c.max_checkpoint_grace, 600);
  ck_assert(c.default_job_type == JobType::sweep);
  const auto& t = c.defaults_for(JobType::training);
  ck_assert(t.preemptible == PreemptiblePolicy::no);
  ck_assert_int_eq(t.checkpoint_signal, SIGUSR2);
  ck_assert_int_eq(t.checkpoint_grace, 90);
  ck_assert_int_eq(t.checkpoint_interval, 1800);
  ck_assert_int_eq(t.max_restarts, 7);
  ck_assert(t.locality == Locality::nvlink_domain);
  ck_assert(t.locality_mode == LocalityMode::strict);
  ck_assert_int_eq(c.nvlink_domains.size(), 2);
  ck_assert_string_eq(c.nvlink_domains[1].nodes[3].c_str(), "gpu08");
}
END_TEST

START_TEST(unknown_keys_are_rejected_with_line) {
  auto r = parse_config("MaxCheckpointGrace=60\nMaxCheckpointGrase=60\n", "/etc/slurm/mlsched.conf");
  ck_assert(!r.config.has_value());
  ck_assert_int_eq(r.errors.size(), 1);
  ck_assert_contains(r.errors[0], "/etc/slurm/mlsched.conf:2: unknown key 'MaxCheckpointGrase'");
  ck_assert_contains(r.errors[0], "did you mean 'MaxCheckpointGrace'");
  r = parse_config("JobType=training Color=blue\n", "m.conf");
  ck_assert(!r.config.has_value());
  ck_assert_contains(r.errors[0], "m.conf:1: unknown key 'Color' on a JobType line");
}
END_TEST

START_TEST(bad_values_are_rejected) {
  struct Case {
    const char* text;
    const char* message;
  } cases[] = {
      {"MaxCheckpointGrace=soon\n", "MaxCheckpointGrace=soon is not a duration"},
      {"MaxCheckpointGrace=70000\n", "up to 65535 seconds"},
      {"DefaultJobType=batch\n", "DefaultJobType=batch is not a job type"},
      {"JobType=batch\n", "JobType=batch is not a job type"},
      {"JobType=sweep Preemptible=maybe\n", "Preemptible=maybe must be yes, no or required"},
      {"JobType=sweep CheckpointSignal=KILL\n", "CheckpointSignal=KILL is not a signal a job can catch"},
      {"JobType=sweep Locality=rack\n", "Locality=rack must be one of node, nvlink-domain, switch, any"},
      {"JobType=sweep LocalityMode=loose\n", "LocalityMode=loose must be strict or prefer"},
      {"JobType=sweep MaxRestarts=-1\n", "MaxRestarts=-1 is not a whole number"},
      {"garbage\n", "'garbage' is not Key=Value"},
      {"NvlinkDomain=nvl0\n", "NvlinkDomain=nvl0 needs Nodes="},
      {"NvlinkDomain=nvl0 Nodes=gpu[1-\n", "NvlinkDomain=nvl0: unbalanced"},
      {"NvlinkDomain=a Nodes=n[1-2]\nNvlinkDomain=b Nodes=n[2-3]\n", "node n2 is in NvlinkDomain=a and NvlinkDomain=b"},
      {"NvlinkDomain=a Nodes=n1\nNvlinkDomain=a Nodes=n2\n", "NvlinkDomain=a is declared twice"},
      {"MaxCheckpointGrace=60 JobType=training\n", "JobType= must start its own line"},
  };
  for (const auto& c : cases) {
    auto r = parse_config(c.text, "mlsched.conf");
    ck_assert_msg(!r.config.has_value(), "accepted: %s", c.text);
    ck_assert_contains(all_errors(r), c.message);
  }
}
END_TEST

START_TEST(placement_keys) {
  auto r = parse_config("NodeFailureWindow=2h LargeGangNodes=4\n", "mlsched.conf");
  ck_assert_msg(r.config.has_value(), "%s", all_errors(r).c_str());
  ck_assert_int_eq(r.config->node_failure_window, 7200);
  ck_assert_int_eq(r.config->large_gang_nodes, 4);
  ck_assert_int_eq(parse_config("", "m").config->node_failure_window, 3600);
  r = parse_config("NodeFailureWindow=often\n", "mlsched.conf");
  ck_assert_contains(all_errors(r), "NodeFailureWindow=often is not a duration");
  r = parse_config("LargeGangNodes=big\n", "mlsched.conf");
  ck_assert_contains(all_errors(r), "LargeGangNodes=big is not a whole number");
  // GpuTypeSpeed: off unless set; types lowercased; every bad item named.
  ck_assert(parse_config("", "m").config->gpu_type_speed.empty());
  r = parse_config("GpuTypeSpeed=H100:1.8,a100:1\n", "mlsched.conf");
  ck_assert_msg(r.config.has_value(), "%s", all_errors(r).c_str());
  ck_assert(r.config->gpu_type_speed.at("h100") == 1.8 && r.config->gpu_type_speed.at("a100") == 1.0);
  r = parse_config("GpuTypeSpeed=h100:0\n", "mlsched.conf");
  ck_assert_contains(all_errors(r), "mlsched.conf:1: GpuTypeSpeed: 'h100:0' is not <gpu_type>:<speed> with a speed "
                                    "above 0, up to 1000 (e.g. h100:1.8,a100:1.0)");
  r = parse_config("GpuTypeSpeed=h100\n", "mlsched.conf");
  ck_assert_contains(all_errors(r), "GpuTypeSpeed: 'h100' is not <gpu_type>:<speed>");
  r = parse_config("GpuTypeSpeed=h100:fast\n", "mlsched.conf");
  ck_assert_contains(all_errors(r), "GpuTypeSpeed: 'h100:fast' is not");
  r = parse_config("GpuTypeSpeed=h100:2,H100:3\n", "mlsched.conf");
  ck_assert_contains(all_errors(r), "GpuTypeSpeed: GPU type h100 is given twice");
}
END_TEST

// The files the project ships: etc/mlsched.conf as installed, and with the ML cluster
// profile appended as its header says (what bench/replay's ML runs use).
START_TEST(shipped_config_and_ml_profile_parse) {
  const char* top = getenv("top_srcdir");
  ck_assert_msg(top && *top, "top_srcdir is not set (run through make check)");
  auto read = [](const std::string& path) {
    std::ifstream in(path);
    ck_assert_msg(in.good(), "%s cannot be read", path.c_str());
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  const std::string base = read(std::string(top) + "/etc/mlsched.conf");
  auto r = parse_config(base, "etc/mlsched.conf");
  ck_assert_msg(r.config.has_value(), "%s", r.errors.empty() ? "" : r.errors[0].c_str());
  ck_assert(!r.config->preempt_for_attained_service);
  ck_assert(!r.config->attained_service.enabled());
  ck_assert_uint_eq(r.config->priority_weight_non_preemptible, 0);
  r = parse_config(base + read(std::string(top) + "/etc/mlsched-ml-profile.conf"), "mlsched.conf + ml profile");
  ck_assert_msg(r.config.has_value(), "%s", r.errors.empty() ? "" : r.errors[0].c_str());
  ck_assert(r.config->preempt_for_attained_service);
  ck_assert(r.config->attained_service.all);
  ck_assert_uint_eq(r.config->attained_service_thresholds.size(), 2);
  ck_assert_uint_eq(r.config->attained_service_thresholds[0], 3600);
  // Best effort queues behind, at PriorityWeightQuota's value (the profile's comment).
  ck_assert_uint_eq(r.config->priority_weight_non_preemptible, 10000);
  ck_assert_uint_eq(r.config->priority_weight_non_preemptible, r.config->priority_weight_quota);
  ck_assert(!r.config->preempt_for_non_preemptible);
}
END_TEST

START_TEST(missing_file_is_an_error) {
  auto r = load_config_file("/nonexistent/mlsched.conf");
  ck_assert(!r.config.has_value());
  ck_assert_contains(r.errors[0], "/nonexistent/mlsched.conf: cannot be read");
}
END_TEST

START_TEST(empty_or_oversized_file_is_an_error) {
  char pattern[] = "/tmp/mlsched-conf-test-XXXXXX";
  const int fd = mkstemp(pattern);
  ck_assert_int_ge(fd, 0);
  close(fd);
  const std::string path = pattern;
  for (const std::string text : {"", "\n\n", "# only a comment\n   # another\n"}) {
    std::ofstream(path, std::ios::trunc) << text;
    auto r = load_config_file(path);
    ck_assert(!r.config.has_value());
    ck_assert_contains(r.errors.at(0), path + ": has no settings (empty or only comments)");
  }
  std::ofstream(path, std::ios::trunc) << std::string(2 << 20, '#');
  auto r = load_config_file(path);
  ck_assert(!r.config.has_value());
  ck_assert_contains(r.errors.at(0), "is larger than 1 MiB");
  std::ofstream(path, std::ios::trunc) << "# defaults, on purpose\nDefaultJobType=training\n";
  r = load_config_file(path);
  ck_assert(r.config.has_value());
  unlink(path.c_str());
}
END_TEST

Suite* config_suite() {
  Suite* s = suite_create("config");
  TCase* tc = tcase_create("parse");
  tcase_add_test(tc, empty_file_gives_documented_defaults);
  tcase_add_test(tc, full_file_is_typed);
  tcase_add_test(tc, unknown_keys_are_rejected_with_line);
  tcase_add_test(tc, bad_values_are_rejected);
  tcase_add_test(tc, placement_keys);
  tcase_add_test(tc, missing_file_is_an_error);
  tcase_add_test(tc, shipped_config_and_ml_profile_parse);
  tcase_add_test(tc, empty_or_oversized_file_is_an_error);
  suite_add_tcase(s, tc);
  return s;
}
