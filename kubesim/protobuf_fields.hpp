// The protobuf field numbers of the API types kubesim reads and writes in the API server's
// protobuf encoding (from k8s.io/api's generated.proto), shared by ProtobufDecoder (request
// bodies) and ProtobufEncoder (answers). Field types come from Schema.
//
// THREAD: the table is built once and immutable.
#pragma once

#include <functional>
#include <map>
#include <string>

namespace ccm::kubesim {

// struct -> (field number -> JSON field name)
using ProtobufFieldNumbers = std::map<std::string, std::map<int, std::string>, std::less<>>;

const ProtobufFieldNumbers& protobufFieldNumbers();

}  // namespace ccm::kubesim
