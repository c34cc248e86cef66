// Checkpoint records and fencing behind `mlsched run` / `mlsched ckpt done`, on a
// real temporary directory: resume from the latest complete checkpoint only, and a
// stale copy of the job (lower restart count) can neither start nor mark.
#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>

#include <sys/stat.h>
#include <unistd.h>

#include "core/checkpoint.h"
#include "suites.h"

using namespace mlsched;

namespace {

std::string temp_dir() {
  char pattern[] = "/tmp/mlsched-ckpt-test-XXXXXX";
  char* d = mkdtemp(pattern);
  ck_assert_ptr_nonnull(d);
  return d;
}

void touch(const std::string& path, const std::string& text = "weights") {
  std::ofstream(path) << text;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void remove_tree(const std::string& dir) {
  const std::string cmd = "rm -rf '" + dir + "'";
  ck_assert_int_eq(system(cmd.c_str()), 0);
}

}  // namespace

START_TEST(record_round_trips_and_rejects_garbage) {
  CheckpointRecord r{3, 1700000000, "step-40 with space"};
  auto back = parse_checkpoint_record(r.to_string());
  ck_assert(back.has_value());
  ck_assert_uint_eq(back->restart, 3);
  ck_assert_int_eq(back->time, 1700000000);
  ck_assert_string_eq(back->path, "step-40 with space");
  ck_assert(!parse_checkpoint_record("mlsched-checkpoint restart=1 time=5").has_value());    // no path
  ck_assert(!parse_checkpoint_record("mlsched-checkpoint restart=x time=5 path=a").has_value());
  ck_assert(!parse_checkpoint_record("mlsched-checkpoint time=5 path=a").has_value());      // no restart
  ck_assert(!parse_checkpoint_record("mlsched-checkpoint restart=1 time=5 path=").has_value());
  ck_assert(!parse_checkpoint_record("mlsched-checkpoint restart=1 tim").has_value());      // cut short
  ck_assert(!parse_checkpoint_record("").has_value());
}
END_TEST

START_TEST(first_start_resumes_from_nothing_then_from_latest_complete) {
  const std::string dir = temp_dir() + "/job/42";  // created by begin_run
  auto first = begin_run(dir, 0, getuid());
  ck_assert_msg(first.ok, "%s", first.error.c_str());
  ck_assert_string_eq(first.resume_from, "");
  touch(dir + "/step-10");
  ck_assert_string_eq(mark_checkpoint_complete(dir, 0, "step-10", 100, getuid()), "");
  touch(dir + "/step-20");
  ck_assert_string_eq(mark_checkpoint_complete(dir, 0, "step-20", 200, getuid()), "");
  // Written but never marked: a checkpoint interrupted half-way.
  touch(dir + "/step-30", "half");
  auto second = begin_run(dir, 1, getuid());
  ck_assert_msg(second.ok, "%s", second.error.c_str());
  ck_assert_string_eq(second.resume_from, dir + "/step-20");
  ck_assert_contains(slurp(latest_file(dir)), "restart=0 time=200 path=step-20");
  remove_tree(dir.substr(0, dir.find("/job/42")));
}
END_TEST

START_TEST(marking_a_missing_checkpoint_is_refused) {
  const std::string dir = temp_dir();
  ck_assert(begin_run(dir, 0, getuid()).ok);
  ck_assert_contains(mark_checkpoint_complete(dir, 0, "step-99", 1, getuid()), "does not exist");
  ck_assert_contains(mark_checkpoint_complete(dir, 0, "", 1, getuid()), "no checkpoint path");
  ck_assert_contains(mark_checkpoint_complete("", 0, "x", 1, getuid()), "mlsched run");
  ck_assert_int_ne(access(latest_file(dir).c_str(), F_OK), 0);  // nothing recorded
  remove_tree(dir);
}
END_TEST

START_TEST(stale_copy_can_neither_start_nor_mark) {
  const std::string dir = temp_dir();
  ck_assert(begin_run(dir, 0, getuid()).ok);  // the first allocation...
  ck_assert(begin_run(dir, 1, getuid()).ok);  // ...declared dead; the job runs again
  touch(dir + "/old-run");
  // The first allocation's process is still alive and reports a checkpoint.
  const std::string why = mark_checkpoint_complete(dir, 0, "old-run", 50, getuid());
  ck_assert_contains(why, "refused: a newer run of this job (restart 1)");
  ck_assert_int_ne(access(latest_file(dir).c_str(), F_OK), 0);
  auto restart = begin_run(dir, 0, getuid());
  ck_assert(!restart.ok);
  ck_assert_contains(restart.error, "stale");
  // The current run marks normally; a later one raises the fence again.
  touch(dir + "/new-run");
  ck_assert_string_eq(mark_checkpoint_complete(dir, 1, "new-run", 60, getuid()), "");
  ck_assert(begin_run(dir, 2, getuid()).ok);
  remove_tree(dir);
}
END_TEST

START_TEST(record_of_newer_run_is_never_replaced_by_older) {
  // Fence file lost (e.g. restored from a backup) but LATEST says restart 3.
  const std::string dir = temp_dir();
  touch(dir + "/a");
  CheckpointRecord newer{3, 10, "a"};
  touch(latest_file(dir), newer.to_string());
  ck_assert_contains(mark_checkpoint_complete(dir, 2, "a", 20, getuid()), "newer run (restart 3)");
  remove_tree(dir);
}
END_TEST

START_TEST(vanished_or_unreadable_record_starts_from_scratch_with_a_note) {
  const std::string dir = temp_dir();
  CheckpointRecord gone{0, 10, "deleted"};
  touch(latest_file(dir), gone.to_string());
  auto r = begin_run(dir, 1, getuid());
  ck_assert(r.ok);
  ck_assert_string_eq(r.resume_from, "");
  ck_assert_contains(r.note, "is gone");
  touch(latest_file(dir), "garbage");
  r = begin_run(dir, 2, getuid());
  ck_assert(r.ok);
  ck_assert_contains(r.note, "unreadable");
  remove_tree(dir);
}
END_TEST

// ==== hostile directories (issue: a shared, sticky work directory) ==============
// Another user's directory is simulated by asking for an owner other than us: the
// checks compare the owner with the one asked for, whoever runs the test.

START_TEST(directory_of_another_user_is_refused) {
  const std::string dir = temp_dir();
  const uid_t other = getuid() + 1;
  auto r = begin_run(dir, 0, other);
  ck_assert(!r.ok);
  ck_assert_contains(r.error, "refusing to use a directory another user controls");
  ck_assert_contains(mark_checkpoint_complete(dir, 0, "x", 1, other), "another user controls");
  auto latest = read_latest_checkpoint(dir, other);
  ck_assert(!latest.record);
  ck_assert_contains(latest.problem, "another user controls");
  remove_tree(dir);
}
END_TEST

START_TEST(directory_others_may_write_or_replace_is_refused) {
  const std::string top = temp_dir();
  const std::string dir = top + "/ckpt";
  ck_assert(begin_run(dir, 0, getuid()).ok);
  ck_assert_int_eq(chmod(dir.c_str(), 0777), 0);
  auto r = begin_run(dir, 1, getuid());
  ck_assert(!r.ok);
  ck_assert_contains(r.error, "writable by other users (mode 777)");
  ck_assert_int_eq(chmod(dir.c_str(), 0700), 0);
  // A parent anyone may write (and not sticky) lets another user swap the directory.
  ck_assert_int_eq(chmod(top.c_str(), 0777), 0);
  r = begin_run(dir, 1, getuid());
  ck_assert(!r.ok);
  ck_assert_contains(r.error, "writable by other users and not sticky");
  // A sticky one (as /tmp or a shared scratch) is fine.
  ck_assert_int_eq(chmod(top.c_str(), 01777), 0);
  r = begin_run(dir, 1, getuid());
  ck_assert_msg(r.ok, "%s", r.error.c_str());
  remove_tree(top);
}
END_TEST

START_TEST(symlinked_directory_and_latest_are_not_followed) {
  const std::string top = temp_dir();
  const std::string real = top + "/real", link = top + "/link";
  ck_assert(begin_run(real, 0, getuid()).ok);
  ck_assert_int_eq(symlink(real.c_str(), link.c_str()), 0);
  auto r = begin_run(link, 1, getuid());
  ck_assert(!r.ok);
  ck_assert_contains(r.error, "is a symlink or not a directory");
  // LATEST as a link to a record elsewhere: a planted "resume from my file".
  const std::string dir = top + "/job";
  ck_assert(begin_run(dir, 0, getuid()).ok);
  touch(top + "/step-777777");
  touch(top + "/foreign-latest", CheckpointRecord{0, 5, top + "/step-777777"}.to_string());
  ck_assert_int_eq(symlink((top + "/foreign-latest").c_str(), latest_file(dir).c_str()), 0);
  r = begin_run(dir, 1, getuid());
  ck_assert(!r.ok);
  ck_assert_contains(r.error, "LATEST is a symlink");
  ck_assert_string_eq(r.resume_from, "");
  remove_tree(top);
}
END_TEST

START_TEST(latest_must_name_a_path_inside_the_directory) {
  const std::string top = temp_dir();
  const std::string dir = top + "/job";
  ck_assert(begin_run(dir, 0, getuid()).ok);
  touch(top + "/outside");
  for (const std::string& path : {top + "/outside", std::string("../outside"), std::string("a/../../outside")}) {
    touch(latest_file(dir), CheckpointRecord{0, 5, path}.to_string());
    auto r = begin_run(dir, 1, getuid());
    ck_assert_msg(!r.ok, "resumed from %s", path.c_str());
    ck_assert_contains(r.error, "which is not inside");
    ck_assert_contains(mark_checkpoint_complete(dir, 1, path, 9, getuid()), "is not inside the checkpoint directory");
  }
  // A checkpoint inside that is a symlink to one outside is refused too.
  ck_assert_int_eq(symlink((top + "/outside").c_str(), (dir + "/step-1").c_str()), 0);
  touch(latest_file(dir), CheckpointRecord{0, 5, "step-1"}.to_string());
  auto r = begin_run(dir, 1, getuid());
  ck_assert(!r.ok);
  ck_assert_contains(r.error, "step-1 is a symlink");
  ck_assert_contains(mark_checkpoint_complete(dir, 1, "step-1", 9, getuid()), "step-1 is a symlink");
  // An absolute path inside the directory is kept relative to it.
  touch(dir + "/step-2");
  ck_assert_string_eq(mark_checkpoint_complete(dir, 1, dir + "/step-2", 9, getuid()), "");
  ck_assert_contains(slurp(latest_file(dir)), "path=step-2\n");
  remove_tree(top);
}
END_TEST

START_TEST(planted_temporary_names_are_never_written_through) {
  const std::string dir = temp_dir();
  const std::string victim = dir + "-victim";
  touch(victim, "precious");
  ck_assert(begin_run(dir, 0, getuid()).ok);
  // The names a writer that did not create exclusively would have used.
  for (const std::string name : {".mlsched-fence.tmp.", "LATEST.tmp.", ".LATEST.tmp.", ".mlsched-fence.tmp."})
    symlink(victim.c_str(), (dir + "/" + name + std::to_string(getpid())).c_str());
  ck_assert(begin_run(dir, 1, getuid()).ok);
  touch(dir + "/s");
  ck_assert_string_eq(mark_checkpoint_complete(dir, 1, "s", 3, getuid()), "");
  ck_assert_string_eq(slurp(victim), "precious");
  remove_tree(dir);
  unlink(victim.c_str());
}
END_TEST

START_TEST(reading_latest_is_bounded_and_never_blocks) {
  const std::string dir = temp_dir();
  // A FIFO: opening it for reading would wait for a writer forever.
  ck_assert_int_eq(mkfifo(latest_file(dir).c_str(), 0600), 0);
  auto latest = read_latest_checkpoint(dir, getuid());
  ck_assert(!latest.record);
  ck_assert_contains(latest.problem, "LATEST is not a regular file");
  unlink(latest_file(dir).c_str());
  // A link to an endless device.
  ck_assert_int_eq(symlink("/dev/zero", latest_file(dir).c_str()), 0);
  latest = read_latest_checkpoint(dir, getuid());
  ck_assert_contains(latest.problem, "LATEST is a symlink");
  unlink(latest_file(dir).c_str());
  // A huge regular file is not read into memory.
  touch(latest_file(dir), std::string(1 << 20, 'x'));
  latest = read_latest_checkpoint(dir, getuid());
  ck_assert_contains(latest.problem, "more than the 8192 expected");
  // A good record, and no record at all.
  touch(dir + "/step-3");
  touch(latest_file(dir), CheckpointRecord{2, 77, "step-3"}.to_string());
  latest = read_latest_checkpoint(dir, getuid());
  ck_assert(latest.record.has_value());
  ck_assert_int_eq(latest.record->time, 77);
  ck_assert_string_eq(latest.path, dir + "/step-3");
  unlink(latest_file(dir).c_str());
  latest = read_latest_checkpoint(dir, getuid());
  ck_assert(latest.missing);
  ck_assert(read_latest_checkpoint(dir + "/nope", getuid()).missing);
  remove_tree(dir);
}
END_TEST

// Compares whole strings (the result of a call may be a temporary).
void same_text(const std::string& got, const std::string& want) {
  ck_assert_msg(got == want, "got \"%s\", want \"%s\"", got.c_str(), want.c_str());
}

START_TEST(report_replaces_only_its_own_word_in_the_comment) {
  // Nothing there yet, a user's note, and an srun's directives: the rest is kept.
  same_text(with_checkpoint_report("", 1700000100), "mlsched-checkpoint=1700000100");
  same_text(with_checkpoint_report("sweep 7 of 20", 5), "sweep 7 of 20 mlsched-checkpoint=5");
  const std::string once = with_checkpoint_report("mlsched: gpu-type=h100  lr=3e-4", 5);
  same_text(once, "mlsched: gpu-type=h100  lr=3e-4 mlsched-checkpoint=5");
  same_text(with_checkpoint_report(once, 6), "mlsched: gpu-type=h100  lr=3e-4 mlsched-checkpoint=6");
  // A report in the middle (the user appended after it) is moved, not duplicated.
  same_text(with_checkpoint_report("a mlsched-checkpoint=5 b", 9), "a b mlsched-checkpoint=9");
  same_text(with_checkpoint_report("mlsched-checkpoint=5 b", 9), "b mlsched-checkpoint=9");
  // Only whole words count: a longer key or a mention inside a word is the user's.
  same_text(with_checkpoint_report("xmlsched-checkpoint=1 mlsched-checkpoints=2", 3),
            "xmlsched-checkpoint=1 mlsched-checkpoints=2 mlsched-checkpoint=3");

  // What job_submit/mlsched compares: the user's text exactly, trailing space included.
  for (const std::string c : {"", "note", "note ", " two  spaces ", "mlsched: type=training", "a\tb"}) {
    same_text(without_checkpoint_report(with_checkpoint_report(c, 42)), c);
    same_text(without_checkpoint_report(with_checkpoint_report(with_checkpoint_report(c, 1), 2)), c);
  }
  same_text(without_checkpoint_report("mlsched-checkpoint=1"), "");
  same_text(without_checkpoint_report("x mlsched-checkpoint=1 mlsched-checkpoint=2 y"), "x y");

  // Reading it back: the last report word; garbage is no report.
  ck_assert(checkpoint_report("note mlsched-checkpoint=1700000100") == std::optional<int64_t>(1700000100));
  ck_assert(checkpoint_report("mlsched-checkpoint=1 mlsched-checkpoint=2") == std::optional<int64_t>(2));
  ck_assert(!checkpoint_report(""));
  ck_assert(!checkpoint_report("note"));
  ck_assert(!checkpoint_report("mlsched-checkpoint="));
  ck_assert(!checkpoint_report("mlsched-checkpoint=-5"));
  ck_assert(!checkpoint_report("mlsched-checkpoint=12x"));
  ck_assert(!checkpoint_report("mlsched-checkpoint=99999999999999999999999"));
}
END_TEST

START_TEST(report_is_believed_only_within_the_current_run) {
  const int64_t start = 1700000000, now = start + 600;
  // Within [start, now]: taken as is.
  ck_assert(trusted_checkpoint_time(start + 100, start, now) == std::optional<int64_t>(start + 100));
  ck_assert(trusted_checkpoint_time(start, start, now) == std::optional<int64_t>(start));
  ck_assert(trusted_checkpoint_time(now, start, now) == std::optional<int64_t>(now));
  // Before this run's start: an earlier allocation's (the Comment survives a
  // requeue) or false. Ignored.
  ck_assert(!trusted_checkpoint_time(start - 1, start, now));
  ck_assert(!trusted_checkpoint_time(0, start, now));
  // In the future: no fresher than now.
  ck_assert(trusted_checkpoint_time(now + 86400, start, now) == std::optional<int64_t>(now));
  // No report, or a job that has not started.
  ck_assert(!trusted_checkpoint_time(std::nullopt, start, now));
  ck_assert(!trusted_checkpoint_time(start + 100, 0, now));
}
END_TEST

Suite* checkpoint_suite() {
  Suite* s = suite_create("checkpoint");
  TCase* tc = tcase_create("records");
  tcase_add_test(tc, record_round_trips_and_rejects_garbage);
  tcase_add_test(tc, first_start_resumes_from_nothing_then_from_latest_complete);
  tcase_add_test(tc, marking_a_missing_checkpoint_is_refused);
  tcase_add_test(tc, stale_copy_can_neither_start_nor_mark);
  tcase_add_test(tc, record_of_newer_run_is_never_replaced_by_older);
  tcase_add_test(tc, vanished_or_unreadable_record_starts_from_scratch_with_a_note);
  tcase_add_test(tc, directory_of_another_user_is_refused);
  tcase_add_test(tc, directory_others_may_write_or_replace_is_refused);
  tcase_add_test(tc, symlinked_directory_and_latest_are_not_followed);
  tcase_add_test(tc, latest_must_name_a_path_inside_the_directory);
  tcase_add_test(tc, planted_temporary_names_are_never_written_through);
  tcase_add_test(tc, reading_latest_is_bounded_and_never_blocks);
  tcase_add_test(tc, report_replaces_only_its_own_word_in_the_comment);
  tcase_add_test(tc, report_is_believed_only_within_the_current_run);
  suite_add_tcase(s, tc);
  return s;
}
