// mlsched: the command-line view of mlsched for users and operators. Each
// subcommand gathers data (libslurm, hwloc) into core values and prints them.
#include <cstdio>
#include <cstring>
#include <exception>

#include <slurm/slurm_version.h>  // SLURM_VERSION_NUMBER: the release the tool was built with

#include "mlsched_config.h"  // PACKAGE_VERSION, from configure
#include "tools/mlsched/cli.h"

namespace mlsched::tool {

namespace {

const char* const kHelp =
    "usage: mlsched <command> [options]\n"
    "\n"
    "  why <jobid>   every reason a pending job waits, with numbers, its ETA and\n"
    "                what would make it start sooner; where a running job runs\n"
    "  history <jobid>\n"
    "                every run of a job: where, how it ended, checkpoints,\n"
    "                GPU-time used and lost (accounting + mlsched's record)\n"
    "  jobs          your jobs (--all: everyone's) with their ML state\n"
    "  topo          GPUs, NVLink and CPU affinity of a node (hwloc) as gres.conf\n"
    "  top           operator view: GPUs by type and team, queue, fragmentation,\n"
    "                nodes down or drained, a map of every GPU\n"
    "  metrics       the same as Prometheus text; --listen serves it over HTTP\n"
    "  run -- CMD    inside a batch job: runs the training, passes on the checkpoint\n"
    "                signal, tells it the checkpoint to resume from\n"
    "  ckpt done P   marks checkpoint P complete (from a process under `mlsched run`)\n"
    "  pipeline submit FILE | status ID | cancel ID\n"
    "                a DAG of batch jobs (a JSON file) with Slurm dependencies and\n"
    "                retries; its stages' states, times and ETAs; cancel it\n"
    "\n"
    "Every command takes --help; why, history, jobs, topo, top and pipeline status\n"
    "also take --json.\n"
    "mlsched --version prints the version and the Slurm release it was built with.\n";

}  // namespace

bool Args::flag(const std::string& name) {
  for (size_t i = 0; i < argv_.size(); ++i) {
    if (!used_[i] && argv_[i] == name) {
      used_[i] = true;
      return true;
    }
  }
  return false;
}

std::string Args::value(const std::string& name) {
  for (size_t i = 0; i < argv_.size(); ++i) {
    if (used_[i]) continue;
    if (argv_[i] == name) {
      if (i + 1 >= argv_.size()) throw UsageError(name + " needs a value");
      used_[i] = used_[i + 1] = true;
      return argv_[i + 1];
    }
    if (argv_[i].rfind(name + "=", 0) == 0) {
      used_[i] = true;
      return argv_[i].substr(name.size() + 1);
    }
  }
  return "";
}

std::string Args::positional() {
  for (size_t i = 0; i < argv_.size(); ++i) {
    if (!used_[i] && (argv_[i].empty() || argv_[i][0] != '-')) {
      used_[i] = true;
      return argv_[i];
    }
  }
  return "";
}

std::vector<std::string> Args::rest_after(const std::string& sep) {
  std::vector<std::string> rest;
  for (size_t i = 0; i < argv_.size(); ++i) {
    if (used_[i] || argv_[i] != sep) continue;
    for (size_t j = i; j < argv_.size(); ++j) {
      if (j > i) rest.push_back(argv_[j]);
      used_[j] = true;
    }
    break;
  }
  return rest;
}

void Args::expect_no_more(const std::string& command) {
  for (size_t i = 0; i < argv_.size(); ++i) {
    if (used_[i]) continue;
    if (!argv_[i].empty() && argv_[i][0] == '-')
      throw UsageError("unknown option '" + argv_[i] + "' for mlsched " + command);
    throw UsageError("unexpected argument '" + argv_[i] + "' for mlsched " + command);
  }
}

void print_json(json_object* obj) {
  fputs(json_object_to_json_string_ext(obj, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE), stdout);
  fputc('\n', stdout);
  json_object_put(obj);
}

}  // namespace mlsched::tool

int main(int argc, char** argv) {
  using namespace mlsched::tool;
  if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
    fputs(kHelp, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  if (!strcmp(argv[1], "--version")) {
    // The Slurm release matters: libslurm talks only to controllers of nearby releases,
    // and a tool built with another release fails on every request (auth plugin version).
    printf("mlsched %s (built with Slurm %02d.%02d.%d)\n", PACKAGE_VERSION, SLURM_VERSION_MAJOR(SLURM_VERSION_NUMBER),
           SLURM_VERSION_MINOR(SLURM_VERSION_NUMBER), SLURM_VERSION_MICRO(SLURM_VERSION_NUMBER));
    return 0;
  }
  const std::string command = argv[1];
  Args args(std::vector<std::string>(argv + 2, argv + argc));
  try {
    if (command == "topo") return cmd_topo(args);
    if (command == "top") return cmd_top(args);
    if (command == "metrics") return cmd_metrics(args);
    if (command == "why") return cmd_why(args);
    if (command == "history") return cmd_history(args);
    if (command == "jobs") return cmd_jobs(args);
    if (command == "run") return cmd_run(args);
    if (command == "ckpt") return cmd_ckpt(args);
    if (command == "pipeline") return cmd_pipeline(args);
    fprintf(stderr, "mlsched: unknown command '%s'\n\n%s", command.c_str(), kHelp);
    return 2;
  } catch (const UsageError& e) {
    fprintf(stderr, "mlsched %s: %s (see mlsched %s --help)\n", command.c_str(), e.what(), command.c_str());
    return 2;
  } catch (const ToolError& e) {
    fprintf(stderr, "mlsched %s: %s\n", command.c_str(), e.what());
    return 1;
  } catch (const std::exception& e) {
    fprintf(stderr, "mlsched %s: internal error: %s\n", command.c_str(), e.what());
    return 1;
  }
}
