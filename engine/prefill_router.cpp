#include "engine/prefill_router.hpp"

#include <stdexcept>

namespace parley {

PeerAddress PeerAddress::parse(const std::string& text) {
  const size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size())
    throw std::invalid_argument("prefill peer '" + text + "' is not host:port");
  int port = 0;
  try {
    size_t used = 0;
    port = std::stoi(text.substr(colon + 1), &used);
    if (used != text.size() - colon - 1) port = -1;
  } catch (const std::exception&) {
    port = -1;
  }
  if (port < 1 || port > 65535) throw std::invalid_argument("prefill peer '" + text + "' has no valid port");
  return {text.substr(0, colon), uint16_t(port)};
}

}  // namespace parley
