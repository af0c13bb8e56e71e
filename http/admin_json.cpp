#include "http/admin_json.hpp"

#include <nlohmann/json.hpp>

namespace parley::http {
namespace {

nlohmann::json kv_transfer_json(const KvTransferView& kv) {
  nlohmann::json peers = nlohmann::json::array();
  for (const KvPeerView& p : kv.peers)
    peers.push_back({{"address", p.address}, {"up", p.up}, {"in_flight", p.in_flight}, {"device_link", p.device_link}});
  return {{"peers", peers},
          {"link_transport", kv.link_transport},
          {"links_to_decode", kv.links_to_decode},
          {"transfers_in_flight", kv.transfers_in_flight},
          {"awaiting_prefill", kv.awaiting_prefill},
          {"held_for_decode", kv.held_for_decode}};
}

nlohmann::json engine_json(const EngineView& v) {
  nlohmann::json requests = nlohmann::json::array();
  for (const RequestView& r : v.requests)
    requests.push_back({{"id", r.id},
                        {"user_request", r.user_request},
                        {"state", r.state},
                        {"prompt_tokens", r.prompt_tokens},
                        {"output_tokens", r.output_tokens},
                        {"computed_tokens", r.computed_tokens},
                        {"placeholders", r.placeholders},
                        {"blocks", r.blocks},
                        {"block_tables", r.block_tables},
                        {"n", r.n},
                        {"preemptions", r.preemptions},
                        {"pooling", r.pooling}});
  const BlockPoolView& b = v.kv_blocks;
  nlohmann::json j{
      {"requests", requests},
      {"kv_blocks",
       {{"total", b.total}, {"used", b.used}, {"cached", b.cached}, {"free", b.free}, {"states", b.states}}},
      {"num_splits", v.num_splits},
      {"pooling", {{"requests", v.pooled_requests}, {"tokens", v.pooled_tokens}}},
      {"steps",
       {{"async_scheduling", v.steps.async_scheduling},
        {"in_flight", v.steps.in_flight},
        {"worker_news_pending", v.steps.worker_news_pending},
        {"total", v.steps.total},
        {"discarded_tokens", v.steps.discarded_tokens}}}};
  if (v.kv_transfer) j["kv_transfer"] = kv_transfer_json(*v.kv_transfer);
  return j;
}

nlohmann::json actors_json(const std::vector<ActorView>& actors) {
  nlohmann::json lines = nlohmann::json::array();
  for (const ActorView& a : actors) {
    nlohmann::json line{{"name", a.name}, {"mailbox_depth", nullptr}, {"messages_handled", nullptr}};
    if (a.mailbox_depth) line["mailbox_depth"] = *a.mailbox_depth;
    if (a.messages_handled) line["messages_handled"] = *a.messages_handled;
    if (!a.mailbox_depth) line["busy"] = true;
    lines.push_back(std::move(line));
  }
  return {{"actors", lines}};
}

// One engine: its object; several: {"engines": [each]}.
template <class View, class Render>
std::string one_or_engines(const std::vector<View>& engines, Render render) {
  if (engines.size() == 1) return render(engines[0]).dump();
  nlohmann::json all = nlohmann::json::array();
  for (const View& e : engines) all.push_back(render(e));
  return nlohmann::json{{"engines", all}}.dump();
}

}  // namespace

std::string admin_requests_json(const std::vector<EngineView>& engines) { return one_or_engines(engines, engine_json); }

std::string admin_actors_json(const std::vector<std::vector<ActorView>>& engines) {
  return one_or_engines(engines, actors_json);
}

}  // namespace parley::http
