#include "workloads/importers/load_trace.hpp"

#include <algorithm>
#include <filesystem>
#include <map>

#include <fmt/format.h>
#include <zlib.h>

#include "common/error.hpp"
#include "workloads/importers/chakra.hpp"
#include "workloads/importers/kineto.hpp"
#include "workloads/importers/nccl_log.hpp"
#include "workloads/importers/otf2_import.hpp"

namespace commstack::workloads::importers {

std::string to_string(TraceFormat f) {
  switch (f) {
    case TraceFormat::unknown: return "unknown";
    case TraceFormat::kineto: return "kineto";
    case TraceFormat::chakra: return "chakra";
    case TraceFormat::nccl_log: return "nccl-log";
  }
  return "?";
}

TraceFormat detect_format(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) return TraceFormat::unknown;
  std::string head(1 << 20, '\0');
  const int n = gzread(f, head.data(), static_cast<unsigned>(head.size()));
  gzclose(f);
  head.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
  const auto first = head.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && head[first] == '{') {
    if (head.find("\"traceEvents\"") != std::string::npos) return TraceFormat::kineto;
    if (head.find("\"workload_graph\"") != std::string::npos) return TraceFormat::chakra;
    return TraceFormat::unknown;
  }
  if (head.find("NCCL INFO") != std::string::npos) return TraceFormat::nccl_log;
  return TraceFormat::unknown;
}

ImportedTrace load_trace(const std::string& path, const LoadOptions& options) {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::vector<std::string> files;
  std::vector<std::string> skipped;
  // An OTF2 archive (Score-P, or commstack's own --otf2 output) is one trace of all ranks: its
  // anchor file, or the directory that holds traces.otf2 next to traces.def and traces/.
  if (fs::is_regular_file(path, ec) && fs::path(path).extension() == ".otf2") return import_otf2(path);
  if (fs::is_directory(path, ec) && fs::is_regular_file(fs::path(path) / "traces.otf2", ec)) {
    return import_otf2((fs::path(path) / "traces.otf2").string());
  }
  if (fs::is_directory(path, ec)) {
    for (const auto& e : fs::directory_iterator(path, ec)) {
      if (e.is_regular_file()) files.push_back(e.path().string());
    }
    std::sort(files.begin(), files.end());
    if (files.empty()) throw InputError(fmt::format("--trace {}: the directory has no files", path));
  } else if (fs::is_regular_file(path, ec)) {
    files.push_back(path);
  } else {
    throw InputError(fmt::format("--trace {}: no such file or directory", path));
  }
  std::map<TraceFormat, std::vector<std::string>> by_format;
  for (const auto& f : files) {
    const TraceFormat k = detect_format(f);
    if (k == TraceFormat::unknown) skipped.push_back(f);
    else by_format[k].push_back(f);
  }
  if (by_format.empty()) {
    throw InputError(fmt::format("--trace {}: not a Kineto/PyTorch profiler JSON (\"traceEvents\"), Chakra JSON "
                                 "(\"workload_graph\"), NCCL_DEBUG=INFO log or OTF2 archive (traces.otf2)",
                                 files.size() == 1 ? files.front() : path));
  }
  if (by_format.size() > 1) {
    std::vector<std::string> kinds;
    kinds.reserve(by_format.size());
    for (const auto& [k, v] : by_format) kinds.push_back(fmt::format("{} {}", v.size(), to_string(k)));
    throw InputError(fmt::format("--trace {}: files of several formats ({}); give one format per directory", path, fmt::join(kinds, ", ")));
  }
  const auto& [kind, list] = *by_format.begin();
  ImportedTrace t;
  switch (kind) {
    case TraceFormat::kineto: t = import_kineto(list, KinetoOptions{options.iteration}); break;
    case TraceFormat::chakra: t = import_chakra(list); break;
    case TraceFormat::nccl_log: t = import_nccl_log(list); break;
    case TraceFormat::unknown: break;
  }
  for (const auto& s : skipped) t.warnings.push_back(fmt::format("{}: not a trace file; skipped", s));
  return t;
}

}  // namespace commstack::workloads::importers
