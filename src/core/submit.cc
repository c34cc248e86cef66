// The submit decision, step by step: read directives, resolve them against the
// admin config, check them against what the cluster has, then compute what to ask
// Slurm for so that stock Slurm (and the other mlsched plugins) honour them.
#include "core/submit.h"

#include <algorithm>
#include <stdexcept>

#include "core/checkpoint.h"
#include "core/job_record.h"
#include "core/text.h"
#include "core/tres.h"

namespace mlsched {

namespace {

// A request string this reader cannot take apart refuses the job with its text.
std::vector<TresItem> request_items(const std::string& tres) {
  std::string unreadable;
  auto items = parse_tres(tres, &unreadable);
  if (!unreadable.empty()) throw std::invalid_argument("cannot read '" + unreadable + "'");
  return items;
}

uint32_t gpu_count(const std::string& tres, std::vector<std::string>& types) {
  uint64_t total = 0;
  for (const auto& it : request_items(tres)) {
    if (it.name != "gpu") continue;
    total += it.count.value_or(1);
    if (!it.type.empty() && std::find(types.begin(), types.end(), it.type) == types.end())
      types.push_back(it.type);
  }
  return static_cast<uint32_t>(std::min<uint64_t>(total, UINT32_MAX));
}

std::string describe_gang(const GangShape& g) {
  if (g.gpus_per_node > 0 && g.nodes > 1)
    return std::to_string(g.gpus_per_node * g.nodes) + " GPUs (" + std::to_string(g.nodes) + " nodes x " +
           std::to_string(g.gpus_per_node) + ")";
  const uint32_t total = g.gpus_per_node > 0 ? g.gpus_per_node : g.total_gpus;
  return std::to_string(total) + " GPU" + (total == 1 ? "" : "s");
}

// Which key names a value in messages: the user's directive, or the admin default.
std::string origin_of(const JobDirectives& d, const std::string& key, const std::string& value) {
  if (d.was_given(key)) return key + "=" + value;
  return key + "=" + value + " (the default for type=" + to_string(d.type) + ")";
}

void check_locality(const JobDirectives& d, const GangShape& gang, const std::vector<std::string>& types,
                    const Cluster& cluster, SubmitPlan& plan) {
  const bool strict = d.locality_mode == LocalityMode::strict;
  auto problem = [&](const std::string& msg) {
    if (strict) plan.errors.push_back(msg);
    else plan.notes.push_back(msg + "; with locality-mode=prefer the job runs wider");
  };
  // Whatever the locality, the gang must exist in the cluster.
  {
    bool fits_anywhere = false;
    std::vector<std::string> have;
    for (const auto& t : types) {
      ScopeFit f = cluster.best_fit(Locality::any, t, gang);
      fits_anywhere = fits_anywhere || f.fits;
      have.push_back(std::to_string(f.unit_gpus) + " " + t + " GPUs on " + std::to_string(f.unit_nodes) +
                     " suitable nodes");
    }
    if (!fits_anywhere) {
      plan.errors.push_back("the job asks for " + describe_gang(gang) + " of type " + join(types, " or ") +
                            ", but the whole cluster has " + join(have, ", ") +
                            "; ask for fewer GPUs or nodes");
      return;
    }
  }
  if (d.locality == Locality::any) return;
  const std::string loc = origin_of(d, "locality", to_string(d.locality));
  if (d.locality == Locality::node && gang.nodes > 1) {
    problem(loc + " keeps a job on one node, but it asks for " + std::to_string(gang.nodes) +
            " nodes; use locality=nvlink-domain or locality=switch for multi-node gangs");
    return;
  }
  if (d.locality == Locality::nvlink_domain && !cluster.has_nvlink_domains()) {
    problem(loc + ": this cluster declares no NVLink domains (NvlinkDomain= in mlsched.conf); use "
                  "locality=node, switch or any");
    return;
  }
  if (d.locality == Locality::switch_scope && !cluster.has_switches()) {
    problem(loc + ": this cluster has no switch topology (topology.conf); use locality=node, "
                  "nvlink-domain or any");
    return;
  }
  std::vector<std::string> largest;
  for (const auto& t : types) {
    ScopeFit f = cluster.best_fit(d.locality, t, gang);
    if (f.fits) return;
    if (!f.unit.empty())
      largest.push_back(std::to_string(f.unit_gpus) + " " + t + " GPUs (" + f.unit + ")");
  }
  std::string msg = loc + (strict ? " locality-mode=strict" : "") + ": the job needs " + describe_gang(gang) +
                    " in " + scope_phrase(d.locality) + ", but ";
  if (largest.empty()) msg += "no " + scope_phrase(d.locality) + " has " + join(types, " or ") + " GPUs";
  else msg += "the largest has " + join(largest, ", ");
  if (strict) msg += "; ask for fewer GPUs, or use locality-mode=prefer to let it spread";
  problem(msg);
}

}  // namespace

GpuRequest read_gpu_request(const JobRequest& req) {
  GpuRequest g;
  g.per_node = gpu_count(req.tres_per_node, g.types);
  g.per_job = gpu_count(req.tres_per_job, g.types);
  g.per_task = gpu_count(req.tres_per_task, g.types);
  g.per_socket = gpu_count(req.tres_per_socket, g.types);
  return g;
}

GangRequest gang_request(const GpuRequest& gpus, uint32_t nodes, uint32_t tasks,
                         const std::optional<JobDirectives>& directives) {
  GangRequest g;
  g.request.gang.nodes = std::max<uint32_t>(1, nodes);
  if (gpus.per_node) {
    g.request.gang.gpus_per_node = gpus.per_node;
    g.placed_by_mlsched = true;
  } else if (gpus.per_job) {
    g.request.gang.total_gpus = gpus.per_job;
    g.placed_by_mlsched = true;
  } else if (gpus.per_task) {
    g.request.gang.total_gpus = gpus.per_task * std::max<uint32_t>(1, tasks);
  }
  g.request.gpu_types = directives && !directives->gpu_types.empty() ? directives->gpu_types : gpus.types;
  if (directives) {
    g.request.locality = directives->locality;
    g.request.mode = directives->locality_mode;
  }
  return g;
}

std::string type_gpu_tres(const std::string& tres, const std::string& gpu_type) {
  auto items = request_items(tres);
  for (auto& it : items)
    if (it.name == "gpu" && it.type.empty()) it.type = gpu_type;
  return format_tres(items);
}

std::string SubmitPlan::user_message() const {
  const auto& lines = errors.empty() ? notes : errors;
  const size_t total = lines.size() + (errors.empty() ? notes_dropped : errors_dropped);
  if (total == 0) return "";
  if (total == 1) return "mlsched: " + shown(lines[0], kMaxLineBytes);
  std::string msg = "mlsched: " + std::to_string(total) +
                    (errors.empty() ? " notes on this job:" : " problems with this job:");
  const size_t listed = std::min(lines.size(), kMaxProblemsShown);
  for (size_t i = 0; i < listed; ++i) msg += "\n  " + shown(lines[i], kMaxLineBytes);
  if (total > listed)
    msg += "\n  ... and " + std::to_string(total - listed) + " more (fix these first; each line is checked)";
  return msg;
}

namespace {

// The steps of plan_submit(), in order. Each adds its errors (or notes) to `plan`
// and refines `d`; plan_submit stops at the first step that found errors.

// GPU types: the user's list, checked against what the cluster has and against any
// type already written in --gres/--gpus; a locality needs GPUs to place.
// A federated job may name a type that only another region has (req.other_region_gpu_types):
// it stays in the list, and `here` gets the types this cluster has, the ones it is
// placed and rewritten for.
void check_gpu_types(JobDirectives& d, const GpuRequest& gpus, const JobRequest& req, const Cluster& cluster,
                     std::vector<std::string>& here, SubmitPlan& plan) {
  if (d.was_given("gpu-type")) {
    std::vector<std::string> canonical;
    const auto& elsewhere = req.other_region_gpu_types;
    for (const auto& t : d.gpu_types) {
      auto c = cluster.canonical_gpu_type(t);
      if (c) {
        canonical.push_back(*c);
        here.push_back(*c);
        continue;
      }
      // A sibling copy's list was checked by the origin, against every region.
      if (req.sibling_copy ||
          (elsewhere && std::find(elsewhere->begin(), elsewhere->end(), lowercase(t)) != elsewhere->end())) {
        canonical.push_back(lowercase(t));
        continue;
      }
      auto have = cluster.gpu_types();
      std::string msg = "gpu-type=" + shown(join(d.gpu_types, ",")) + ": this cluster has no " + shown(t) +
                        " GPUs (it has " + (have.empty() ? std::string("none") : join(have, ", ")) + ")";
      if (elsewhere)
        msg += ", nor does another region of its federation (they have " +
               (elsewhere->empty() ? std::string("none") : join(*elsewhere, ", ")) + ")";
      plan.errors.push_back(msg);
    }
    d.gpu_types = canonical;
    if (!gpus.any())
      plan.errors.push_back("gpu-type=" + join(d.gpu_types, ",") +
                            " needs GPUs: add --gres=gpu:N (per node) or --gpus=N to the job");
    for (const auto& t : gpus.types) {
      auto c = cluster.canonical_gpu_type(t).value_or(t);
      if (std::find(d.gpu_types.begin(), d.gpu_types.end(), c) == d.gpu_types.end())
        plan.errors.push_back("gpu-type=" + join(d.gpu_types, ",") + " conflicts with the job's GPU request for " +
                              t + "; ask for untyped GPUs (--gres=gpu:N) and let gpu-type choose");
    }
  } else if (!gpus.types.empty()) {
    // The request already names its type: record it so the other plugins see it.
    for (const auto& t : gpus.types) d.gpu_types.push_back(cluster.canonical_gpu_type(t).value_or(t));
    here = d.gpu_types;
  }
  if (d.was_given("locality") && d.locality != Locality::any && !gpus.any())
    plan.errors.push_back("locality=" + to_string(d.locality) +
                          " places GPUs; this job asks for none (add --gres=gpu:N or drop locality)");
}

// The gang must fit its locality on an empty cluster, or it would wait forever.
void check_gang(const JobDirectives& d, const GpuRequest& gpus, const JobRequest& req, const Cluster& cluster,
                SubmitPlan& plan) {
  if (!gpus.any()) return;
  GangShape gang;
  gang.nodes = std::max<uint32_t>(1, req.min_nodes.value_or(1));
  if (gpus.per_node) {
    gang.gpus_per_node = gpus.per_node;
  } else if (gpus.per_job) {
    gang.total_gpus = gpus.per_job;
  } else if (gpus.per_task && req.num_tasks) {
    gang.total_gpus = gpus.per_task * *req.num_tasks;
  }
  if (gang.gpus_per_node || gang.total_gpus) {
    const std::vector<std::string> types = d.gpu_types.empty() ? cluster.gpu_types() : d.gpu_types;
    if (!types.empty()) check_locality(d, gang, types, cluster, plan);
  }
}

// What Slurm is asked for so that stock Slurm honours the GPU types.
void rewrite_gpu_types(const JobDirectives& d, const GpuRequest& gpus, const JobRequest& req, const Cluster& cluster,
                       SubmitPlan& plan) {
  // Rewrite. One type: typed GRES, so Slurm, sacct and accounting all see the type.
  const bool untyped_request = gpus.any() && gpus.types.empty();
  if (untyped_request && d.gpu_types.size() == 1) {
    const std::string& t = d.gpu_types[0];
    if (gpus.per_node) plan.tres_per_node = type_gpu_tres(req.tres_per_node, t);
    if (gpus.per_job) plan.tres_per_job = type_gpu_tres(req.tres_per_job, t);
    if (gpus.per_task) plan.tres_per_task = type_gpu_tres(req.tres_per_task, t);
    if (gpus.per_socket) plan.tres_per_socket = type_gpu_tres(req.tres_per_socket, t);
  } else if (untyped_request && d.gpu_types.size() > 1) {
    // An ordered list: Slurm's matching-OR constraint keeps all nodes of one type,
    // and --prefer asks for the first choice before falling back (select/mlsched
    // follows the list's order itself).
    for (const auto& t : d.gpu_types) {
      bool tagged = false;
      for (const auto& n : cluster.nodes())
        if (n.gpu_type == t)
          tagged = tagged || std::any_of(n.features.begin(), n.features.end(),
                                         [&](const std::string& f) { return lowercase(f) == lowercase(t); });
      if (!tagged) {
        plan.errors.push_back("gpu-type=" + join(d.gpu_types, ",") + ": nodes with " + t +
                              " GPUs lack the node feature '" + t +
                              "' that gpu-type lists need (ask the admin to add Features=" + t +
                              " to those nodes), or give a single gpu-type");
      }
    }
    if (req.features.find_first_of("|[]()") != std::string::npos)
      plan.errors.push_back("gpu-type=" + join(d.gpu_types, ",") + " cannot be combined with a --constraint "
                            "that has '|', brackets or parentheses; give one gpu-type instead");
    if (!plan.errors.empty()) return;
    const std::string one_of = "[" + join(d.gpu_types, "|") + "]";
    plan.features = req.features.empty() ? one_of : req.features + "&" + one_of;
    if (req.prefer.empty() && !req.placement_orders_types) plan.prefer = d.gpu_types[0];
  }

}

// Returns false (with the error in `plan`) when the job's --signal conflicts.
bool apply_checkpoint_signal(JobDirectives& d, const JobRequest& req, const Config& config, SubmitPlan& plan) {
  // Checkpoint signal: only when the job said it handles one. The default action
  // of USR1 kills a shell, so an unannounced signal would end jobs early.
  const bool wants_signal = d.was_given("checkpoint-signal") || d.was_given("checkpoint-grace");
  if (req.warn_signal && *req.warn_signal != 0) {
    if (d.was_given("checkpoint-signal") && *req.warn_signal != d.checkpoint_signal) {
      plan.errors.push_back("checkpoint-signal=" + signal_name(d.checkpoint_signal) + " conflicts with --signal=" +
                            signal_name(*req.warn_signal) + "; keep one of them");
      return false;
    }
    // The user's own --signal stands; record it as the checkpoint signal.
    d.checkpoint_signal = *req.warn_signal;
    if (req.warn_time && !d.was_given("checkpoint-grace"))
      d.checkpoint_grace = std::min(*req.warn_time, config.max_checkpoint_grace);
  } else if (wants_signal) {
    plan.warn_signal = d.checkpoint_signal;
    plan.warn_time = d.checkpoint_grace;
    plan.warn_batch_only = true;
  }
  // slurmctld checks time limits every 30 s and sends the signal at the first check
  // that falls within grace + 30 s of the limit. With a limit of at most grace + 60 s
  // that check can come in the job's first seconds, before its script has set a
  // handler, and the checkpoint is lost (seen on Slurm 24.11 with -t 1 and grace 30).
  const std::optional<uint32_t> grace = plan.warn_signal ? plan.warn_time : req.warn_time;
  if (req.time_limit && grace && (plan.warn_signal || req.warn_signal) &&
      uint64_t{*req.time_limit} * 60 <= uint64_t{*grace} + 60) {
    const uint64_t enough = (uint64_t{*grace} + 60) / 60 + 1;
    plan.notes.push_back("--time=" + std::to_string(*req.time_limit) + " is not longer than checkpoint-grace (" +
                         std::to_string(*grace) + " s) + 60 s: Slurm may send the checkpoint signal before the "
                         "job's script has started, and the checkpoint is lost; give --time=" +
                         std::to_string(enough) + " or more");
  }
  return true;
}

void apply_requeue(const JobDirectives& d, const JobRequest& req, SubmitPlan& plan) {
  // A preemptible or restartable job must come back, not be cancelled.
  if (d.preemptible || d.max_restarts > 0) {
    if (req.requeue && !*req.requeue) {
      plan.notes.push_back("--no-requeue: when preempted this job is cancelled, not requeued "
                           "(drop --no-requeue, or set preemptible=no and max-restarts=0)");
    } else {
      plan.requeue = true;
    }
  }

}

}  // namespace

JobRequest without_origin_rewrite(JobRequest req, const std::vector<std::string>& gpu_types) {
  auto listed = [&](const std::string& t) {
    return std::any_of(gpu_types.begin(), gpu_types.end(), [&](const std::string& g) { return lowercase(g) == lowercase(t); });
  };
  for (std::string* tres : {&req.tres_per_node, &req.tres_per_job, &req.tres_per_task, &req.tres_per_socket}) {
    if (tres->empty()) continue;
    auto items = request_items(*tres);
    for (auto& it : items)
      if (it.name == "gpu" && !it.type.empty() && listed(it.type)) it.type.clear();
    *tres = format_tres(items);
  }
  // "[a|b]" or "<user's constraint>&[a|b]", as rewrite_gpu_types writes it.
  const size_t open = req.features.rfind('[');
  if (open != std::string::npos && !req.features.empty() && req.features.back() == ']' &&
      (open == 0 || req.features[open - 1] == '&')) {
    const auto names = split(req.features.substr(open + 1, req.features.size() - open - 2), '|');
    if (!names.empty() && std::all_of(names.begin(), names.end(), listed))
      req.features.erase(open == 0 ? 0 : open - 1);
  }
  if (!req.prefer.empty() && listed(req.prefer)) req.prefer.clear();
  return req;
}

SubmitPlan plan_submit(const JobRequest& given, const Config& config, const Cluster& cluster) {
  SubmitPlan plan;
  JobRequest req = given;
  const RawDirectives raw = read_directives(req.script, req.comment, req.het_component);
  // A pipeline stage's membership words, checked and stored whether or not the job
  // has directives.
  std::string membership;
  if (!raw.pipeline.empty()) {
    std::vector<std::string> words;
    for (const auto& [key, given] : raw.pipeline) words.push_back(key + "=" + given.value);
    std::string why;
    if (auto m = pipeline_membership_of(words, &why)) membership = pipeline_words(*m);
    else plan.errors.push_back("--comment: " + why + " (these words are written by `mlsched pipeline submit`)");
  }
  if (!raw.any()) {
    plan.notes = raw.notes;  // ignored #MLSCHED lines are still worth a word
    plan.notes_dropped = raw.notes_dropped;
    if (!membership.empty()) plan.stored = std::string(kStoredPrefix) + " " + membership;
    return plan;
  }
  plan.has_directives = true;
  ResolvedDirectives resolved = resolve_directives(raw, config);
  plan.errors.insert(plan.errors.end(), resolved.errors.begin(), resolved.errors.end());
  plan.notes = resolved.notes;
  plan.errors_dropped = resolved.errors_dropped;
  plan.notes_dropped = resolved.notes_dropped;
  if (!resolved.directives) return plan;
  JobDirectives d = *resolved.directives;
  if (given.sibling_copy) req = without_origin_rewrite(req, d.gpu_types);

  GpuRequest gpus;
  try {
    gpus = read_gpu_request(req);
  } catch (const std::invalid_argument& e) {
    plan.errors.push_back(std::string("cannot read the job's GPU request: ") + e.what());
    return plan;
  }
  std::vector<std::string> here;
  check_gpu_types(d, gpus, req, cluster, here, plan);
  if (!plan.errors.empty()) return plan;
  // Placed and rewritten for the types this cluster has; a job whose types are all in
  // other regions is neither: this cluster keeps only the federation's tracking copy.
  if (d.gpu_types.empty() || !here.empty()) {
    JobDirectives local = d;
    local.gpu_types = here;
    check_gang(local, gpus, req, cluster, plan);
    if (!plan.errors.empty()) return plan;
    rewrite_gpu_types(local, gpus, req, cluster, plan);
    if (!plan.errors.empty()) return plan;
  }
  if (req.other_region_gpu_types && !req.sibling_copy && d.was_given("gpu-type") && req.cluster_features.empty())
    plan.cluster_features = join(d.gpu_types, ",");
  if (!apply_checkpoint_signal(d, req, config, plan)) return plan;
  apply_requeue(d, req, plan);

  plan.directives = d;
  plan.stored = std::string(kStoredPrefix) + " " + d.to_string() + (membership.empty() ? "" : " " + membership);
  // A sibling copy: what the origin's rewrite put in and this region's plan did not
  // replace goes back to what the user asked for.
  const auto restore = [](std::optional<std::string>& out, const std::string& was, const std::string& now) {
    if (!out && was != now) out = now;
  };
  restore(plan.tres_per_node, given.tres_per_node, req.tres_per_node);
  restore(plan.tres_per_job, given.tres_per_job, req.tres_per_job);
  restore(plan.tres_per_task, given.tres_per_task, req.tres_per_task);
  restore(plan.tres_per_socket, given.tres_per_socket, req.tres_per_socket);
  restore(plan.features, given.features, req.features);
  restore(plan.prefer, given.prefer, req.prefer);
  return plan;
}

UpdateVerdict check_update(const JobUpdate& u, const Config& config) {
  UpdateVerdict v;
  const auto stored = parse_stored_directives(u.admin_comment);
  if (u.comment && without_checkpoint_report(*u.comment) != without_checkpoint_report(u.current_comment)) {
    const std::string c = trim(without_checkpoint_report(*u.comment));
    if (starts_with(lowercase(c), kStoredPrefix)) {
      // The same directives the job has, resolved as at submission, may come back.
      const ResolvedDirectives given = resolve_directives(read_directives("", c), config);
      const bool same = stored && given.directives &&
                        lowercase(given.directives->to_string()) == lowercase(stored->to_string());
      if (!same) {
        v.kind = UpdateVerdict::Kind::directives_fixed;
        v.reason = "mlsched: a job's directives are fixed at submission; the comment may only repeat them (" +
                   (stored ? stored->to_string() : std::string("this job has none")) + ")";
        return v;
      }
    }
  }
  if (!stored || stored->gpu_types.empty()) return v;
  for (const auto& t : read_gpu_request(u.request).types) {
    bool allowed = false;
    for (const auto& want : stored->gpu_types) allowed = allowed || lowercase(want) == lowercase(t);
    if (!allowed) {
      v.kind = UpdateVerdict::Kind::gpu_type_excluded;
      v.reason = "mlsched: GPU type " + shown(t) + " is outside this job's gpu-type directive (" +
                 join(stored->gpu_types, ",") + ")";
      return v;
    }
  }
  return v;
}

}  // namespace mlsched
