// The engine's one clock: seconds on the steady clock, so request arrival, token, deadline and profile times
// share an origin.
#pragma once
#include <chrono>

namespace parley {

inline double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace parley
