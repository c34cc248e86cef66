// The plugins' background thread: woken early by poke() and stop(), joined by stop().
// A broken wake-up shows as a test that hangs until Check's timeout, never as a
// timing assertion.
#include <atomic>
#include <chrono>

#include "plugins/common/periodic_worker.h"
#include "suites.h"

using mlsched::plugin::PeriodicWorker;
using namespace std::chrono_literals;

START_TEST(stop_ends_a_long_sleep_and_joins) {
  PeriodicWorker worker;
  std::atomic<int> rounds{0};
  std::atomic<bool> ended_early{false};
  worker.start([&](PeriodicWorker& w) {
    while (!w.stopping()) {
      ++rounds;
      if (w.sleep_for(1h)) ended_early = true;
    }
  });
  while (rounds.load() == 0) std::this_thread::yield();
  worker.stop();  // returns only after the body ended
  ck_assert(ended_early.load());
  ck_assert(worker.stopping());
  worker.stop();  // twice is harmless
}
END_TEST

START_TEST(poke_wakes_one_sleep_and_is_consumed) {
  PeriodicWorker worker;
  std::atomic<int> woken{0}, timed_out{0};
  std::atomic<bool> sleeping{false};
  worker.start([&](PeriodicWorker& w) {
    sleeping = true;
    if (w.sleep_for(1h)) ++woken;                  // ended by the poke below
    if (!w.stopping() && !w.sleep_for(1ms)) ++timed_out;  // the poke is gone: runs out
    while (!w.stopping()) w.sleep_for(1h);
  });
  while (!sleeping.load()) std::this_thread::yield();
  worker.poke();
  while (timed_out.load() == 0) std::this_thread::yield();
  worker.stop();
  ck_assert_int_eq(woken.load(), 1);
  ck_assert_int_eq(timed_out.load(), 1);
}
END_TEST

START_TEST(a_poke_before_the_sleep_is_not_lost) {
  // priority_p_reconfig may poke while a pass runs: the next sleep ends at once.
  PeriodicWorker worker;
  std::atomic<bool> running{false}, poked{false}, early{false}, done{false};
  worker.start([&](PeriodicWorker& w) {
    running = true;
    while (!poked.load()) std::this_thread::yield();  // "the pass"
    early = w.sleep_for(1h);
    done = true;
    while (!w.stopping()) w.sleep_for(1h);
  });
  while (!running.load()) std::this_thread::yield();
  worker.poke();
  poked = true;
  while (!done.load()) std::this_thread::yield();
  worker.stop();
  ck_assert(early.load());
}
END_TEST

Suite* periodic_worker_suite() {
  Suite* s = suite_create("periodic_worker");
  TCase* tc = tcase_create("wake");
  tcase_add_test(tc, stop_ends_a_long_sleep_and_joins);
  tcase_add_test(tc, poke_wakes_one_sleep_and_is_consumed);
  tcase_add_test(tc, a_poke_before_the_sleep_is_not_lost);
  suite_add_tcase(s, tc);
  return s;
}
