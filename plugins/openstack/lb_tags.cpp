// Service tags on load balancers and listeners: ownership and the tag update bodies.
#include "plugins/openstack/lb_tags.hpp"

#include <algorithm>

#include "plugins/openstack/text.hpp"

namespace ccm::openstack {

bool ownsListener(const OctaviaListener& l, const std::string& lb_name, bool owner) {
  return contains(l.tags, lb_name) || (l.tags.empty() && owner);
}

long otherServiceTags(const OctaviaLoadBalancer& lb, const std::string& lb_name) {
  return std::count_if(lb.tags.begin(), lb.tags.end(), [&](const std::string& t) {
    return startsWith(t, "kube_service_") && t != lb_name;
  });
}

std::vector<std::string> withTag(std::vector<std::string> tags, const std::string& tag) {
  tags.push_back(tag);
  return tags;
}

std::vector<std::string> withoutTag(const std::vector<std::string>& tags, const std::string& tag) {
  std::vector<std::string> out;
  for (const std::string& t : tags) {
    if (t != tag) {
      out.push_back(t);
    }
  }
  return out;
}

Json loadBalancerTagsBody(const std::vector<std::string>& tags) {
  return Json::object().set("loadbalancer", Json::object().set("tags", Json::stringArray(tags)));
}

}  // namespace ccm::openstack
