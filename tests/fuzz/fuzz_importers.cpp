// Deterministic mutation fuzzer for the trace importers (workloads/importers).
//   commstack_fuzz_importers <kineto|chakra|nccl_log> <iterations> <max_seconds>
// Seeds: the project's sample traces (workloads/importers/samples, the small ones) plus a
// built-in minimal Kineto trace. Each iteration mutates one seed (byte flips, truncation,
// inserted bytes or JSON/log tokens, deleted spans) with a fixed-seed generator, writes it to a
// temporary file and imports it: the importer must return or throw commstack::InputError. Any
// other exception fails the run; crashes and memory errors fail it too (ASan build).
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <zlib.h>

#include "common/error.hpp"
#include "json_mutation.hpp"
#include "workloads/importers/chakra.hpp"
#include "workloads/importers/kineto.hpp"
#include "workloads/importers/nccl_log.hpp"

namespace fs = std::filesystem;
using namespace commstack::workloads;

namespace {

std::string read_any(const std::string& path) {  // plain or gzip
  gzFile f = gzopen(path.c_str(), "rb");
  std::string out;
  if (f == nullptr) return out;
  char buf[1 << 16];
  int n = 0;
  while ((n = gzread(f, buf, sizeof buf)) > 0) out.append(buf, static_cast<std::size_t>(n));
  gzclose(f);
  return out;
}

const char* kTinyKineto = R"({"distributedInfo": {"rank": 0, "world_size": 2}, "deviceProperties": [{"name": "NVIDIA A100"}],
"traceEvents": [
 {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#3", "pid": 1, "tid": 1, "ts": 1000, "dur": 900},
 {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 1010, "dur": 5, "args": {"correlation": 7}},
 {"ph": "X", "cat": "kernel", "name": "sm80_gemm", "pid": 0, "tid": 7, "ts": 1020, "dur": 100, "args": {"correlation": 7, "stream": 7}},
 {"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamWaitEvent", "pid": 1, "tid": 1, "ts": 1030, "dur": 2},
 {"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 1, "tid": 1, "ts": 1035, "dur": 20,
  "args": {"Collective name": "allreduce", "In msg nelems": 4096, "Out msg nelems": 4096, "dtype": "BFloat16",
           "Group size": 2, "Process Group Name": "0", "Process Group Ranks": "[0, 1]"}},
 {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 1040, "dur": 5, "args": {"correlation": 8}},
 {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_bf16_RING_LL", "pid": 0, "tid": 9, "ts": 1125, "dur": 40,
  "args": {"correlation": 8, "stream": 9}},
 {"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamSynchronize", "pid": 1, "tid": 1, "ts": 1050, "dur": 120},
 {"ph": "i", "cat": "cpu_instant_event", "name": "x", "ts": 1060}
]})";

const char* kTokens[] = {"\"ts\":", "\"dur\": -1", "\"ph\": \"X\"", "1e309", "-1", "null", "[", "]", "{", "}", ",", "\"", ":",
                         "\"Process Group Ranks\": \"[0, 99999999999]\"", "\"rank\": 7", "99999999999999999999", "nan",
                         "NCCL INFO ", "opCount ", "[nranks=0]", "count 18446744073709551615", "datatype 99", "\n", "\xff"};

std::string mutate(const std::string& seed, std::mt19937_64& rng) {
  std::string s = seed;
  const int ops = 1 + static_cast<int>(rng() % 6);
  for (int k = 0; k < ops; ++k) {
    const std::size_t pos = s.empty() ? 0 : rng() % (s.size() + 1);
    switch (rng() % 5) {
      case 0:
        if (!s.empty()) s[pos % s.size()] = static_cast<char>(s[pos % s.size()] ^ static_cast<char>(1u << (rng() % 8)));
        break;
      case 1: s.resize(pos); break;
      case 2: s.insert(pos, 1, static_cast<char>(rng() % 256)); break;
      case 3: s.insert(pos, kTokens[rng() % (sizeof(kTokens) / sizeof(kTokens[0]))]); break;
      default:
        if (pos < s.size()) s.erase(pos, rng() % 64);
    }
  }
  return s;
}

int fuzz_main(int argc, char** argv) {
  if (argc != 4 && argc != 5) {
    std::fprintf(stderr, "usage: %s <kineto|chakra|nccl_log> <iterations> <max_seconds> [generator seed]\n",
                 argv[0]);
    return 2;
  }
  const std::string target = argv[1];
  const long iterations = std::stol(argv[2]);
  const double max_seconds = std::stod(argv[3]);
  // CI runs the fixed default; another seed explores other inputs, as reproducibly (a long local run).
  const std::uint64_t generator_seed = argc == 5 ? std::stoull(argv[4]) : 0xC0FFEEu;
  const std::string samples = std::string(COMMSTACK_SOURCE_DIR) + "/workloads/importers/samples/";
  std::vector<std::string> seeds;
  std::string ext;
  std::function<void(const std::string&)> run;
  bool json_values = false;  // JSON seeds: half the mutations change values (json_mutation.hpp), not bytes
  if (target == "kineto") {
    seeds.emplace_back(kTinyKineto);
    ext = ".json";
    json_values = true;
    run = [](const std::string& p) { (void)importers::import_kineto({p}); };
  } else if (target == "chakra") {
    seeds.push_back(read_any(samples + "chakra-feeder/small_chakra.0.json"));
    ext = ".json";
    json_values = true;
    run = [](const std::string& p) { (void)importers::import_chakra({p}); };
  } else if (target == "nccl_log") {
    seeds.push_back(read_any(samples + "nccl-log-203/nccl-203-allreduce-2gpu.log"));
    seeds.push_back(read_any(samples + "nccl-log-torchtitan/torchtitan-1369-tp2.log"));
    ext = ".log";
    run = [](const std::string& p) { (void)importers::import_nccl_log({p}); };
  } else {
    std::fprintf(stderr, "unknown target '%s'\n", target.c_str());
    return 2;
  }
  for (const auto& s : seeds) {
    if (s.empty()) {
      std::fprintf(stderr, "a seed file under %s is missing\n", samples.c_str());
      return 2;
    }
  }
  const fs::path dir = fs::temp_directory_path() / ("commstack-fuzz-import-" + target);
  fs::create_directories(dir);
  const std::string path = (dir / ("rank-0" + ext)).string();
  std::mt19937_64 rng(generator_seed);
  const auto start = std::chrono::steady_clock::now();
  long done = 0, accepted = 0, rejected = 0;
  for (; done < iterations; ++done) {
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > max_seconds) break;
    const std::string& seed = seeds[static_cast<std::size_t>(rng() % seeds.size())];
    const std::string input = done < static_cast<long>(seeds.size()) ? seeds[static_cast<std::size_t>(done)]
                              : json_values && rng() % 2 == 0 ? commstack::fuzz::mutate_json_values(seed, rng)
                                                              : mutate(seed, rng);
    std::ofstream(path, std::ios::binary | std::ios::trunc) << input;
    try {
      run(path);
      ++accepted;
    } catch (const commstack::InputError&) {
      ++rejected;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "iteration %ld: unexpected exception (not InputError): %s\n", done, e.what());
      return 1;
    }
  }
  fs::remove_all(dir);
  std::printf("fuzz import %s: %ld inputs (%zu seeds), %ld imported, %ld rejected with InputError\n", target.c_str(), done,
              seeds.size(), accepted, rejected);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return fuzz_main(argc, argv);
  } catch (const std::exception& e) {  // a bad <iterations> / <max_seconds>, an unwritable temp dir
    std::fprintf(stderr, "commstack_fuzz_importers: %s\n", e.what());
    return 2;
  }
}
