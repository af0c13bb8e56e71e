#include "engine/kv_links.hpp"

#include <algorithm>

namespace parley {

KvLinks::KvLinks(DeviceModel& device, std::shared_ptr<KvLinkFactory> factory, double timeout_s)
    : device_(device), factory_(std::move(factory)), timeout_s_(timeout_s) {
  if (!factory_) throw std::invalid_argument("KvLinks needs a link factory");
}

void KvLinks::open(const std::string& key, const std::string& id, int rank, uint64_t tag, double now) {
  if (links_.count(key)) fail(key, "link " + key + " was opened again");
  links_.emplace(key, Link{factory_->open(id, rank), tag, now + timeout_s_, false, {}});
}

KvLinks::~KvLinks() {
  for (auto& [key, l] : links_) l.link->abort();  // before the staging of what is in flight goes
}

KvLinks::Link& KvLinks::usable(const std::string& key) {
  const auto it = links_.find(key);
  if (it == links_.end())
    throw KvLinkError("no " + factory_->transport() + " link " + key + " (never opened, or broken)");
  return it->second;
}

void KvLinks::send(const std::string& key, uint64_t tag, std::span<const int> blocks, double now) {
  Link& l = usable(key);
  std::unique_ptr<KvStaging> staged;
  try {
    staged = device_.stage_blocks(blocks);
  } catch (const std::exception& e) {
    throw KvStagingError(std::string("staging the KV failed: ") + e.what());
  }
  uint64_t ticket = 0;
  try {
    ticket = l.link->post_send(staged->data(), staged->size());
  } catch (const std::exception& e) {
    const std::string why = std::string("posting a KV send failed: ") + e.what();
    fail(key, why);  // whether the link took it is unknown
    throw KvLinkError(why);
  }
  l.in_flight.push_back({tag, ticket, std::move(staged), now + timeout_s_, false, 0});
}

void KvLinks::recv(const std::string& key, uint64_t tag, int64_t floats, double now) {
  Link& l = usable(key);
  if (floats <= 0) throw std::invalid_argument("a KV receive needs a positive size");
  l.in_flight.push_back({tag, 0, nullptr, now + timeout_s_, true, floats});
  if (const std::string why = post_waiting(l); !why.empty()) fail(key, why);
}

std::string KvLinks::post_waiting(Link& l) {
  for (Transfer& t : l.in_flight) {
    if (t.staging) continue;  // posted
    try {
      t.staging = device_.new_staging(t.floats);
    } catch (const std::exception&) {
      return "";  // no device memory now: it (and every receive after it) waits for KV to land and free some
    }
    try {
      t.ticket = l.link->post_recv(t.staging->data(), t.floats);
    } catch (const std::exception& e) {
      return std::string("posting a KV receive failed: ") + e.what();  // whether the link took it is unknown
    }
  }
  return "";
}

void KvLinks::fail(const std::string& key, const std::string& why) {
  Link& l = links_.at(key);
  l.link->abort();  // no transfer touches its staging after this
  if (!l.up) failed_.push_back({KvLinkEvent::Kind::Failed, l.open_tag, why});
  for (const Transfer& t : l.in_flight) failed_.push_back({KvLinkEvent::Kind::Failed, t.tag, why});
  links_.erase(key);
}

std::vector<KvLinkEvent> KvLinks::poll(double now) {
  std::vector<KvLinkEvent> events;
  std::vector<std::pair<std::string, std::string>> broken;
  for (auto& [key, l] : links_) {
    if (std::string why = post_waiting(l); !why.empty()) {
      broken.emplace_back(key, std::move(why));
      continue;
    }
    KvLinkPoll p;
    try {
      p = l.link->poll();
    } catch (
        const std::exception& e) {  // KvLinkError, or a device error (CudaError) under it: the link is lost either way
      broken.emplace_back(key, e.what());
      continue;
    }
    if (p.up && !l.up) l.up = true, events.push_back({KvLinkEvent::Kind::Up, l.open_tag, ""});
    for (uint64_t ticket : p.done) {
      const auto t = std::find_if(l.in_flight.begin(), l.in_flight.end(),
                                  [&](const Transfer& x) { return x.staging && x.ticket == ticket; });
      if (t == l.in_flight.end()) continue;
      if (t->is_recv) received_[t->tag] = std::move(t->staging);
      events.push_back({KvLinkEvent::Kind::Done, t->tag, ""});
      l.in_flight.erase(t);
    }
    if (!l.up && now >= l.open_deadline)
      broken.emplace_back(key, "the peer did not join link " + key + " in " + std::to_string(int(timeout_s_)) + " s");
    else if (!l.in_flight.empty() && now >= l.in_flight.front().deadline)
      broken.emplace_back(key, "a KV transfer on link " + key + " took over " + std::to_string(int(timeout_s_)) + " s");
  }
  for (const auto& [key, why] : broken) fail(key, why);
  events.insert(events.end(), failed_.begin(), failed_.end());
  failed_.clear();
  return events;
}

void KvLinks::land(uint64_t tag, std::span<const int> blocks) {
  const auto it = received_.find(tag);
  if (it == received_.end()) throw std::invalid_argument("no finished KV receive " + std::to_string(tag));
  std::unique_ptr<KvStaging> staged = std::move(it->second);
  received_.erase(it);
  device_.unstage_blocks(*staged, blocks);
}

bool KvLinks::busy() const {
  return !failed_.empty() || std::any_of(links_.begin(), links_.end(),
                                         [](const auto& kv) { return !kv.second.up || !kv.second.in_flight.empty(); });
}

}  // namespace parley
