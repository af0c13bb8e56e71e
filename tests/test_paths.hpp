// Where the tests find what lies outside the build: the configured paths live in test_paths.cpp alone, so no
// other parley_tests file names an absolute path on its compile line and ccache reuses it from a clone elsewhere.
#pragma once
#include <string>

namespace parley::test {

// ../shared as configured; the environment's PARLEY_SHARED_DIR overrides it (a GPU machine's copy).
std::string shared_dir();
// The parley binary built beside the tests.
std::string parley_binary();

}  // namespace parley::test
