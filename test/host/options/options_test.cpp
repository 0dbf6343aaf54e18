// Flags: pflag syntax, Go durations, upstream defaults, validation. (--controllers is checked
// against the controller registry: test/host/controllers/registry_test.cpp.)
#include <doctest/doctest.h>

#include <vector>

#include "host/options/options.hpp"

using namespace ccm;
using namespace ccm::options;
using std::chrono::milliseconds;

namespace {

struct Parsed {
  Options opts;
  std::unique_ptr<FlagSet> flags;
  Status status;
};

Parsed parse(std::vector<const char*> args) {
  Parsed p;
  p.flags = makeFlagSet(p.opts, "/usr/lib/ccm/providers", "a, b");
  args.insert(args.begin(), "cloud-controller-manager");
  p.status = p.flags->parse(static_cast<int>(args.size()), args.data());
  return p;
}

}  // namespace

TEST_CASE("Go durations parse and print like Go") {
  CHECK(parseGoDuration("10s") == std::chrono::seconds(10));
  CHECK(parseGoDuration("1m30s") == std::chrono::seconds(90));
  CHECK(parseGoDuration("1.5h") == std::chrono::minutes(90));
  CHECK(parseGoDuration("300ms") == milliseconds(300));
  CHECK(parseGoDuration("0") == std::chrono::nanoseconds(0));
  CHECK(parseGoDuration("-2s") == std::chrono::seconds(-2));
  CHECK_FALSE(parseGoDuration("10").has_value());
  CHECK_FALSE(parseGoDuration("ten seconds").has_value());
  CHECK_FALSE(parseGoDuration("").has_value());
  CHECK(formatGoDuration(std::chrono::minutes(5)) == "5m0s");
  CHECK(formatGoDuration(std::chrono::seconds(10)) == "10s");
  CHECK(formatGoDuration(std::chrono::hours(12)) == "12h0m0s");
  CHECK(formatGoDuration(milliseconds(1500)) == "1.5s");
  CHECK(formatGoDuration(milliseconds(0)) == "0s");
}

TEST_CASE("defaults match upstream's (and ccm's documented differences)") {
  auto p = parse({});
  REQUIRE(p.status.ok());
  const Options& o = p.opts;
  CHECK(o.cluster_name == "kubernetes");
  CHECK(o.configure_cloud_routes);
  CHECK(o.route_reconciliation_period == milliseconds(10000));
  CHECK(o.node_monitor_period == milliseconds(5000));
  CHECK(o.node_status_update_frequency == milliseconds(300000));
  CHECK(o.kube_api_qps == 20);
  CHECK(o.kube_api_burst == 30);
  CHECK(o.leader_elect);
  CHECK(o.leader_elect_lease_duration == milliseconds(15000));
  CHECK(o.leader_elect_renew_deadline == milliseconds(10000));
  CHECK(o.leader_elect_retry_period == milliseconds(2000));
  CHECK(o.leader_elect_resource_name == "cloud-controller-manager");
  CHECK(o.leader_elect_resource_namespace == "kube-system");
  CHECK(o.secure_port == 10258);
  CHECK(o.bind_address == "0.0.0.0");
  CHECK(o.controllers == std::vector<std::string>{"*"});
  CHECK(o.authorization_always_allow_paths ==
        std::vector<std::string>{"/healthz", "/readyz", "/livez"});
  CHECK(o.min_resync_period == milliseconds(12LL * 3600 * 1000));
  CHECK(o.cloud_provider_plugin_dir == "/usr/lib/ccm/providers");
  CHECK(o.node_eviction_rate == 0.1);
  CHECK(o.secondary_node_eviction_rate == 0.01);
  CHECK(o.unhealthy_zone_threshold == 0.55);
  CHECK(o.large_cluster_size_threshold == 50);
  // ccm's own defaults (upstream: 1 and 1).
  CHECK(o.concurrent_node_syncs == 10);
  CHECK(o.concurrent_service_syncs == 10);
}

TEST_CASE("pflag syntax") {
  auto p = parse({"--cloud-provider=fake-cloud", "--cluster-name", "prod", "--leader-elect=false",
                  "--configure-cloud-routes", "-v=4", "--node-monitor-period=1m",
                  "--controllers=*,-route", "--controllers", "service",
                  "--kube-api-qps=55.5"});
  REQUIRE_MESSAGE(p.status.ok(), p.status.toString());
  CHECK(p.opts.cloud_provider == "fake-cloud");
  CHECK(p.opts.cluster_name == "prod");
  CHECK_FALSE(p.opts.leader_elect);
  CHECK(p.opts.verbosity == 4);
  CHECK(p.opts.node_monitor_period == milliseconds(60000));
  CHECK(p.opts.controllers == std::vector<std::string>{"*", "-route", "service"});
  CHECK(p.opts.kube_api_qps == 55.5);
  CHECK(p.flags->changed("cluster-name"));
  CHECK_FALSE(p.flags->changed("secure-port"));
  auto v = parse({"-v", "3"});
  REQUIRE(v.status.ok());
  CHECK(v.opts.verbosity == 3);
  // An empty list value clears a list (upstream: --authorization-always-allow-paths=).
  auto e = parse({"--authorization-always-allow-paths="});
  REQUIRE(e.status.ok());
  CHECK(e.opts.authorization_always_allow_paths.empty());
}

TEST_CASE("command-line errors name the flag") {
  CHECK(parse({"--foo"}).status.message() == "unknown flag: --foo");
  CHECK(parse({"-x"}).status.message() == "unknown shorthand flag: 'x' in -x");
  CHECK(parse({"--secure-port=http"}).status.message().find(
            "invalid argument \"http\" for \"--secure-port\" flag") == 0);
  CHECK(parse({"--leader-elect=maybe"}).status.message().find(
            "invalid argument \"maybe\" for \"--leader-elect\" flag") == 0);
  CHECK(parse({"--node-monitor-period=5"}).status.message() ==
        "invalid argument \"5\" for \"--node-monitor-period\" flag: time: invalid duration \"5\"");
  CHECK(parse({"--cluster-name"}).status.message() == "flag needs an argument: --cluster-name");
  CHECK(parse({"extra"}).status.message().find("unknown command \"extra\"") == 0);
}

TEST_CASE("validation") {
  auto ok = parse({"--cloud-provider=fake-cloud"});
  CHECK(validate(ok.opts).ok());
  auto check = [](std::vector<const char*> args, const std::string& fragment) {
    args.insert(args.begin(), "--cloud-provider=fake-cloud");
    auto p = parse(args);
    REQUIRE(p.status.ok());
    Status s = validate(p.opts);
    CHECK_FALSE(s.ok());
    CHECK_MESSAGE(s.message().find(fragment) != std::string::npos, s.message());
  };
  CHECK(validate(parse({}).opts).message() == "--cloud-provider cannot be empty");
  check({"--leader-elect-resource-lock=endpoints"}, "resourceLock value must be \"leases\"");
  check({"--concurrent-node-syncs=0"}, "--concurrent-node-syncs must be greater than 0");
  check({"--concurrent-node-status-updates=-1"}, "must be 0 or greater");
  check({"--logging-format=xml"}, "format \"xml\" is unsupported");
  check({"--secure-port=70000"}, "between 0 and 65535");
  check({"--tls-cert-file=/a.crt"}, "must be given together");
  check({"--leader-elect-lease-duration=5s"}, "greater than --leader-elect-renew-deadline");
  check({"--unhealthy-zone-threshold=1.5"}, "--unhealthy-zone-threshold");
  check({"--cidr-allocator-type=CloudAllocator"}, "only RangeAllocator");
  check({"--load-balancer-class=Not A Class"}, "\"Not A Class\" is not a valid loadBalancerClass");
  check({"--load-balancer-class=-x.io/y"}, "not a valid loadBalancerClass");
  check({"--load-balancer-class-only"}, "needs at least one --load-balancer-class");
}

TEST_CASE("--load-balancer-class is repeatable and comma-separated") {
  auto p = parse({"--cloud-provider=fake-cloud", "--load-balancer-class=ccm.example.com/cloud",
                  "--load-balancer-class", "internal,x.io/a_b.c"});
  REQUIRE(p.status.ok());
  CHECK(p.opts.load_balancer_classes ==
        std::vector<std::string>{"ccm.example.com/cloud", "internal", "x.io/a_b.c"});
  CHECK_FALSE(p.opts.load_balancer_class_only);
  CHECK(validate(p.opts).ok());
  CHECK(parse({}).opts.load_balancer_classes.empty());
  auto only = parse({"--cloud-provider=fake-cloud", "--load-balancer-class=x.io/y",
                     "--load-balancer-class-only"});
  REQUIRE(only.status.ok());
  CHECK(only.opts.load_balancer_class_only);
  CHECK(validate(only.opts).ok());
}

TEST_CASE("accepted-but-unimplemented flags are reported, and marked in --help") {
  auto p = parse({"--profiling=false", "--cluster-name=x"});
  REQUIRE(p.status.ok());
  auto unimplemented = p.flags->setButUnimplemented();
  REQUIRE(unimplemented.size() == 1);
  CHECK(unimplemented[0]->name == "profiling");
  std::string usage = p.flags->usage();
  CHECK(usage.find("--cloud-provider string") != std::string::npos);
  CHECK(usage.find("not implemented by ccm") != std::string::npos);
  CHECK(usage.find("(default 10258)") != std::string::npos);
  CHECK(usage.find("-v, --v int32") != std::string::npos);
}
