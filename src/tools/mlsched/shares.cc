// Each team's fair-share row as sshare shows it. libslurm exports the request
// sshare sends (REQUEST_SHARE_INFO) but slurm.h in 22.05 declares neither it nor
// its reply, so this one file takes the message types from Slurm's own headers of
// the installed version (the ones the plugins build against) and nothing else.
extern "C" {
#include "config.h"  // Slurm's, from the configured source tree: struct layouts depend on it

#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>

#include "src/common/slurm_protocol_api.h"
#include "src/common/slurm_protocol_defs.h"
}

#include <string>
#include <vector>

#include "tools/mlsched/cli.h"

namespace mlsched::tool {

std::vector<TeamShareInfo> load_team_shares() {
  shares_request_msg_t request = {};  // no account or user filter: every association
  slurm_msg_t req_msg, resp_msg;
  slurm_msg_t_init(&req_msg);
  slurm_msg_t_init(&resp_msg);
  req_msg.msg_type = REQUEST_SHARE_INFO;
  req_msg.data = &request;
  if (slurm_send_recv_controller_msg(&req_msg, &resp_msg, nullptr) < 0)
    throw ToolError(slurm_error("cannot read fair-share data (sshare) from slurmctld"));
  if (resp_msg.msg_type == RESPONSE_SLURM_RC) {
    const int rc = static_cast<return_code_msg_t*>(resp_msg.data)->return_code;
    slurm_free_return_code_msg(static_cast<return_code_msg_t*>(resp_msg.data));
    if (rc == SLURM_SUCCESS) return {};
    throw ToolError(std::string("cannot read fair-share data (sshare) from slurmctld: ") + slurm_strerror(rc));
  }
  if (resp_msg.msg_type != RESPONSE_SHARE_INFO || !resp_msg.data) {
    slurm_free_msg_data(static_cast<slurm_msg_type_t>(resp_msg.msg_type), resp_msg.data);
    throw ToolError("cannot read fair-share data: slurmctld sent an unexpected reply");
  }
  auto* reply = static_cast<shares_response_msg_t*>(resp_msg.data);
  std::vector<TeamShareInfo> teams;
  if (reply->assoc_shares_list) {
    struct listIterator* it = slurm_list_iterator_create(reply->assoc_shares_list);
    while (auto* a = static_cast<assoc_shares_object_t*>(slurm_list_next(it))) {
      // Teams are accounts below root; user rows repeat their team's numbers.
      if (a->user || !a->name || !std::string("root").compare(a->name)) continue;
      TeamShareInfo t;
      t.team = a->name;
      t.shares_raw = a->shares_raw;
      t.shares_norm = a->shares_norm;
      t.usage_norm = a->usage_norm;
      t.usage_raw = static_cast<double>(a->usage_raw);
      t.fairshare = a->fs_factor;
      teams.push_back(std::move(t));
    }
    slurm_list_iterator_destroy(it);
  }
  slurm_free_shares_response_msg(reply);
  return teams;
}

}  // namespace mlsched::tool
