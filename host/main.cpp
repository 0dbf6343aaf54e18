// cloud-controller-manager: main only wires (see host/app).
#include "host/app/app.hpp"
#include "host/runtime/memory.hpp"

// Two malloc arenas, before any thread starts: in the 10,000-node burst the host ended 4 MiB
// lower (47.5 against 51.5 MiB) and peaked 6 MiB lower than with glibc's default of 8 per
// core, at no CPU cost the runs could tell (bench/RESULTS.md). MALLOC_ARENA_MAX overrides.
constexpr int kHeapArenas = 2;

int main(int argc, char** argv) {
  ccm::runtime::limitHeapArenas(kHeapArenas);
  return ccm::app::run(argc, argv);
}
