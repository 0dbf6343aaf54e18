// Shared controller helpers.
#include "host/controllers/common/controller.hpp"

namespace ccm::controllers {

void setControllerRunning(metrics::Registry& registry, std::string_view metric_name,
                          bool running) {
  if (auto* f = registry.gauge("running_managed_controllers",
                               "Indicates where instances of a controller are currently running",
                               {"manager", "name"}, metrics::Stability::Beta)) {
    f->labels({"cloud-controller-manager", std::string(metric_name)}).set(running ? 1 : 0);
  }
}

}  // namespace ccm::controllers
