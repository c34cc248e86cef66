#include <stdexcept>

#include "core/hostlist.h"
#include "suites.h"

using namespace mlsched;

START_TEST(expands_ranges_with_padding) {
  auto h = expand_hostlist("gpu[01-03,10],login");
  ck_assert_int_eq(h.size(), 5);
  ck_assert_string_eq(h[0].c_str(), "gpu01");
  ck_assert_string_eq(h[2].c_str(), "gpu03");
  ck_assert_string_eq(h[3].c_str(), "gpu10");
  ck_assert_string_eq(h[4].c_str(), "login");
}
END_TEST

START_TEST(rejects_malformed) {
  const char* bad[] = {"gpu[01-", "gpu[3-1]", "gpu[a-b]", "gpu]", "gpu[1-2][3]", "a,,b"};
  for (const char* b : bad) {
    bool threw = false;
    try {
      expand_hostlist(b);
    } catch (const std::invalid_argument&) {
      threw = true;
    }
    ck_assert_msg(threw, "expected '%s' to be rejected", b);
  }
}
END_TEST

START_TEST(compress_round_trips) {
  const std::vector<std::string> hosts = {"gpu01", "gpu02", "gpu03", "gpu05", "cpu1"};
  const std::string c = compress_hostlist(hosts);
  ck_assert_string_eq(c.c_str(), "gpu[01-03,05],cpu1");
  auto back = expand_hostlist(c);
  ck_assert_int_eq(back.size(), 5);
}
END_TEST

// Names whose number sits before a suffix each form a group of their own (found by the
// fuzzer: 46,612 such names took over 10 s to compress). Each keeps its place and the
// result expands to the same names.
START_TEST(compress_keeps_names_with_a_suffix) {
  const auto hosts = expand_hostlist("gpu[01-03]-ib1,gpu07");
  ck_assert_int_eq(hosts.size(), 4);
  const std::string c = compress_hostlist(hosts);
  ck_assert_string_eq(c.c_str(), "gpu01-ib1,gpu02-ib1,gpu03-ib1,gpu07");
  ck_assert(expand_hostlist(c) == hosts);
  const auto many = expand_hostlist("n[00000-49999]x7");
  ck_assert(expand_hostlist(compress_hostlist(many)) == many);
}
END_TEST

Suite* hostlist_suite() {
  Suite* s = suite_create("hostlist");
  TCase* tc = tcase_create("hostlist");
  tcase_add_test(tc, expands_ranges_with_padding);
  tcase_add_test(tc, rejects_malformed);
  tcase_add_test(tc, compress_round_trips);
  tcase_add_test(tc, compress_keeps_names_with_a_suffix);
  suite_add_tcase(s, tc);
  return s;
}
