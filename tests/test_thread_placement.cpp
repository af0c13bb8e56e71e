// --cpu-affinity auto: which CPUs the worker and the actor threads get (engine/thread_placement.hpp).
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

#include "engine/thread_placement.hpp"

using parley::place_threads;

TEST_CASE("thread placement: the worker takes CPUs from the end and the actor threads the rest", "[placement]") {
  const std::vector<int> cpus{0, 1, 2, 3, 4, 5, 6, 7};
  auto one = place_threads({0, 1}, 1);
  CHECK(one.compute == std::vector<int>{1});
  CHECK(one.service == std::vector<int>{0});
  auto six = place_threads(cpus, 6);
  CHECK(six.compute == std::vector<int>{2, 3, 4, 5, 6, 7});
  CHECK(six.service == std::vector<int>{0, 1});
  // A cpuset that is not 0..n-1 (taskset, a container): its own CPU numbers.
  auto odd = place_threads({3, 5, 9}, 2);
  CHECK(odd.compute == std::vector<int>{5, 9});
  CHECK(odd.service == std::vector<int>{3});
}

TEST_CASE("thread placement: data-parallel engines get CPUs apart and share the rest", "[placement]") {
  const std::vector<int> cpus{0, 1, 2, 3, 4, 5, 6, 7};
  auto first = place_threads(cpus, 3, 0, 2), second = place_threads(cpus, 3, 1, 2);
  CHECK(first.compute == std::vector<int>{5, 6, 7});
  CHECK(second.compute == std::vector<int>{2, 3, 4});
  CHECK(first.service == std::vector<int>{0, 1});
  CHECK(second.service == first.service);
}

TEST_CASE("thread placement: nothing pinned when no CPU is left for the actor threads", "[placement]") {
  CHECK_FALSE(place_threads({0, 1}, 2).pinned());
  CHECK_FALSE(place_threads({0, 1}, 4).pinned());
  CHECK_FALSE(place_threads({0, 1, 2, 3}, 2, 1, 2).pinned());
  CHECK_FALSE(place_threads({0}, 1).pinned());
  CHECK_THROWS_AS(place_threads({0, 1}, 0), std::invalid_argument);
  CHECK_THROWS_AS(place_threads({0, 1, 2}, 1, 2, 2), std::invalid_argument);
}

TEST_CASE("thread placement: a pinned thread runs only on its CPUs", "[placement]") {
  const std::vector<int> allowed = parley::allowed_cpus();
  REQUIRE(!allowed.empty());
  std::vector<int> seen;
  std::thread t([&] {
    REQUIRE(parley::pin_this_thread({allowed.back()}));
    seen = parley::allowed_cpus();
  });
  t.join();
  CHECK(seen == std::vector<int>{allowed.back()});
  CHECK(parley::allowed_cpus() == allowed);  // the calling thread keeps its own
}

TEST_CASE("spin_until returns when its condition comes true and gives up after its budget", "[placement]") {
  using namespace std::chrono;
  std::atomic<bool> flag{false};
  std::thread setter([&] {
    std::this_thread::sleep_for(milliseconds(20));
    flag = true;
  });
  const auto start = steady_clock::now();
  CHECK(parley::spin_until([&] { return flag.load(); }, seconds(30)));  // a budget far beyond the 20 ms it waits
  CHECK(steady_clock::now() - start < seconds(10));
  setter.join();
  const auto again = steady_clock::now();
  CHECK_FALSE(parley::spin_until([] { return false; }, milliseconds(5)));
  const auto spent = steady_clock::now() - again;
  CHECK(spent >= milliseconds(5));
  CHECK(spent < seconds(5));
}
