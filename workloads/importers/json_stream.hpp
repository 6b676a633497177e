#pragma once
// Streams a large JSON trace file (plain or gzip, detected from the content) without holding the
// document in memory: nlohmann::json's SAX parser builds one small value per element of a named
// top-level array (Kineto's "traceEvents", Chakra's "workload_graph") and hands it to a callback,
// then drops it; every other top-level member is handed over whole (they are small: metadata).
// Memory stays bounded by the largest single element plus what the callbacks keep.
#include <cstdint>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

namespace commstack::workloads::importers {

struct StreamCallbacks {
  // One element of the streamed array, with its index in that array.
  std::function<void(nlohmann::json&& element, std::int64_t index)> element;
  // A top-level member other than the streamed array.
  std::function<void(const std::string& key, nlohmann::json&& value)> member;
};

// Throws InputError naming the file, the byte offset and the array element being read on a
// syntax error, a truncated or corrupt file, or when the top level is not an object. Returns the
// number of elements streamed.
std::int64_t stream_json_file(const std::string& path, const std::string& array_key, const StreamCallbacks& cb);

// True when the file starts with the gzip magic bytes.
bool is_gzip_file(const std::string& path);

}  // namespace commstack::workloads::importers
