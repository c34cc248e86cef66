// The one codec of what mlsched stores on a job (core/job_record.h): round trip,
// unknown keys, versions, and the per-job cache the plugins read through.
#include <string>

#include "core/job_record.h"
#include "core/preempt.h"
#include "suites.h"

using namespace mlsched;

namespace {
const std::string kStored =
    "mlsched: type=training gpu-type=h100 locality=nvlink-domain locality-mode=strict checkpoint-signal=USR1 "
    "checkpoint-grace=300 checkpoint-interval=600 preemptible=yes max-restarts=5";
}

// Every field written through the codec reads back typed, and re-encoding an
// untouched record gives the same text, byte for byte (what scontrol shows).
START_TEST(record_round_trips) {
  JobRecord r = decode_job_record(kStored + "; site note");
  ck_assert(r.has_part);
  ck_assert_uint_eq(r.version, kJobRecordVersion);
  ck_assert_string_eq(r.encode(), kStored + "; site note");
  r.set(mark_key::borrowing, std::string("yes"));
  r.set(mark_key::attained_gpu_seconds, std::string("5400"));
  r.set(mark_key::first_submit, std::string("1764770000"));
  const std::string text = with_preemption_recorded(r.encode(), 812, 1764780000, 1200);
  const JobRecord back = decode_job_record(text);
  ck_assert(back.directives.has_value());
  ck_assert_uint_eq(back.directives->checkpoint_interval, 600);
  ck_assert_uint_eq(back.directives->max_restarts, 5);
  ck_assert_string_eq(back.marks.borrowing.value(), "yes");
  ck_assert_double_eq(back.marks.attained_gpu_seconds, 5400);
  ck_assert_int_eq(back.marks.first_submit, 1764770000);
  ck_assert_uint_eq(back.preemptions.times, 1);
  ck_assert_int_eq(back.preemptions.last_at, 1764780000);  // UTC epoch seconds, not local text
  ck_assert_uint_eq(back.preemptions.last_by, 812);
  ck_assert_double_eq(back.preemptions.lost_gpu_seconds, 1200);
  ck_assert_string_eq(back.encode(), text);
  ck_assert_contains(text, "; site note");
  ck_assert(back.unknown_keys().empty());
  // Nothing stored, nothing decoded; and an empty part gives the note back.
  const JobRecord none = decode_job_record("an admin's note");
  ck_assert(!none.has_part && !none.directives && !none.marks.borrowing);
  ck_assert_string_eq(none.encode(), "an admin's note");
  JobRecord only = decode_job_record("mlsched: borrowing=no; note");
  ck_assert(!only.directives);
  only.set(mark_key::borrowing, std::nullopt);
  ck_assert_string_eq(only.encode(), "note");
}
END_TEST

// Keys this version does not know (a later version's, or a site's) are kept where
// they were through every write, and do not stop the directives from reading.
START_TEST(unknown_keys_are_preserved) {
  const std::string text = kStored + " gpu-memory=80g site-tag=x7 borrowing=no";
  JobRecord r = decode_job_record(text);
  ck_assert(r.directives.has_value());
  ck_assert_uint_eq(r.unknown_keys().size(), 2);
  ck_assert_string_eq(r.unknown_keys()[0], "gpu-memory");
  ck_assert_string_eq(r.unknown_keys()[1], "site-tag");
  r.set(mark_key::borrowing, std::string("yes"));
  ck_assert_string_eq(r.encode(), kStored + " gpu-memory=80g site-tag=x7 borrowing=yes");
  const std::string after = with_preemption_recorded(r.encode(), 9, 100, 0);
  ck_assert_contains(after, " gpu-memory=80g site-tag=x7 ");
  ck_assert_string_eq(decode_job_record(after).get("site-tag").value(), "x7");
}
END_TEST

// Version 1 writes no `record=` token (the text of jobs already in slurmctld's
// state stays valid); a later version's record keeps its version and its keys
// through an older writer, and what this version knows is still read.
START_TEST(versions_are_read_and_kept) {
  ck_assert_int_eq(kJobRecordVersion, 1);
  ck_assert(kStored.find("record=") == std::string::npos);
  ck_assert_uint_eq(decode_job_record(kStored).version, 1);
  const std::string newer = "mlsched: record=2 type=sweep gpu-type=a100 elastic-min=2";
  JobRecord r = decode_job_record(newer);
  ck_assert_uint_eq(r.version, 2);
  ck_assert(r.directives.has_value() && r.directives->type == JobType::sweep);
  r.set(mark_key::borrowing, std::string("yes"));
  const JobRecord back = decode_job_record(r.encode());
  ck_assert_uint_eq(back.version, 2);
  ck_assert_string_eq(back.get("elastic-min").value(), "2");
  ck_assert_string_eq(r.encode(), newer + " borrowing=yes");
  // A version that is not a number is kept as written and read as version 1.
  ck_assert_uint_eq(decode_job_record("mlsched: record=x type=training").version, 1);
}
END_TEST

// A job's record is decoded once per change of its comment, and the cache stays
// within its bound however many jobs pass through it.
START_TEST(cache_decodes_once_per_change) {
  JobRecordCache cache(3);
  auto a = cache.get(10, kStored);
  auto b = cache.get(10, kStored);
  ck_assert(a == b);
  ck_assert_uint_eq(cache.decodes(), 1);
  ck_assert_uint_eq(cache.hits(), 1);
  const std::string marked = with_stored_token(kStored, mark_key::borrowing, std::string("yes"));
  auto c = cache.get(10, marked);
  ck_assert_uint_eq(cache.decodes(), 2);
  ck_assert_string_eq(c->marks.borrowing.value(), "yes");
  ck_assert(!a->marks.borrowing);  // a record handed out earlier is not changed under its holder
  for (uint32_t id = 11; id < 20; ++id) cache.get(id, kStored);
  ck_assert_uint_eq(cache.size(), 3);
  ck_assert_uint_eq(c->directives->max_restarts, 5);  // still valid after its entry was dropped
  // The least recently used entry goes first: 17..19 stay; 10 is decoded again.
  const uint64_t before = cache.decodes();
  cache.get(19, kStored);
  ck_assert_uint_eq(cache.decodes(), before);
  cache.get(10, marked);
  ck_assert_uint_eq(cache.decodes(), before + 1);
  cache.forget(10);
  ck_assert_uint_eq(cache.size(), 2);
  ck_assert_uint_eq(JobRecordCache().capacity(), JobRecordCache::kDefaultCapacity);
}
END_TEST

// Which ends of a run are followed by another run, and what that run leaves on the
// job: its GPU-seconds added to the attained service, the first submit time kept.
START_TEST(run_end_marks_a_job_that_runs_again) {
  ck_assert(!runs_again({}));  // completed, failed, cancelled, timed out
  RunEndState s;
  s.preempted = true;
  ck_assert(runs_again(s));
  s = {};
  s.node_failed = true;
  ck_assert(runs_again(s));
  s = {};
  s.requeue_flag = true;
  ck_assert(runs_again(s));
  s = {};
  s.pending = true;
  ck_assert(runs_again(s));

  std::string text = with_run_end_recorded(kStored + "; note", 3600.4, 1764770000);
  JobRecord r = decode_job_record(text);
  ck_assert_double_eq(r.marks.attained_gpu_seconds, 3600);
  ck_assert_int_eq(r.marks.first_submit, 1764770000);
  ck_assert_contains(text, "; note");
  // The second run adds to the first and keeps the first submit time.
  text = with_run_end_recorded(text, 1800, 1764790000);
  r = decode_job_record(text);
  ck_assert_double_eq(r.marks.attained_gpu_seconds, 5400);
  ck_assert_int_eq(r.marks.first_submit, 1764770000);
  // A run of less than half a GPU-second adds nothing; no submit time, no mark.
  ck_assert_string_eq(with_run_end_recorded(kStored, 0.2, 0), kStored);
}
END_TEST

Suite* job_record_suite() {
  Suite* s = suite_create("job_record");
  TCase* tc = tcase_create("job_record");
  tcase_add_test(tc, record_round_trips);
  tcase_add_test(tc, unknown_keys_are_preserved);
  tcase_add_test(tc, versions_are_read_and_kept);
  tcase_add_test(tc, cache_decodes_once_per_change);
  tcase_add_test(tc, run_end_marks_a_job_that_runs_again);
  suite_add_tcase(s, tc);
  return s;
}
