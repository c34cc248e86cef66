// Runs every core suite; Check prints the summary line CI reads.
#include <cstdlib>

#include "suites.h"

int main() {
  SRunner* runner = srunner_create(text_suite());
  srunner_add_suite(runner, tres_suite());
  srunner_add_suite(runner, hostlist_suite());
  srunner_add_suite(runner, config_suite());
  srunner_add_suite(runner, cluster_suite());
  srunner_add_suite(runner, directives_suite());
  srunner_add_suite(runner, job_record_suite());
  srunner_add_suite(runner, submit_suite());
  srunner_add_suite(runner, priority_suite());
  srunner_add_suite(runner, placement_suite());
  srunner_add_suite(runner, topo_suite());
  srunner_add_suite(runner, why_suite());
  srunner_add_suite(runner, ops_suite());
  srunner_add_suite(runner, preempt_suite());
  srunner_add_suite(runner, checkpoint_suite());
  srunner_add_suite(runner, periodic_worker_suite());
  srunner_add_suite(runner, lifecycle_suite());
  srunner_add_suite(runner, node_failures_suite());
  srunner_add_suite(runner, pipeline_suite());
  srunner_run_all(runner, CK_NORMAL);
  const int failed = srunner_ntests_failed(runner);
  srunner_free(runner);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
