// Check suites of the core library, one per source file under test.
#pragma once

#include <check.h>

#include <string>

Suite* text_suite();
Suite* tres_suite();
Suite* hostlist_suite();
Suite* config_suite();
Suite* cluster_suite();
Suite* directives_suite();
Suite* job_record_suite();
Suite* submit_suite();
Suite* priority_suite();
Suite* placement_suite();
Suite* topo_suite();
Suite* why_suite();
Suite* ops_suite();
Suite* preempt_suite();
Suite* checkpoint_suite();
Suite* periodic_worker_suite();
Suite* lifecycle_suite();
Suite* node_failures_suite();
Suite* pipeline_suite();

// True when `haystack` contains `needle`; messages are asserted by content.
inline bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

#define ck_assert_contains(haystack, needle)                                                   \
  ck_assert_msg(contains((haystack), (needle)), "expected \"%s\" in \"%s\"", std::string(needle).c_str(), \
                std::string(haystack).c_str())

// String equality that copies both sides first: Check's ck_assert_str_eq evaluates
// its arguments twice, which breaks on pointers into temporaries.
#define ck_assert_string_eq(a, b)                                                             \
  do {                                                                                        \
    const std::string ck_a_ = (a), ck_b_ = (b);                                               \
    ck_assert_msg(ck_a_ == ck_b_, "\"%s\" != \"%s\"", ck_a_.c_str(), ck_b_.c_str());          \
  } while (0)
