#include "model/kv_cache_layout.hpp"

#include <algorithm>
#include <map>
#include <stdexcept>

#include "model/llama_config.hpp"

namespace parley {

KvCacheLayout KvCacheLayout::for_windows(std::span<const int> layer_windows) {
  if (layer_windows.empty()) throw std::invalid_argument("a KV cache layout needs at least one layer");
  std::map<int, std::vector<int>> by_window;  // window 0 (full attention) sorts first
  for (size_t l = 0; l < layer_windows.size(); ++l) {
    if (layer_windows[l] < 0) throw std::invalid_argument("layer " + std::to_string(l) + " has a negative window");
    by_window[layer_windows[l]].push_back(int(l));
  }
  size_t group_size = layer_windows.size();
  for (const auto& [window, layers] : by_window) group_size = std::min(group_size, layers.size());
  KvCacheLayout out;
  out.group_of_layer.resize(layer_windows.size());
  out.slot_of_layer.resize(layer_windows.size());
  for (const auto& [window, layers] : by_window)
    for (size_t first = 0; first < layers.size(); first += group_size) {
      KvCacheGroup g{
          window, {layers.begin() + long(first), layers.begin() + long(std::min(layers.size(), first + group_size))}};
      for (size_t s = 0; s < g.layers.size(); ++s) {
        out.group_of_layer[size_t(g.layers[s])] = out.num_groups();
        out.slot_of_layer[size_t(g.layers[s])] = int(s);
      }
      out.groups.push_back(std::move(g));
    }
  out.slots_per_block = int(group_size);
  return out;
}

KvCacheLayout KvCacheLayout::for_model(const LlamaConfig& c) {
  std::vector<int> windows(size_t(c.n_layers));
  for (int l = 0; l < c.n_layers; ++l) windows[size_t(l)] = c.is_sliding_layer(l) ? c.sliding_window : 0;
  return for_windows(windows);
}

KvCacheLayout KvCacheLayout::single_group(int num_layers) {
  return for_windows(std::vector<int>(size_t(num_layers), 0));
}

std::vector<int> KvCacheLayout::group_windows() const {
  std::vector<int> w;
  for (const auto& g : groups) w.push_back(g.sliding_window);
  return w;
}

std::string KvCacheLayout::describe() const {
  std::string s = std::to_string(num_groups()) + (num_groups() == 1 ? " group of " : " groups of ") +
                  std::to_string(slots_per_block) + " layers (";
  for (size_t i = 0; i < groups.size(); ++i)
    s += (i ? ", " : "") +
         (groups[i].sliding_window ? "window " + std::to_string(groups[i].sliding_window) : std::string("full"));
  return s + ")";
}

}  // namespace parley
