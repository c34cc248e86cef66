// The pipeline file, its checks, the Slurm dependencies of its stages and the
// status of a submitted pipeline (see pipeline.h).
#include "core/pipeline.h"

#include <json-c/json.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <functional>
#include <memory>
#include <set>

#include "core/directives.h"  // kMaxProblemsKept
#include "core/safe_file.h"   // path_inside
#include "core/text.h"
#include "core/why.h"         // format_duration

namespace mlsched {

const StageSpec* PipelineSpec::find(std::string_view stage) const {
  for (const auto& s : stages)
    if (s.name == stage) return &s;
  return nullptr;
}

namespace {

struct Problems {
  PipelineParse& out;
  void add(std::string msg) {
    if (out.errors.size() < kMaxProblemsKept) out.errors.push_back(std::move(msg));
    else ++out.errors_dropped;
  }
};

std::string type_name(json_object* o) {
  switch (json_object_get_type(o)) {
    case json_type_null: return "null";
    case json_type_boolean: return "true/false";
    case json_type_double:
    case json_type_int: return "a number";
    case json_type_object: return "an object";
    case json_type_array: return "a list";
    case json_type_string: return "a string";
  }
  return "something else";
}

const char* const kNameRule = "letters, digits, '-' and '_', starting with a letter or digit, at most 32";

// A stage reads as "stages[2] (train)" in messages.
std::string where(size_t index, const std::string& name) {
  return "stages[" + std::to_string(index) + "]" + (name.empty() ? "" : " (" + name + ")");
}

void read_stage(json_object* obj, size_t index, PipelineSpec& spec, Problems& p) {
  StageSpec st;
  if (!json_object_is_type(obj, json_type_object)) {
    p.add(where(index, "") + ": is " + type_name(obj) + "; each stage is an object {\"name\": ..., \"script\": ...}");
    return;
  }
  static const std::vector<std::string> keys = {"name", "script", "after", "retries"};
  json_object_object_foreach(obj, key, value) {
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) {
      std::string msg = where(index, "") + ": unknown key \"" + shown(key) + "\"";
      if (auto near = closest_match(key, keys)) msg += "; did you mean \"" + *near + "\"?";
      else msg += " (a stage has " + join(keys, ", ") + ")";
      p.add(msg);
    }
    (void)value;
  }
  json_object* v = nullptr;
  if (!json_object_object_get_ex(obj, "name", &v) || !json_object_is_type(v, json_type_string)) {
    p.add(where(index, "") + ": needs \"name\", a string");
  } else {
    st.name = json_object_get_string(v);
    if (!is_pipeline_name(st.name)) {
      p.add(where(index, "") + ": name \"" + shown(st.name) + "\" is not a stage name (" + kNameRule + ")");
      st.name.clear();
    }
  }
  const std::string at = where(index, st.name);
  if (!json_object_object_get_ex(obj, "script", &v) || !json_object_is_type(v, json_type_string)) {
    p.add(at + ": needs \"script\", the path of its batch script relative to the pipeline file");
  } else {
    st.script = json_object_get_string(v);
    if (st.script.size() > kMaxScriptPathBytes || st.script.find_first_of(std::string("\0", 1)) != std::string::npos)
      p.add(at + ": script path is longer than " + std::to_string(kMaxScriptPathBytes) + " bytes");
    else if (!path_inside(st.script))
      p.add(at + ": script \"" + shown(st.script) +
            "\" must be a relative path inside the pipeline file's directory (no '..', not absolute)");
  }
  if (json_object_object_get_ex(obj, "retries", &v)) {
    const int64_t n = json_object_is_type(v, json_type_int) ? json_object_get_int64(v) : -1;
    if (n < 0 || n > static_cast<int64_t>(kMaxStageRetries))
      p.add(at + ": retries must be a whole number from 0 to " + std::to_string(kMaxStageRetries));
    else
      st.retries = static_cast<uint32_t>(n);
  }
  if (json_object_object_get_ex(obj, "after", &v)) {
    if (!json_object_is_type(v, json_type_array)) {
      p.add(at + ": after must be a list of stage names, each optionally with :ok, :any or :notok");
    } else {
      const size_t n = json_object_array_length(v);
      if (n > kMaxPipelineStages) p.add(at + ": after lists more than " + std::to_string(kMaxPipelineStages) + " stages");
      for (size_t i = 0; i < n && i < kMaxPipelineStages; ++i) {
        json_object* item = json_object_array_get_idx(v, i);
        if (!json_object_is_type(item, json_type_string)) {
          p.add(at + ": after[" + std::to_string(i) + "] is " + type_name(item) + ", not \"stage\" or \"stage:kind\"");
          continue;
        }
        const std::string text = json_object_get_string(item);
        const size_t colon = text.find(':');
        AfterEdge e;
        e.stage = text.substr(0, colon);
        if (colon != std::string::npos) {
          const auto kind = parse_after_kind(text.substr(colon + 1));
          if (!kind) {
            p.add(at + ": after \"" + shown(text) + "\": the kind must be ok (it succeeded), any (it ended) or notok "
                  "(it failed)");
            continue;
          }
          e.kind = *kind;
        }
        if (!is_pipeline_name(e.stage)) {
          p.add(at + ": after \"" + shown(text) + "\" does not name a stage");
          continue;
        }
        if (std::any_of(st.after.begin(), st.after.end(), [&](const AfterEdge& o) { return o.stage == e.stage; })) {
          p.add(at + ": after names " + e.stage + " twice");
          continue;
        }
        st.after.push_back(e);
      }
    }
  }
  spec.stages.push_back(std::move(st));
}

// Slurm ORs attempts with '?' and cannot mix it with ',' in one job's dependency.
void check_or_limits(const PipelineSpec& spec, Problems& p) {
  for (const auto& st : spec.stages) {
    const AfterEdge* joined = nullptr;
    for (const auto& e : st.after) {
      const StageSpec* up = spec.find(e.stage);
      if (up && up->retries > 0 && e.kind != AfterKind::notok) joined = &e;
    }
    if (!joined) continue;
    if (st.after.size() > 1)
      p.add("stage " + st.name + ": waits for " + joined->stage + ", which has retries, and for other stages too; " +
            "Slurm's dependencies are all-of or any-of, not both, so this cannot wait for any attempt of " +
            joined->stage + " and for the others. Give the join a stage of its own, or drop " + joined->stage +
            "'s retries");
    if (st.retries > 0)
      p.add("stage " + st.name + ": cannot have retries while it waits for " + joined->stage +
            ", which has retries (its retry would have to wait for any attempt of " + joined->stage +
            " and for its own failed attempt, which Slurm cannot express); drop one of the two retries");
  }
}

void check_cycles(const PipelineSpec& spec, Problems& p) {
  std::map<std::string, int> color;  // 0 new, 1 on the path, 2 done
  std::vector<std::string> path;
  bool reported = false;
  std::function<void(const StageSpec&)> visit = [&](const StageSpec& st) {
    color[st.name] = 1;
    path.push_back(st.name);
    for (const auto& e : st.after) {
      const StageSpec* up = spec.find(e.stage);
      if (!up) continue;
      if (color[up->name] == 1 && !reported) {
        const auto from = std::find(path.begin(), path.end(), up->name);
        std::vector<std::string> cycle(from, path.end());
        cycle.push_back(up->name);
        p.add("the stages wait for each other in a cycle: " + join(cycle, " -> ") + "; a pipeline must be acyclic");
        reported = true;
      } else if (color[up->name] == 0) {
        visit(*up);
      }
    }
    path.pop_back();
    color[st.name] = 2;
  };
  for (const auto& st : spec.stages)
    if (color[st.name] == 0) visit(st);
}

}  // namespace

PipelineParse parse_pipeline(std::string_view json_text) {
  PipelineParse out;
  Problems p{out};
  if (json_text.size() > kMaxPipelineFileBytes) {
    p.add("the file is " + std::to_string(json_text.size()) + " bytes, more than the " +
          std::to_string(kMaxPipelineFileBytes) + " a pipeline file may have");
    return out;
  }
  std::unique_ptr<json_tokener, void (*)(json_tokener*)> tok(json_tokener_new(), json_tokener_free);
  json_tokener_set_flags(tok.get(), JSON_TOKENER_STRICT);
  json_object* root = json_tokener_parse_ex(tok.get(), json_text.data(), static_cast<int>(json_text.size()));
  std::unique_ptr<json_object, int (*)(json_object*)> root_guard(root, json_object_put);
  const json_tokener_error err = json_tokener_get_error(tok.get());
  if (!root || err != json_tokener_success) {
    const size_t offset = json_tokener_get_parse_end(tok.get());
    const size_t line = 1 + static_cast<size_t>(std::count(json_text.begin(), json_text.begin() + std::min(offset, json_text.size()), '\n'));
    p.add("not valid JSON at line " + std::to_string(line) + ": " +
          (err == json_tokener_continue ? std::string("the text ends early") : json_tokener_error_desc(err)));
    return out;
  }
  // Nothing but blanks may follow the document.
  for (size_t i = json_tokener_get_parse_end(tok.get()); i < json_text.size(); ++i) {
    if (!std::isspace(static_cast<unsigned char>(json_text[i]))) {
      p.add("text after the end of the JSON document");
      return out;
    }
  }
  if (!json_object_is_type(root, json_type_object)) {
    p.add("the file must hold one JSON object {\"pipeline\": ..., \"stages\": [...]}");
    return out;
  }
  static const std::vector<std::string> keys = {"pipeline", "stages", "schedule", "concurrency"};
  json_object_object_foreach(root, key, value) {
    (void)value;
    if (std::find(keys.begin(), keys.end(), key) != keys.end()) continue;
    std::string msg = "unknown key \"" + shown(key) + "\"";
    if (auto near = closest_match(key, keys)) msg += "; did you mean \"" + *near + "\"?";
    else msg += " (the file has pipeline, stages, schedule and concurrency)";
    p.add(msg);
  }
  PipelineSpec spec;
  json_object* v = nullptr;
  if (json_object_object_get_ex(root, "schedule", &v)) {
    if (!json_object_is_type(v, json_type_string)) {
      p.add("\"schedule\" must be a string: a cron schedule such as \"0 2 * * *\" (02:00 every day)");
    } else {
      spec.schedule = json_object_get_string(v);
      if (const std::string e = cron_schedule_problem(spec.schedule); !e.empty())
        p.add("schedule \"" + shown(spec.schedule) + "\": " + e);
    }
  }
  if (json_object_object_get_ex(root, "concurrency", &v)) {
    const std::string c = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : "";
    if (c == "forbid") spec.concurrency = Concurrency::forbid;
    else if (c == "allow") spec.concurrency = Concurrency::allow;
    else
      p.add("concurrency must be \"forbid\" (skip a scheduled run while the previous run is still going) or "
            "\"allow\" (start it anyway)");
    if (!json_object_object_get_ex(root, "schedule", nullptr))
      p.add("concurrency is only for a pipeline with a schedule");
  }
  if (!json_object_object_get_ex(root, "pipeline", &v) || !json_object_is_type(v, json_type_string)) {
    p.add("needs \"pipeline\": the pipeline's name, a string");
  } else {
    spec.name = json_object_get_string(v);
    if (!is_pipeline_name(spec.name))
      p.add("pipeline \"" + shown(spec.name) + "\" is not a pipeline name (" + kNameRule + ")");
  }
  if (!json_object_object_get_ex(root, "stages", &v) || !json_object_is_type(v, json_type_array)) {
    p.add("needs \"stages\": a list of stages");
    return out;
  }
  const size_t n = json_object_array_length(v);
  if (n == 0) p.add("\"stages\" is empty; a pipeline has at least one stage");
  if (n > kMaxPipelineStages) {
    p.add("\"stages\" has " + std::to_string(n) + " stages; a pipeline may have at most " +
          std::to_string(kMaxPipelineStages));
    return out;
  }
  for (size_t i = 0; i < n; ++i) read_stage(json_object_array_get_idx(v, i), i, spec, p);

  std::set<std::string> seen;
  for (size_t i = 0; i < spec.stages.size(); ++i) {
    const auto& st = spec.stages[i];
    if (!st.name.empty() && !seen.insert(st.name).second) p.add(where(i, st.name) + ": a stage of that name comes earlier");
  }
  for (size_t i = 0; i < spec.stages.size(); ++i) {
    const auto& st = spec.stages[i];
    for (const auto& e : st.after) {
      if (e.stage == st.name) p.add(where(i, st.name) + ": waits for itself");
      else if (!seen.count(e.stage)) {
        std::string msg = where(i, st.name) + ": after names \"" + e.stage + "\", which is not a stage of this pipeline";
        if (auto near = closest_match(e.stage, std::vector<std::string>(seen.begin(), seen.end())))
          msg += "; did you mean \"" + *near + "\"?";
        p.add(msg);
      }
    }
  }
  if (!out.errors.empty()) return out;
  check_cycles(spec, p);
  check_or_limits(spec, p);
  if (out.errors.empty()) out.spec = std::move(spec);
  return out;
}

std::vector<const StageSpec*> submission_order(const PipelineSpec& spec) {
  std::vector<const StageSpec*> order;
  std::set<std::string> placed;
  // Repeatedly take the first stage (in file order) whose upstream stages are all
  // placed: at most 64 x 64 steps.
  while (order.size() < spec.stages.size()) {
    bool progressed = false;
    for (const auto& st : spec.stages) {
      if (placed.count(st.name)) continue;
      if (std::all_of(st.after.begin(), st.after.end(), [&](const AfterEdge& e) { return placed.count(e.stage) > 0; })) {
        order.push_back(&st);
        placed.insert(st.name);
        progressed = true;
        break;
      }
    }
    if (!progressed) break;  // a cycle: parse_pipeline refuses those
  }
  return order;
}

std::string stage_dependency(const PipelineSpec& spec, const StageSpec& stage, uint32_t attempt,
                             const std::map<std::string, std::vector<uint32_t>>& attempt_ids) {
  auto ids_of = [&](const std::string& name) -> const std::vector<uint32_t>& {
    static const std::vector<uint32_t> none;
    auto it = attempt_ids.find(name);
    return it == attempt_ids.end() ? none : it->second;
  };
  std::vector<std::string> all_of, any_of;
  for (const auto& e : stage.after) {
    const StageSpec* up = spec.find(e.stage);
    const auto& ids = ids_of(e.stage);
    if (!up || ids.empty()) continue;
    if (ids.size() == 1) {
      const char* cond = e.kind == AfterKind::ok ? "afterok" : e.kind == AfterKind::any ? "afterany" : "afternotok";
      all_of.push_back(std::string(cond) + ":" + std::to_string(ids[0]));
    } else if (e.kind == AfterKind::notok) {
      // Failed for good: every attempt failed.
      for (uint32_t id : ids) all_of.push_back("afternotok:" + std::to_string(id));
    } else {
      // Any attempt that ended ok; for "any", also the last attempt ending at all.
      for (size_t i = 0; i < ids.size(); ++i) {
        const bool last = i + 1 == ids.size();
        any_of.push_back(std::string(last && e.kind == AfterKind::any ? "afterany:" : "afterok:") + std::to_string(ids[i]));
      }
    }
  }
  // A retry runs only when every earlier attempt failed.
  const auto& own = ids_of(stage.name);
  for (uint32_t k = 1; k < attempt && k <= own.size(); ++k) all_of.push_back("afternotok:" + std::to_string(own[k - 1]));
  if (!any_of.empty()) return join(any_of, "?");  // parse_pipeline allows nothing beside it
  return join(all_of, ",");
}

PipelineMembership membership_of(const std::string& pipeline_id, const StageSpec& stage, uint32_t attempt) {
  PipelineMembership m;
  m.id = pipeline_id;
  m.stage = stage.name;
  m.attempt = attempt;
  m.attempts = stage.retries + 1;
  m.after = stage.after;
  return m;
}

// ==== status ========================================================================

namespace {

// Slurm cancels a job whose dependency can never be satisfied with its start and
// end set to that moment: such a job never ran.
bool never_ran(const StageJob& j) { return j.state == "CANCELLED" && j.reason == "DependencyNeverSatisfied"; }

bool ended(const std::string& state) {
  return state != "PENDING" && state != "RUNNING" && state != "SUSPENDED" && state != "CONFIGURING" &&
         state != "COMPLETING" && !state.empty();
}

std::string clock_text(time_t t) {
  if (!t) return "?";
  struct tm tmv;
  localtime_r(&t, &tmv);
  char buf[32];
  strftime(buf, sizeof buf, "%m-%d %H:%M:%S", &tmv);
  return buf;
}

std::string in_text(time_t t, time_t now) {
  if (t <= now) return "now";
  return "in " + format_duration(t - now);
}

std::string after_text(const std::vector<AfterEdge>& after) {
  std::vector<std::string> items;
  for (const auto& e : after) items.push_back(e.stage + (e.kind == AfterKind::ok ? "" : ":" + to_string(e.kind)));
  return join(items, ", ");
}

// Why an edge was not satisfied, in the stage's words.
std::string edge_broken(const AfterEdge& e) {
  switch (e.kind) {
    case AfterKind::ok: return e.stage + " did not succeed";
    case AfterKind::notok: return e.stage + " did not fail";
    case AfterKind::any: return e.stage + " never ran";
  }
  return e.stage;
}

// The `after` edges of `s` that can no longer be met, as edge_broken names them: an
// `ok` edge whose stage failed, was cancelled or skipped, a `notok` edge whose stage
// completed, an `any` edge whose stage never ran.
std::vector<std::string> broken_edges(const StageStatus& s, const std::map<std::string, const StageStatus*>& by_name) {
  std::vector<std::string> why;
  for (const auto& e : s.after) {
    auto it = by_name.find(e.stage);
    if (it == by_name.end()) continue;
    const std::string& st = it->second->state;
    if ((e.kind == AfterKind::ok && (st == "failed" || st == "cancelled" || st == "skipped")) ||
        (e.kind == AfterKind::notok && st == "completed") || (e.kind == AfterKind::any && st == "skipped"))
      why.push_back(edge_broken(e));
  }
  return why;
}

void explain_stage(StageStatus& s, const std::map<std::string, const StageStatus*>& by_name, time_t now) {
  const auto& a = s.attempts;
  const size_t n = a.size();
  const StageJob* done = nullptr;
  const StageJob* running = nullptr;
  const StageJob* pending = nullptr;
  const StageJob* last_ran = nullptr;
  for (const auto& j : a) {
    if (j.state == "COMPLETED" && !done) done = &j;
    if (!ended(j.state) && j.state != "PENDING" && !running) running = &j;
    if (j.state == "PENDING" && !pending) pending = &j;
    if (j.allocated && j.state != "PENDING" && !never_ran(j)) last_ran = &j;
  }
  auto attempt_of = [&](const StageJob& j) {
    return j.membership.attempts > 1 ? "attempt " + std::to_string(j.membership.attempt) + "/" +
                                           std::to_string(j.membership.attempts) + ", "
                                     : std::string();
  };
  // Upstream stages not yet as required, for a waiting stage's words.
  auto waiting_for = [&]() {
    std::vector<std::string> out;
    for (const auto& e : s.after) {
      auto it = by_name.find(e.stage);
      if (it == by_name.end()) continue;
      const StageStatus& up = *it->second;
      if (up.state == "completed" || up.state == "failed" || up.state == "cancelled" || up.state == "skipped") continue;
      out.push_back(e.stage + " (" + up.state + ")");
    }
    return out;
  };
  if (done) {
    s.current = done;
    s.state = "completed";
    s.detail = attempt_of(*done) + "ended " + clock_text(done->end);
    if (done->membership.attempt > 1) s.detail += " after " + std::to_string(done->membership.attempt - 1) + " failed attempt(s)";
  } else if (running) {
    s.current = running;
    s.state = "running";
    s.detail = attempt_of(*running) + "started " + clock_text(running->start);
    if (running->time_limit_s)
      s.detail += ", ends by " + clock_text(running->start + running->time_limit_s) + " (" +
                  in_text(running->start + running->time_limit_s, now) + ")";
  } else if (pending) {
    s.current = pending;
    if (pending->reason == "DependencyNeverSatisfied") {
      s.state = "skipped";
      const std::vector<std::string> why = broken_edges(s, by_name);
      s.detail = "will never run: " + (why.empty() ? std::string("its dependency cannot be satisfied") : join(why, ", ")) +
                 "; Slurm cancels it (--kill-on-invalid-dep)";
    } else if (pending->reason == "Dependency") {
      s.state = "waiting";
      const auto w = waiting_for();
      if (pending->membership.attempt > 1 && last_ran && ended(last_ran->state))
        s.detail = attempt_of(*pending) + "retry after attempt " + std::to_string(last_ran->membership.attempt) + " " +
                   last_ran->state + "; starts at Slurm's next pass";
      else if (pending->membership.attempt > 1 && last_ran)
        s.detail = attempt_of(*pending) + "retry: runs if attempt " + std::to_string(last_ran->membership.attempt) +
                   " fails";
      else if (w.empty())
        s.detail = "its upstream stages have ended as it needs; Slurm starts it at its next pass";
      else
        s.detail = "waits for " + join(w, ", ");
    } else {
      s.state = "pending";
      s.detail = attempt_of(*pending) + "queued (" + (pending->reason.empty() ? "None" : pending->reason) + ")";
    }
  } else {
    // Every attempt has ended, none ok.
    const StageJob* last = last_ran ? last_ran : (n ? &a.back() : nullptr);
    s.current = last;
    if (last && last_ran && last->state != "CANCELLED") {
      s.state = "failed";
      s.detail = attempt_of(*last) + last->state +
                 (last->exit_code ? " (exit code " + std::to_string(last->exit_code) + ")" : "");
      if (last->membership.attempts > 1 && last->membership.attempt == last->membership.attempts)
        s.detail += "; all " + std::to_string(last->membership.attempts) + " attempts failed";
    } else if (last && never_ran(*last)) {
      s.state = "skipped";
      const std::vector<std::string> why = broken_edges(s, by_name);
      s.detail = "cancelled by Slurm, never ran: " +
                 (why.empty() ? std::string("its dependency could not be satisfied") : join(why, ", "));
    } else {
      s.state = "cancelled";
      s.detail = last_ran ? "cancelled while running" : "cancelled before it ran";
    }
  }
  if (s.current) {
    s.start = s.current->allocated && s.current->state != "PENDING" ? s.current->start : 0;
    s.end = ended(s.current->state) && s.current->allocated ? s.current->end : 0;
  }
}

}  // namespace

PipelineStatus pipeline_status(const std::string& id, std::vector<StageJob> jobs, time_t now) {
  PipelineStatus st;
  st.id = id;
  std::sort(jobs.begin(), jobs.end(), [](const StageJob& a, const StageJob& b) {
    return a.job_id < b.job_id;
  });
  // Stages in the order their first job was submitted: upstream first.
  std::map<std::string, size_t> index;
  for (auto& j : jobs) {
    if (st.name.empty()) st.name = j.name.substr(0, j.name.find('/'));
    auto it = index.find(j.membership.stage);
    if (it == index.end()) {
      index[j.membership.stage] = st.stages.size();
      StageStatus s;
      s.stage = j.membership.stage;
      s.after = j.membership.after;
      st.stages.push_back(s);
      it = index.find(j.membership.stage);
    }
    st.stages[it->second].attempts.push_back(j);
  }
  std::map<std::string, const StageStatus*> by_name;
  for (auto& s : st.stages) {
    std::sort(s.attempts.begin(), s.attempts.end(),
              [](const StageJob& a, const StageJob& b) { return a.membership.attempt < b.membership.attempt; });
    explain_stage(s, by_name, now);
    // ETA: upstream first, so their expected ends are known here.
    const StageJob* c = s.current;
    if (c && s.state == "running") {
      s.expected_end = c->time_limit_s ? c->start + c->time_limit_s : 0;
    } else if (c && (s.state == "pending" || s.state == "waiting")) {
      time_t eta = c->model_eta;
      bool known = s.state == "pending" ? eta != 0 : true;
      if (s.state == "waiting") {
        for (const auto& e : s.after) {
          auto it = by_name.find(e.stage);
          if (it == by_name.end()) continue;
          const StageStatus& up = *it->second;
          if (up.state == "completed" || up.state == "failed") continue;
          if (!up.expected_end) known = false;
          eta = std::max(eta, up.expected_end);
        }
        if (c->membership.attempt > 1 && known) {
          // A retry starts after the running attempt ends.
          for (const auto& j : s.attempts)
            if (j.state == "RUNNING") eta = std::max<time_t>(eta, j.time_limit_s ? j.start + j.time_limit_s : 0);
        }
      }
      // Waiting on nothing that is still running, and why sees no wait: now.
      if (known && !eta && s.state == "waiting") eta = now;
      if (known && eta) {
        s.eta = std::max(eta, now);
        s.expected_end = c->time_limit_s ? s.eta + c->time_limit_s : 0;
      }
    } else if (c) {
      s.expected_end = s.end;
    }
    by_name[s.stage] = &s;
  }
  // A stage's state as the pipeline's: anything still to run wins over the end.
  bool active = false, queued = false, failed = false, cancelled = false;
  for (const auto& s : st.stages) {
    active = active || s.state == "running";
    queued = queued || s.state == "pending" || s.state == "waiting";
    failed = failed || s.state == "failed";
    cancelled = cancelled || s.state == "cancelled";
  }
  st.state = active ? "running" : queued ? "pending" : failed ? "failed" : cancelled ? "cancelled" : "completed";
  return st;
}

std::string format_pipeline_status(const PipelineStatus& status, time_t now) {
  std::string out = "pipeline " + status.id + " (" + status.name + "): " + status.state + ", " +
                    std::to_string(status.stages.size()) + " stage" + (status.stages.size() == 1 ? "" : "s") + "\n";
  size_t width = 5;
  for (const auto& s : status.stages) width = std::max(width, s.stage.size());
  char line[256];
  snprintf(line, sizeof line, "  %-*s  %-9s  %-10s  %-14s  %-14s  %s\n", static_cast<int>(width), "STAGE", "JOB", "STATE",
           "START", "END", "AFTER");
  out += line;
  for (const auto& s : status.stages) {
    const std::string job = s.current ? std::to_string(s.current->job_id) : "-";
    const std::string start = s.start ? clock_text(s.start) : s.eta ? "~" + clock_text(s.eta) : "-";
    const std::string end = s.end ? clock_text(s.end) : s.expected_end ? "~" + clock_text(s.expected_end) : "-";
    snprintf(line, sizeof line, "  %-*s  %-9s  %-10s  %-14s  %-14s  %s\n", static_cast<int>(width), s.stage.c_str(),
             job.c_str(), s.state.c_str(), start.c_str(), end.c_str(), s.after.empty() ? "-" : after_text(s.after).c_str());
    out += line;
    std::string detail = s.detail;
    if (s.eta && (s.state == "pending" || s.state == "waiting")) detail += "; ETA " + in_text(s.eta, now);
    out += "  " + std::string(width, ' ') + "  " + escape_controls(detail) + "\n";
  }
  out += "(~: expected, from time limits and mlsched why's model)\n";
  return out;
}

std::string pipeline_chain_text(const PipelineStatus& status, const std::string& stage) {
  std::string out = "pipeline " + status.id + ", stage " + stage;
  const StageStatus* self = nullptr;
  for (const auto& s : status.stages)
    if (s.stage == stage) self = &s;
  if (self) out += ": " + self->state + " (" + self->detail + ")";
  std::vector<std::string> next;
  for (const auto& s : status.stages) {
    for (const auto& e : s.after) {
      if (e.stage != stage) continue;
      std::string t = s.stage + " (after " + to_string(e.kind) + "): " + s.state;
      if (s.current) t += ", job " + std::to_string(s.current->job_id);
      next.push_back(t);
    }
  }
  if (next.empty()) return out + ". No stage waits for it";
  return out + ". After it: " + join(next, "; ") + ". A stage whose condition " + stage +
         " can no longer meet is cancelled by Slurm (DependencyNeverSatisfied), and so are the stages after that one";
}

// ==== recurring pipelines ========================================================

std::string to_string(Concurrency c) { return c == Concurrency::allow ? "allow" : "forbid"; }

namespace {

struct CronField {
  const char* name;
  int lo, hi;            // the values accepted (day of week 7 is Sunday, as 0)
  const char* const* names;  // 3-letter names, index + name_base is the value
  int name_base;
};

const char* const kMonthNames[] = {"jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec", nullptr};
const char* const kDayNames[] = {"mon", "tue", "wed", "thu", "fri", "sat", "sun", nullptr};

// One field: "*", a name, or digits with '-' and ',' (a list of values and ranges),
// then an optional "/step" (2 to the field's size - 1, as scrontab's).
std::string cron_field_problem(std::string_view text, const CronField& f) {
  std::string_view body = text, step;
  if (const size_t slash = text.find('/'); slash != std::string_view::npos) {
    body = text.substr(0, slash);
    step = text.substr(slash + 1);
  }
  if (body.empty()) return std::string(f.name) + " \"" + std::string(text) + "\" is empty before the /";
  if (body == "*") {
  } else if (std::isalpha(static_cast<unsigned char>(body[0]))) {
    bool known = false;
    for (int i = 0; f.names && f.names[i]; ++i) known = known || lowercase(body) == f.names[i];
    if (!known)
      return f.names ? std::string(f.name) + " \"" + std::string(body) + "\" is not a 3-letter " + f.name + " name"
                     : std::string(f.name) + " \"" + std::string(body) + "\" is not a number";
  } else {
    for (const auto& item : split(body, ',')) {
      const size_t dash = item.find('-');
      const std::string a = item.substr(0, dash), b = dash == std::string::npos ? a : item.substr(dash + 1);
      const auto x = parse_uint(a), y = parse_uint(b);
      if (!x || !y)
        return std::string(f.name) + " \"" + std::string(body) + "\" is not a number, a range a-b or a list of them";
      for (uint64_t v : {*x, *y})
        if (v < static_cast<uint64_t>(f.lo) || v > static_cast<uint64_t>(f.hi))
          return std::string(f.name) + " " + std::to_string(v) + " is out of range (" + std::to_string(f.lo) + "-" +
                 std::to_string(f.hi) + ")";
      if (*x > *y) return std::string(f.name) + " range " + item + " runs backwards";
    }
  }
  if (!step.empty() || text.find('/') != std::string_view::npos) {
    const auto n = parse_uint(step);
    const int size = f.hi + 1;
    if (!n || *n < 2 || *n >= static_cast<uint64_t>(size))
      return std::string(f.name) + " step \"/" + std::string(step) + "\" must be a number from 2 to " +
             std::to_string(size - 1);
  }
  return "";
}

}  // namespace

std::string cron_schedule_problem(std::string_view schedule) {
  const std::string s = trim(schedule);
  if (s.empty()) return "is empty; a cron schedule has five fields, e.g. \"0 2 * * *\" (02:00 every day)";
  if (s.size() > 128) return "is longer than 128 characters";
  if (s[0] == '@') {
    static const std::vector<std::string> words = {"@hourly", "@daily", "@midnight", "@weekly", "@monthly", "@yearly",
                                                   "@annually"};
    if (std::find(words.begin(), words.end(), lowercase(s)) != words.end()) return "";
    std::string msg = "is not one of " + join(words, ", ");
    if (auto near = closest_match(lowercase(s), words)) msg += "; did you mean " + *near + "?";
    return msg;
  }
  std::vector<std::string> fields;
  for (const auto& w : split(s, ' '))
    for (const auto& x : split(w, '\t'))
      if (!x.empty()) fields.push_back(x);
  if (fields.size() != 5)
    return "has " + std::to_string(fields.size()) +
           " fields; a cron schedule has five: minute hour day-of-month month day-of-week (e.g. \"0 2 * * *\")";
  static const CronField kFields[] = {{"minute", 0, 59, nullptr, 0},
                                      {"hour", 0, 23, nullptr, 0},
                                      {"day of month", 1, 31, nullptr, 0},
                                      {"month", 1, 12, kMonthNames, 1},
                                      {"day of week", 0, 7, kDayNames, 1}};
  for (size_t i = 0; i < 5; ++i)
    if (const std::string e = cron_field_problem(fields[i], kFields[i]); !e.empty()) return e;
  return "";
}

bool crontab_safe_path(std::string_view path) {
  if (path.empty() || path[0] != '/' || path.size() > 1024) return false;
  for (char c : path)
    if (!std::isalnum(static_cast<unsigned char>(c)) && !std::strchr("/._-+,@:", c)) return false;
  return true;
}

std::string schedule_job_name(std::string_view name) { return std::string(name) + "/schedule"; }

namespace {
std::string block_begin(std::string_view name) { return "# mlsched pipeline " + std::string(name) + " begin"; }
std::string block_end(std::string_view name) { return "# mlsched pipeline " + std::string(name) + " end"; }
}  // namespace

std::string schedule_block(const PipelineSpec& spec, const ScheduleEntry& e) {
  std::string b = block_begin(spec.name) + " (written by `mlsched pipeline submit`; remove it with `mlsched pipeline unschedule " +
                  spec.name + "`)\n";
  b += "#SCRON --job-name=" + schedule_job_name(spec.name) + "\n";
  // The cron job only submits the stages (a few sbatch calls): one CPU, minutes.
  b += "#SCRON --ntasks=1 --cpus-per-task=1 --time=10\n";
  b += "#SCRON --output=" + e.log + " --open-mode=append\n";
  std::string cmd = e.tool + " pipeline fire --name " + spec.name + " " + e.file;
  std::string env;
  if (!e.path_env.empty()) env += " PATH=" + e.path_env;
  if (!e.slurm_conf.empty()) env += " SLURM_CONF=" + e.slurm_conf;
  if (!env.empty()) cmd = "/usr/bin/env" + env + " " + cmd;
  b += trim(spec.schedule) + " " + cmd + "\n";
  b += block_end(spec.name) + "\n";
  return b;
}

std::string crontab_without(std::string_view crontab, std::string_view name, bool* found) {
  const std::string begin = block_begin(name), end = block_end(name);
  std::string out;
  bool inside = false, seen = false;
  for (const auto& line : split(crontab, '\n')) {
    // scrontab -l shows a disabled entry's lines behind "#DISABLED: ".
    std::string_view l = line;
    if (starts_with(l, "#DISABLED: ")) l.remove_prefix(11);
    if (!inside && (l == begin || starts_with(l, begin + " "))) {
      inside = seen = true;
      continue;
    }
    if (inside) {
      if (l == end) inside = false;
      continue;
    }
    out += line + "\n";
  }
  // split() gives a last empty piece for text that ends with a newline.
  while (out.size() >= 2 && out.compare(out.size() - 2, 2, "\n\n") == 0) out.pop_back();
  if (out == "\n") out.clear();
  if (found) *found = seen;
  return out;
}

namespace {
constexpr std::string_view kNoteTag = "pipeline-schedule";
}

std::string encode_schedule_note(const ScheduleNote& n) {
  std::string s = std::string(kNoteTag) + ";concurrency=" + to_string(n.concurrency) +
                  ";submitted=" + std::to_string(n.submitted) + ";skipped=" + std::to_string(n.skipped) +
                  ";failed=" + std::to_string(n.failed);
  if (n.last) s += ";last=" + std::to_string(static_cast<long long>(n.last)) + ";outcome=" + n.last_outcome;
  if (!n.last_run.empty()) s += ";run=" + n.last_run;
  return s;
}

std::optional<ScheduleNote> decode_schedule_note(std::string_view comment) {
  if (comment.size() > 512) return std::nullopt;
  const auto parts = split(trim(comment), ';');
  if (parts.empty() || parts[0] != kNoteTag) return std::nullopt;
  ScheduleNote n;
  for (size_t i = 1; i < parts.size(); ++i) {
    const size_t eq = parts[i].find('=');
    if (eq == std::string::npos) return std::nullopt;
    const std::string key = parts[i].substr(0, eq), value = parts[i].substr(eq + 1);
    auto count = [&](uint32_t& into) {
      const auto v = parse_uint(value);
      if (!v || *v > UINT32_MAX) return false;
      into = static_cast<uint32_t>(*v);
      return true;
    };
    bool ok = true;
    if (key == "concurrency") {
      if (value == "forbid") n.concurrency = Concurrency::forbid;
      else if (value == "allow") n.concurrency = Concurrency::allow;
      else ok = false;
    } else if (key == "submitted") ok = count(n.submitted);
    else if (key == "skipped") ok = count(n.skipped);
    else if (key == "failed") ok = count(n.failed);
    else if (key == "last") {
      const auto v = parse_uint(value);
      ok = v && *v < (1ull << 40);
      if (ok) n.last = static_cast<time_t>(*v);
    } else if (key == "outcome") {
      ok = value == "submitted" || value == "skipped" || value == "failed";
      n.last_outcome = value;
    } else if (key == "run") {
      ok = value.size() <= kMaxPipelineIdBytes && is_pipeline_name(value.substr(0, std::min(value.size(), kMaxPipelineNameBytes)));
      n.last_run = value;
    }
    // Unknown keys: written by a newer mlsched, kept out of the way.
    if (!ok) return std::nullopt;
  }
  return n;
}

std::string format_schedule_note(const ScheduleNote& n, time_t now) {
  std::string s;
  if (!n.last) {
    s = "has not run yet";
  } else {
    s = "last time " + clock_text(n.last) + " (" + format_duration(std::max<time_t>(0, now - n.last)) + " ago): ";
    if (n.last_outcome == "submitted") s += "submitted run " + (n.last_run.empty() ? std::string("?") : n.last_run);
    else if (n.last_outcome == "skipped")
      s += "skipped, run " + (n.last_run.empty() ? std::string("?") : n.last_run) + " was still going (concurrency forbid)";
    else s += "failed (the log says why)";
  }
  s += "; " + std::to_string(n.submitted) + " run" + (n.submitted == 1 ? "" : "s") + " submitted, " +
       std::to_string(n.skipped) + " skipped, " + std::to_string(n.failed) + " failed so far";
  return s;
}

std::string schedule_log_file(std::string_view name) { return std::string(name) + ".schedule.log"; }
std::string schedule_state_file(std::string_view name) { return std::string(name) + ".schedule.state"; }

bool is_run_of(std::string_view pipeline_id, std::string_view name) {
  if (pipeline_id.size() != name.size() + 7 || !starts_with(pipeline_id, name) || pipeline_id[name.size()] != '-')
    return false;
  for (char c : pipeline_id.substr(name.size() + 1))
    if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

}  // namespace mlsched
