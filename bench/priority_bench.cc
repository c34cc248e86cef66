// One priority/mlsched pass over 100,000 pending jobs, 2,000 running jobs and 200
// teams, as the plugin runs it under slurmctld's locks. Not part of `make check`.
// Build: `make bench` in the build directory; run bench/priority_bench.
// Usage: priority_bench [pending_jobs] [teams] [passes] [attained]
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>

#include "core/config.h"
#include "core/fairshare.h"
#include "core/priority.h"

int main(int argc, char** argv) {
  using namespace mlsched;
  const size_t pending = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 100000;
  const size_t teams = argc > 2 ? std::strtoul(argv[2], nullptr, 10) : 200;
  const int passes = argc > 3 ? std::atoi(argv[3]) : 20;
  // A 4th argument "attained" turns attained-service levels on for every team, with
  // one pending job in ten carrying GPU-time from earlier runs.
  const bool attained = argc > 4 && std::string(argv[4]) == "attained";
  Config config = *parse_config(std::string("GpuWeight=h100:1.0,a100:0.6\nTeamQuota=team0:h100=64,a100=32\n") +
                                    (attained ? "AttainedService=all\n" : ""),
                                "bench")
                       .config;
  std::mt19937 rng(42);
  PassInput in;
  in.cluster_gpus_by_type = {{"h100", 4096}, {"a100", 4096}};
  for (size_t t = 0; t < teams; ++t) in.teams.push_back({"team" + std::to_string(t), 1 + static_cast<uint32_t>(t % 5)});
  const int64_t now = 1700000000;
  const char* types[] = {"h100", "a100", ""};
  for (uint32_t i = 0; i < 2000; ++i) {
    ChargedJob r;
    r.job_id = i + 1;
    r.team = in.teams[rng() % teams].team;
    r.allocation.by_type["h100"] = 1 + rng() % 8;
    r.gpus = r.allocation.total();
    r.weighted_gpus = r.gpus;
    r.start_time = now - 3600;
    in.running.push_back(r);
  }
  for (size_t i = 0; i < pending; ++i) {
    PricedJob p;
    p.job_id = static_cast<uint32_t>(10000 + i);
    p.team = in.teams[rng() % teams].team;
    p.gpu_type = types[rng() % 3];
    p.gpus = 1u << (rng() % 6);
    p.submit_time = now - static_cast<int64_t>(rng() % 86400);
    p.type = static_cast<JobType>(rng() % kJobTypeCount);
    if (attained && i % 10 == 0) p.attained_gpu_seconds = static_cast<double>(rng() % 100000);
    in.pending.push_back(p);
  }
  UsageLedger ledger(7 * 86400);
  double best = 1e9, total = 0;
  for (int k = 0; k < passes; ++k) {
    const auto t0 = std::chrono::steady_clock::now();
    PassResult r = priority_pass(config, ledger, in, now + k * 30);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    best = std::min(best, ms);
    total += ms;
    if (r.pending.size() != pending) return 1;
  }
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  std::printf("pending=%zu teams=%zu running=2000 passes=%d%s: best %.2f ms, mean %.2f ms, max RSS %ld MiB\n",
              pending, teams, passes, attained ? " attained-service" : "", best, total / passes,
              ru.ru_maxrss / 1024);
  return 0;
}
