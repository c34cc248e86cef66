#include <csignal>

#include "core/directives.h"
#include "core/job_record.h"
#include "suites.h"

using namespace mlsched;

static std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& e : v) s += e + "\n";
  return s;
}

START_TEST(reads_script_and_comment) {
  const char* script =
      "#!/bin/bash\n"
      "#SBATCH -N 2 --gres=gpu:8\n"
      "#MLSCHED type=training gpu-type=h100,a100   # our directives\n"
      "#MLSCHED locality=nvlink-domain\n"
      "\n"
      "srun train.py\n";
  RawDirectives r = read_directives(script, "mlsched: max-restarts=5");
  ck_assert_msg(r.errors.empty(), "%s", joined(r.errors).c_str());
  ck_assert_int_eq(r.values.size(), 4);
  ck_assert_string_eq(r.values.at("gpu-type").value.c_str(), "h100,a100");
  ck_assert_int_eq(r.values.at("locality").origin.line, 4);
  ck_assert_string_eq(r.values.at("max-restarts").origin.describe().c_str(), "--comment");
}
END_TEST

START_TEST(no_directives_means_untouched) {
  RawDirectives r = read_directives("#!/bin/bash\n#SBATCH -N1\nhostname\n", "just a note");
  ck_assert(!r.any());
  // #MLSCHEDULER is not ours; "mlsched:" elsewhere in a comment is not ours either.
  r = read_directives("#MLSCHEDULER x=1\n", "see mlsched: docs");
  ck_assert(!r.any());
}
END_TEST

START_TEST(directives_after_first_command_are_noted) {
  RawDirectives r = read_directives("#!/bin/bash\nhostname\n#MLSCHED type=sweep\n", "");
  ck_assert(r.values.empty());
  ck_assert_int_eq(r.notes.size(), 1);
  ck_assert_contains(r.notes[0], "line 3: #MLSCHED after the script's first command is ignored");
}
END_TEST

START_TEST(grammar_errors_name_line_and_fix) {
  RawDirectives r = read_directives(
      "#!/bin/bash\n#MLSCHED gpu_type=h100\n#MLSCHED walltime=5\n#MLSCHED preemptible\n"
      "#MLSCHED type=\n#MLSCHED type=sweep\n",
      "mlsched: type=training");
  const std::string all = joined(r.errors);
  ck_assert_contains(all, "line 2: unknown key 'gpu_type'; did you mean 'gpu-type'?");
  ck_assert_contains(all, "line 3: unknown key 'walltime' (known keys: type, gpu-type");
  ck_assert_contains(all, "line 4: 'preemptible' is not key=value");
  ck_assert_contains(all, "line 5: type= has no value");
  ck_assert_contains(all, "--comment: type is given twice (also at line 6); keep one");
}
END_TEST

static ResolvedDirectives resolve(const char* words, const Config& c = Config{}) {
  std::string script = std::string("#!/bin/bash\n#MLSCHED ") + words + "\n";
  return resolve_directives(read_directives(script, ""), c);
}

START_TEST(defaults_come_from_job_type) {
  ResolvedDirectives r = resolve("type=interactive");
  ck_assert(r.directives.has_value());
  ck_assert(r.directives->locality == Locality::node);
  ck_assert(!r.directives->preemptible);
  r = resolve("gpu-type=h100");
  ck_assert(r.directives->type == JobType::training);
  ck_assert(r.directives->preemptible);
  ck_assert_int_eq(r.directives->checkpoint_signal, SIGUSR1);
  ck_assert(r.directives->was_given("gpu-type"));
  ck_assert(!r.directives->was_given("type"));
}
END_TEST

START_TEST(bad_values_name_key_and_fix) {
  struct Case {
    const char* words;
    const char* message;
  } cases[] = {
      {"type=batch", "line 2: type=batch is not a job type; use one of training, inference, sweep, interactive"},
      {"locality=rack", "locality=rack is not a locality; use one of node, nvlink-domain, switch, any"},
      {"locality-mode=loose", "locality-mode=loose must be strict"},
      {"checkpoint-signal=KILL", "checkpoint-signal=KILL is not a signal a job can catch"},
      {"checkpoint-grace=soon", "checkpoint-grace=soon is not a duration"},
      {"checkpoint-interval=x", "checkpoint-interval=x is not a duration"},
      {"preemptible=maybe", "preemptible=maybe must be yes or no"},
      {"max-restarts=many", "max-restarts=many is not a whole number"},
      {"max-restarts=1000", "max-restarts=1000 is more than this cluster allows (100)"},
      {"gpu-type=h100,,a100", "gpu-type=h100,,a100 has an empty entry"},
      {"gpu-type=h100,H100", "lists H100 twice"},
      {"type=sweep preemptible=no", "preemptible=no is not allowed: sweep jobs must be preemptible on this cluster"},
  };
  for (const auto& c : cases) {
    ResolvedDirectives r = resolve(c.words);
    ck_assert_msg(!r.directives.has_value(), "accepted: %s", c.words);
    ck_assert_contains(joined(r.errors), c.message);
  }
}
END_TEST

START_TEST(grace_is_capped_with_a_note) {
  Config c;
  c.max_checkpoint_grace = 300;
  ResolvedDirectives r = resolve("checkpoint-grace=15m", c);
  ck_assert(r.directives.has_value());
  ck_assert_int_eq(r.directives->checkpoint_grace, 300);
  ck_assert_contains(joined(r.notes), "checkpoint-grace=15m capped to 300 seconds");
}
END_TEST

START_TEST(stored_form_round_trips) {
  ResolvedDirectives r = resolve(
      "type=training gpu-type=h100,a100 locality=nvlink-domain locality-mode=strict checkpoint-signal=USR2 "
      "checkpoint-grace=300 preemptible=yes max-restarts=5");
  ck_assert(r.directives.has_value());
  const std::string stored = std::string(kStoredPrefix) + " " + r.directives->to_string();
  ck_assert_string_eq(stored.c_str(),
                   "mlsched: type=training gpu-type=h100,a100 locality=nvlink-domain locality-mode=strict "
                   "checkpoint-signal=USR2 checkpoint-grace=300 checkpoint-interval=0 preemptible=yes "
                   "max-restarts=5");
  auto back = parse_stored_directives(stored + "; admin note");
  ck_assert(back.has_value());
  ck_assert_int_eq(back->gpu_types.size(), 2);
  ck_assert(back->locality_mode == LocalityMode::strict);
  ck_assert_int_eq(back->checkpoint_signal, SIGUSR2);
  ck_assert_int_eq(back->max_restarts, 5);
  ck_assert(!parse_stored_directives("an admin's note"));
  ck_assert(!parse_stored_directives("mlsched: type=nonsense"));
}
END_TEST

START_TEST(hetjob_components_take_their_own_lines) {
  const std::string script =
      "#!/bin/bash\n#SBATCH -N1 --gres=gpu:8\n#MLSCHED gpu-type=h100 locality=node\n"
      "#SBATCH hetjob\n#SBATCH -N2 --gres=gpu:4\n#MLSCHED gpu-type=a100\n"
      "#SBATCH packjob\n#SBATCH -N1\n\nsrun x\n#MLSCHED type=sweep\n";
  RawDirectives c0 = read_directives(script, "", 0u);
  ck_assert(c0.errors.empty());
  ck_assert_string_eq(c0.values.at("gpu-type").value, "h100");
  ck_assert_string_eq(c0.values.at("locality").value, "node");
  RawDirectives c1 = read_directives(script, "", 1u);
  ck_assert(c1.errors.empty());
  ck_assert_string_eq(c1.values.at("gpu-type").value, "a100");
  ck_assert(!c1.values.count("locality"));
  ck_assert_int_eq(c1.values.at("gpu-type").origin.line, 6);
  RawDirectives c2 = read_directives(script, "", 2u);
  ck_assert(c2.values.empty());
  ck_assert_contains(c2.notes.at(0), "line 11: #MLSCHED after the script's first command is ignored");
  // As Slurm 22.05 hands component 1 its script: the shebang and its own part only.
  RawDirectives own = read_directives("#!/bin/bash\n#SBATCH -N2 --gres=gpu:4\n#MLSCHED gpu-type=a100\n", "", 1u);
  ck_assert(own.errors.empty());
  ck_assert_string_eq(own.values.at("gpu-type").value, "a100");
  // The same script as a plain job: every line counts, and the clash is reported.
  RawDirectives plain = read_directives(script, "");
  ck_assert_contains(plain.errors.at(0), "line 6: gpu-type is given twice (also at line 3)");
}
END_TEST

// One table of what mlsched stores on a job: no mark may share a name with a
// directive (parse_stored_directives would read it as one), and the priority
// plugin's marks read back typed from the text it writes.
START_TEST(marks_have_one_table_apart_from_directives) {
  for (std::string_view m : mark_keys())
    for (const auto& d : directive_keys()) ck_assert_msg(m != d, "mark %s is also a directive", d.c_str());
  std::string text = "mlsched: type=training checkpoint-interval=600; site note";
  text = with_stored_token(text, mark_key::attained_gpu_seconds, std::string("5400"));
  text = with_stored_token(text, mark_key::first_submit, std::string("1764770000"));
  text = with_stored_token(text, mark_key::borrowing, std::string("yes"));
  const JobMarks m = read_marks(text);
  ck_assert_double_eq(m.attained_gpu_seconds, 5400);
  ck_assert_int_eq(m.first_submit, 1764770000);
  ck_assert_str_eq(m.borrowing.value().c_str(), "yes");
  ck_assert_uint_eq(parse_stored_directives(text)->checkpoint_interval, 600);
  const JobMarks none = read_marks("");
  ck_assert(!none.borrowing && none.attained_gpu_seconds == 0 && none.first_submit == 0);
}
END_TEST

Suite* directives_suite() {
  Suite* s = suite_create("directives");
  TCase* tc = tcase_create("directives");
  tcase_add_test(tc, reads_script_and_comment);
  tcase_add_test(tc, no_directives_means_untouched);
  tcase_add_test(tc, directives_after_first_command_are_noted);
  tcase_add_test(tc, grammar_errors_name_line_and_fix);
  tcase_add_test(tc, defaults_come_from_job_type);
  tcase_add_test(tc, bad_values_name_key_and_fix);
  tcase_add_test(tc, grace_is_capped_with_a_note);
  tcase_add_test(tc, stored_form_round_trips);
  tcase_add_test(tc, hetjob_components_take_their_own_lines);
  tcase_add_test(tc, marks_have_one_table_apart_from_directives);
  suite_add_tcase(s, tc);
  return s;
}
