#include <csignal>

#include "core/text.h"
#include "core/types.h"
#include "suites.h"

using namespace mlsched;

START_TEST(uint_is_strict) {
  ck_assert(parse_uint("42").value() == 42);
  ck_assert(!parse_uint(""));
  ck_assert(!parse_uint("-1"));
  ck_assert(!parse_uint("4x"));
  ck_assert(!parse_uint(" 4"));
}
END_TEST

START_TEST(bools_and_signals) {
  ck_assert(parse_bool("Yes").value());
  ck_assert(!parse_bool("off").value());
  ck_assert(!parse_bool("maybe"));
  ck_assert_int_eq(parse_signal("USR1").value(), SIGUSR1);
  ck_assert_int_eq(parse_signal("sigusr2").value(), SIGUSR2);
  ck_assert_int_eq(parse_signal("15").value(), SIGTERM);
  ck_assert(!parse_signal("KILL"));  // cannot be caught, so useless for checkpoints
  ck_assert(!parse_signal("USR3"));
  ck_assert_string_eq(signal_name(SIGUSR1).c_str(), "USR1");
}
END_TEST

START_TEST(durations) {
  ck_assert(parse_duration("300").value() == 300);
  ck_assert(parse_duration("300s").value() == 300);
  ck_assert(parse_duration("5m").value() == 300);
  ck_assert(parse_duration("2h").value() == 7200);
  ck_assert(!parse_duration("5 m"));
  ck_assert(!parse_duration("m"));
  ck_assert(!parse_duration("1d"));
}
END_TEST

START_TEST(closest_match_finds_typos_only) {
  const std::vector<std::string> keys = {"gpu-type", "locality", "preemptible"};
  ck_assert_string_eq(closest_match("gpu_type", keys).value().c_str(), "gpu-type");
  ck_assert_string_eq(closest_match("premptible", keys).value().c_str(), "preemptible");
  ck_assert(!closest_match("walltime", keys));
  // Length alone rules a candidate in or out: one more letter is still a typo, a
  // word three times as long is not (and is not compared letter by letter).
  ck_assert_string_eq(closest_match("locallity", keys).value().c_str(), "locality");
  ck_assert(!closest_match(std::string(4000, 'l'), keys));
  ck_assert(!closest_match("preemptibleprocess", keys));
}
END_TEST

START_TEST(words_and_splits) {
  auto w = split_words("  a=1\tb=2  ");
  ck_assert_int_eq(w.size(), 2);
  ck_assert_string_eq(w[1].c_str(), "b=2");
  auto s = split("a,,b", ',');
  ck_assert_int_eq(s.size(), 3);
  ck_assert_string_eq(s[1].c_str(), "");
}
END_TEST

Suite* text_suite() {
  Suite* s = suite_create("text");
  TCase* tc = tcase_create("parse");
  tcase_add_test(tc, uint_is_strict);
  tcase_add_test(tc, bools_and_signals);
  tcase_add_test(tc, durations);
  tcase_add_test(tc, closest_match_finds_typos_only);
  tcase_add_test(tc, words_and_splits);
  suite_add_tcase(s, tc);
  return s;
}
