// Plugin text made safe to print (host/plugin/plugin_text) and the shape checks of plugin
// output (host/plugin/abi_output_shape).
#include "host/plugin/plugin_text.hpp"

#include <doctest/doctest.h>

#include <string>

#include "ccm/output_checks.hpp"

using namespace ccm::plugin;
using namespace ccm::sdk;

TEST_CASE("safeText keeps clean UTF-8 and escapes control characters and invalid bytes") {
  CHECK(safeText("plain text, caf\u00e9 \u2713", 100) == "plain text, caf\u00e9 \u2713");
  CHECK(safeText("a\nb\tc\rd", 100) == "a\\nb\\tc\\rd");
  CHECK(safeText("\x1b[31mred", 100) == "\\x1b[31mred");
  CHECK(safeText(std::string("nul\0byte", 8), 100) == "nul\\x00byte");
  CHECK(safeText("del\x7f", 100) == "del\\x7f");
  CHECK(safeText("c1 \xc2\x9b csi", 100) == "c1 \\u009b csi");
  CHECK(safeText("bad \xff\xfe end", 100) == "bad \\xff\\xfe end");
  CHECK(safeText("overlong \xc0\xaf", 100) == "overlong \\xc0\\xaf");
  CHECK(safeText("surrogate \xed\xa0\x80", 100) == "surrogate \\xed\\xa0\\x80");
  CHECK(safeText("truncated \xe2\x9c", 100) == "truncated \\xe2\\x9c");
}

TEST_CASE("safeText cuts long text on a character boundary with a visible marker") {
  CHECK(safeText("abcdef", 6) == "abcdef");
  CHECK(safeText("abcdefgh", 6) == "abcdef\u2026 [cut 2 bytes]");
  // "\u2713" is three bytes: a cut inside it keeps none of it.
  CHECK(safeText("ab\u2713cd", 4) == "ab\u2026 [cut 5 bytes]");
  std::string big(20 * 1024, 'x');
  std::string out = safeText(big, kMaxPluginLogBytes);
  CHECK(out.size() == kMaxPluginLogBytes + std::string("\u2026 [cut 4096 bytes]").size());
  CHECK(out.ends_with("\u2026 [cut 4096 bytes]"));
}

TEST_CASE("checkPrintable accepts clean text and names what is wrong, escaped") {
  CHECK(checkPrintable("version", "1.4.2-rc.1+build.5", 64).empty());
  CHECK(checkPrintable("version", "v1 \u00e9t\u00e9", 64).empty());
  CHECK(checkPrintable("version", "1.0\x1b[2J", 64) ==
        "version \"1.0\\x1b[2J\" has a control character at byte 3");
  CHECK(checkPrintable("version", "1.0\n", 64) ==
        "version \"1.0\\n\" has a control character at byte 3");
  CHECK(checkPrintable("version", "1.\xff", 64) ==
        "version \"1.\\xff\" is not valid UTF-8 (at byte 2)");
  std::string message = checkPrintable("version", std::string(100, '9'), 64);
  CHECK(message.starts_with("version is 100 bytes long (at most 64): \"9999"));
  CHECK(message.ends_with("\u2026 [cut 36 bytes]\""));
}

TEST_CASE("shape checks refuse NULL pointers with non-zero sizes and counts") {
  CHECK(checkStrShape("x", ccm_str{nullptr, 0}).empty());
  CHECK(checkStrShape("x", ccm_str{"abc", 3}).empty());
  CHECK(checkStrShape("zone", ccm_str{nullptr, 12}) == "zone has data NULL with size 12");

  ccm_instance_metadata md{};
  md.struct_size = sizeof md;
  CHECK(checkMetadataShape(&md).empty());
  md.address_count = 3;
  CHECK(checkMetadataShape(&md) == "addresses is NULL with address_count 3");
  ccm_node_address addrs[2] = {{{"InternalIP", 10}, {nullptr, 4}}, {{"Hostname", 8}, {"a", 1}}};
  md.addresses = addrs;
  md.address_count = 2;
  CHECK(checkMetadataShape(&md) == "addresses[0].address has data NULL with size 4");
  md.address_count = 100000;
  CHECK(checkMetadataShape(&md) == "address_count 100000 is more than the 256 the host accepts");
  md.address_count = 0;
  md.additional_label_count = 1;
  CHECK(checkMetadataShape(&md) == "additional_labels is NULL with additional_label_count 1");

  ccm_port_status port{sizeof(ccm_port_status), 80, {nullptr, 3}, {nullptr, 0}};
  const ccm_port_status* ports[2] = {&port, nullptr};
  ccm_lb_ingress in{};
  in.struct_size = sizeof in;
  in.ports = ports;
  in.port_count = 1;
  const ccm_lb_ingress* ingress[2] = {&in, nullptr};
  ccm_lb_status st{};
  st.struct_size = sizeof st;
  st.ingress = ingress;
  st.ingress_count = 1;
  CHECK(checkLbStatusShape(&st) == "ingress[0].ports[0].protocol has data NULL with size 3");
  in.port_count = 2;
  port.protocol = ccm_str{"TCP", 3};
  CHECK(checkLbStatusShape(&st) == "ingress[0].ports[1] is NULL");
  in.port_count = 1;
  st.ingress_count = 2;
  CHECK(checkLbStatusShape(&st) == "ingress[1] is NULL");
  st.ingress_count = 1;
  CHECK(checkLbStatusShape(&st).empty());
  st.removed_annotation_count = 2;
  CHECK(checkLbStatusShape(&st) == "removed_annotations is NULL with removed_annotation_count 2");
  // A 1.0 plugin's shorter struct: the 1.1 fields beyond its struct_size are not read.
  st.struct_size = offsetof(ccm_lb_status, annotations);
  CHECK(checkLbStatusShape(&st).empty());

  ccm_route r{};
  r.struct_size = sizeof r;
  r.destination_cidr = ccm_str{nullptr, 11};
  CHECK(checkRouteShape(&r) == "destination_cidr has data NULL with size 11");
  r.destination_cidr = ccm_str{"10.0.0.0/24", 11};
  r.target_node_address_count = 1;
  CHECK(checkRouteShape(&r) == "target_node_addresses is NULL with target_node_address_count 1");
}
