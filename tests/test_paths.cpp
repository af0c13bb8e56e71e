#include "tests/test_paths.hpp"

#include <cstdlib>

namespace parley::test {

std::string shared_dir() {
  const char* dir = std::getenv("PARLEY_SHARED_DIR");
  return dir && *dir ? dir : PARLEY_SHARED_DIR;
}

std::string parley_binary() { return PARLEY_BINARY; }

}  // namespace parley::test
