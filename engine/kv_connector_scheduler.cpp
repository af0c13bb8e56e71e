#include "engine/kv_connector_scheduler.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <utility>

namespace parley {

KvConnectorScheduler::KvConnectorScheduler(Scheduler& scheduler, KvLayout layout, bool recompute_on_failure)
    : scheduler_(scheduler), layout_(layout), recompute_on_failure_(recompute_on_failure) {
  scheduler_.attach_kv_connector(this);
}

void KvConnectorScheduler::update_state_after_alloc(Request& r) {
  waiting_for_kv_.push_back(&r);
  to_route_.push_back(r.request_id);
}

std::vector<KvConnectorScheduler::Route> KvConnectorScheduler::take_routes() {
  std::vector<Route> routes;
  for (std::string& id : std::exchange(to_route_, {}))
    if (const Request* r = scheduler_.find(id)) routes.push_back({std::move(id), encode_prefill_request(*r, layout_)});
  return routes;
}

std::vector<int> KvConnectorScheduler::held_block_ids(const std::string& req_id) const {
  const auto it = held_.find(req_id);
  if (it == held_.end()) throw std::invalid_argument("request " + req_id + " holds no blocks for a transfer");
  const KVCacheManager& kv = scheduler_.kv_cache_manager();
  GroupBlockIds ids = kv.block_ids(req_id);
  for (auto& group : ids) group.resize(std::min(group.size(), size_t(kv.num_blocks_needed(it->second))));
  return flatten_block_ids(ids);
}

bool KvConnectorScheduler::waits_for_kv(const std::string& req_id) const {
  const Request* r = scheduler_.find(req_id);
  return r && r->status == RequestStatus::WaitingForRemoteKv;
}

KvConnectorScheduler::Landing KvConnectorScheduler::landing(const KvTransferPayload& p) const {
  if (!waits_for_kv(p.req_id)) return {};  // aborted, or failed over to a local prefill meanwhile
  std::vector<int> blocks = flatten_block_ids(scheduler_.kv_cache_manager().block_ids(p.req_id));
  if (std::string why = kv_layout_mismatch(p.layout, layout_); !why.empty()) return {{}, why};
  if (p.num_blocks != int(blocks.size()) || p.num_prompt_tokens != scheduler_.find(p.req_id)->num_prompt_tokens())
    return {{}, "the KV does not fit this instance (another model or block size)"};
  return {std::move(blocks), ""};
}

std::vector<EngineCoreOutput> KvConnectorScheduler::loaded(const KvTransferPayload& p) {
  if (!waits_for_kv(p.req_id)) return {};
  return scheduler_.finish_remote_kv(p.req_id, p.first_token_ids, p.first_logprobs, p.prompt_logprobs);
}

std::optional<KvConnectorScheduler::Failed> KvConnectorScheduler::failed(const std::string& req_id,
                                                                         const std::string& why) {
  if (!waits_for_kv(req_id)) return std::nullopt;  // finished, aborted or arrived meanwhile
  spdlog::warn("request {}: KV transfer failed ({}); {}", req_id, why,
               recompute_on_failure_ ? "prefilling it here" : "failing it");
  std::vector<std::string> ended = scheduler_.fail_remote_kv(req_id, recompute_on_failure_);
  if (ended.empty()) return Failed{};
  return Failed{std::move(ended),
                "The prefill instance failed this request (" + why + ") and --kv-load-failure-policy is fail."};
}

std::optional<std::string> KvConnectorScheduler::admit(Request r, double now) {
  r.kv_transfer = KvTransfer::ToDecode;
  r.arrival_time = now;
  const std::string id = r.request_id;
  const int prompt = r.num_prompt_tokens();
  try {
    scheduler_.add_request(std::move(r));
  } catch (const std::exception& e) {
    return std::string(e.what());
  }
  handing_off_[id] = prompt;
  return std::nullopt;
}

std::vector<KvConnectorScheduler::HandOff> KvConnectorScheduler::take_hand_offs(
    std::vector<EngineCoreOutput>& outputs) {
  std::vector<HandOff> hand_offs;
  if (handing_off_.empty()) return hand_offs;  // not a prefill instance, or nothing routed here in flight
  std::erase_if(outputs, [&](EngineCoreOutput& o) {
    const auto to = handing_off_.find(o.req_id);
    if (to == handing_off_.end()) return false;
    std::vector<int> blocks = o.error.empty() ? held_block_ids(o.req_id) : std::vector<int>{};
    hand_offs.push_back({std::move(o), to->second, std::move(blocks)});
    handing_off_.erase(to);
    return true;
  });
  return hand_offs;
}

KvTransferPayload KvConnectorScheduler::payload(const HandOff& h) const {
  KvTransferPayload p;
  p.req_id = h.first.req_id;
  p.num_prompt_tokens = h.num_prompt_tokens;
  p.first_token_ids = h.first.new_token_ids;
  p.first_logprobs = h.first.new_logprobs;
  p.layout = layout_;
  p.num_blocks = int(h.blocks.size());
  p.prompt_logprobs = h.first.prompt_logprobs;
  return p;
}

}  // namespace parley
