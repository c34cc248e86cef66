// Marks mlsched stores on a job (see job_record.h).
#include "core/job_record.h"

#include "core/directives.h"
#include "core/text.h"

namespace mlsched {

const std::vector<std::string_view>& mark_keys() {
  static const std::vector<std::string_view> keys = {
      mark_key::borrowing, mark_key::attained_gpu_seconds, mark_key::first_submit, mark_key::preempted,
      mark_key::preempted_at, mark_key::preempted_by, mark_key::lost_gpu_seconds, mark_key::preempted_at_utc};
  return keys;
}

JobMarks read_marks(std::string_view admin_comment) {
  JobMarks m;
  if (admin_comment.empty()) return m;
  m.borrowing = stored_token(admin_comment, mark_key::borrowing);
  if (auto v = stored_token(admin_comment, mark_key::attained_gpu_seconds))
    if (auto n = parse_uint(*v)) m.attained_gpu_seconds = static_cast<double>(*n);
  if (auto v = stored_token(admin_comment, mark_key::first_submit))
    if (auto n = parse_uint(*v)) m.first_submit = static_cast<int64_t>(*n);
  return m;
}

}  // namespace mlsched
