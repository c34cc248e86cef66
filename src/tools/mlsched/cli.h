// What every mlsched subcommand shares: argument parsing, the two kinds of
// failure (wrong usage vs. a problem met while working) and JSON printing.
#pragma once

#include <json-c/json.h>
#include <slurm/slurm.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/cluster.h"
#include "core/lifecycle.h"
#include "core/ops.h"
#include "core/why.h"

namespace mlsched::tool {

// The user asked for something the command does not take: exit 2 and a hint.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// The command understood the request but could not do it: exit 1.
struct ToolError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Options as "--name value", "--name=value" or bare flags, plus positionals.
class Args {
 public:
  explicit Args(std::vector<std::string> argv) : argv_(std::move(argv)), used_(argv_.size(), false) {}

  bool flag(const std::string& name);
  // Value of an option that takes one; "" when absent.
  std::string value(const std::string& name);
  // Next unused positional argument; "" when none.
  std::string positional();
  // Every argument after the first `sep` (e.g. "--"), all taken; empty when none.
  std::vector<std::string> rest_after(const std::string& sep);
  // Fails with a UsageError naming whatever was not understood.
  void expect_no_more(const std::string& command);

 private:
  std::vector<std::string> argv_;
  std::vector<bool> used_;
};

// libslurm's strings may be NULL.
inline std::string str(const char* s) { return s ? s : ""; }

// A job list from slurm_load_jobs(), freed on every path.
struct JobsMsg {
  job_info_msg_t* msg = nullptr;
  JobsMsg() = default;
  JobsMsg(const JobsMsg&) = delete;
  JobsMsg& operator=(const JobsMsg&) = delete;
  ~JobsMsg() {
    if (msg) slurm_free_job_info_msg(msg);
  }
};

// Prints and frees.
void print_json(json_object* obj);

// "what: <Slurm's message for the last error>".
std::string slurm_error(const std::string& what);
// mlsched.conf: $MLSCHED_CONF, else next to $SLURM_CONF (or /etc/slurm).
std::string mlsched_conf_path();
// The nodes, NVLink domains (mlsched.conf) and switches as the core's model, which
// GPUs are busy, and with `health` each node's Slurm state and reason. Problems that
// leave the model usable go to `notes`; failing to read the nodes throws ToolError.
void load_cluster(Cluster& cluster, ClusterState& state, std::vector<std::string>& notes,
                  std::vector<NodeHealth>* health);
// The partitions (GPU pools) with their nodes; when slurmctld does not answer, none
// and a note.
std::vector<Pool> load_pools(std::vector<std::string>& notes);

// why_cmd.cc: a job's user by name (Slurm's, else the passwd entry, else the uid),
// its GPU indices per node (gres detail), Slurm's base state as squeue names it.
std::string user_name(uint32_t uid, const char* given);
std::map<std::string, std::vector<int>> gpus_by_node(const slurm_job_info_t& j);
std::string state_name(const slurm_job_info_t& j);
// Slurm's base job state as squeue and sacct spell it (live jobs and accounting records alike).
const char* job_state_text(uint32_t state);

// ops_cmd.cc: the cluster's name (slurmctld), and the id accounting gives gres/gpu
// in TRES strings ("1001=8"; "" when it has none).
std::string cluster_name_from_slurmctld();
std::string accounting_gpu_tres_id(void* db);
// history_cmd.cc: a job of slurmctld's table as core/lifecycle reads it.
SlurmJobView job_view(const slurm_job_info_t& j);

// why_cmd.cc: the why model's start ETA of each of `jobs` (pending ones; 0 when it
// has none), computed on one snapshot of the cluster and every job in `all`.
std::map<uint32_t, time_t> model_etas(const job_info_msg_t* all, const std::vector<const slurm_job_info_t*>& jobs,
                                      std::vector<std::string>& notes);
// pipeline_cmd.cc: what `why` adds for a pipeline stage ("" when the job is none).
std::string pipeline_note(const slurm_job_info_t& j, const job_info_msg_t* all, time_t now);

int cmd_metrics(Args& args);
int cmd_top(Args& args);
int cmd_topo(Args& args);
int cmd_why(Args& args);
int cmd_history(Args& args);  // history_cmd.cc
int cmd_jobs(Args& args);     // history_cmd.cc
int cmd_run(Args& args);   // run_cmd.cc
int cmd_ckpt(Args& args);  // run_cmd.cc
int cmd_pipeline(Args& args);  // pipeline_cmd.cc

}  // namespace mlsched::tool
