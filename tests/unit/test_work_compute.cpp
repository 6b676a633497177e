#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include "approx.hpp"

#include <string>
#include <utility>

#include "common/error.hpp"
#include "workloads/compute/compute_model.hpp"
#include "workloads/compute/gpu_profile.hpp"

using namespace commstack;
using namespace commstack::workloads;

TEST_CASE("work: roofline compute time is FLOP-bound for big GEMMs and bandwidth-bound for elementwise ops") {
  ComputeProfile h100 = builtin_compute_profile("h100-sxm5-datasheet");
  Op gemm;
  gemm.kind = OpKind::compute;
  gemm.cclass = ComputeClass::gemm;
  gemm.flops = 2.0 * 8192 * 8192 * 8192;
  gemm.mem_bytes = 2.0 * 3 * 8192 * 8192;
  CHECK(compute_time(h100, gemm, Precision::bf16) == approx(gemm.flops / 989.4e12));
  CHECK(compute_time(h100, gemm, Precision::fp8) == approx(gemm.flops / 1978.9e12));
  Op ew;
  ew.kind = OpKind::compute;
  ew.cclass = ComputeClass::elementwise;
  ew.mem_bytes = 1e9;
  CHECK(compute_time(h100, ew, Precision::bf16) == approx(1e9 / 3.35e12));
  Op coll;
  coll.kind = OpKind::collective;
  coll.bytes = 1 << 30;
  CHECK(compute_time(h100, coll, Precision::bf16) == 0);
  // Efficiency scales the FLOP term only.
  ComputeProfile p = parse_compute_profile(nlohmann::json::parse(R"({"name":"x","provenance":"test",
      "peak_bf16_flops":1e15,"hbm_bytes_per_s":1e12,"memory_bytes":8e10,"efficiency":{"gemm":0.5}})"), "prof.json");
  CHECK(compute_time(p, gemm, Precision::bf16) == approx(gemm.flops / 0.5e15));
  CHECK_THROWS_WITH_AS(compute_time(p, gemm, Precision::fp8), doctest::Contains("peak_fp8_flops"), InputError);
  CHECK_THROWS_WITH_AS(compute_time(builtin_compute_profile("a100-80gb"), gemm, Precision::fp8),
                       doctest::Contains("fp8"), InputError);
}

TEST_CASE("work: HBM efficiency divides the memory side of the roofline only") {
  ComputeProfile p = parse_compute_profile(nlohmann::json::parse(R"({"name":"x","provenance":"test",
      "peak_bf16_flops":1e15,"hbm_bytes_per_s":1e12,"memory_bytes":8e10,"efficiency":{"gemm":0.5,"memory":0.8}})"),
                                           "prof.json");
  CHECK(p.eff_memory == 0.8);
  Op ew;
  ew.kind = OpKind::compute;
  ew.cclass = ComputeClass::elementwise;
  ew.mem_bytes = 1e9;
  CHECK(compute_time(p, ew, Precision::bf16) == approx(1e9 / 0.8e12));
  // A GEMM with arithmetic intensity 1000 FLOP/byte stays FLOP-bound: 0.5 PFLOP/s vs 0.8 TB/s.
  Op gemm;
  gemm.kind = OpKind::compute;
  gemm.cclass = ComputeClass::gemm;
  gemm.flops = 1e12;
  gemm.mem_bytes = 1e9;
  CHECK(compute_time(p, gemm, Precision::bf16) == approx(1e12 / 0.5e15));
  // At 100 FLOP/byte the same GEMM is bandwidth-bound (ridge point 0.5e15 / 0.8e12 = 625 FLOP/byte).
  gemm.flops = 1e11;
  CHECK(compute_time(p, gemm, Precision::bf16) == approx(1e9 / 0.8e12));
  CHECK(builtin_compute_profile("a100-80gb-datasheet").eff_memory == 1);
  CHECK_THROWS_WITH_AS(parse_compute_profile(nlohmann::json::parse(R"({"name":"x","provenance":"p","peak_bf16_flops":1e15,
      "hbm_bytes_per_s":1e12,"memory_bytes":8e10,"efficiency":{"memory":0}})"), "prof.json"),
                       doctest::Contains("prof.json: $.efficiency.memory"), InputError);
}

TEST_CASE("work: compute profile parser checks ranges, provenance and unknown fields") {
  auto parse = [](const char* text) { return parse_compute_profile(nlohmann::json::parse(text), "prof.json"); };
  CHECK_THROWS_WITH_AS(parse(R"({"name":"x","provenance":"","peak_bf16_flops":1e15,"hbm_bytes_per_s":1e12,"memory_bytes":8e10})"),
                       doctest::Contains("$.provenance"), InputError);
  CHECK_THROWS_WITH_AS(parse(R"({"name":"x","provenance":"p","peak_bf16_flops":1e15,"hbm_bytes_per_s":1e12,"memory_bytes":8e10,
                               "efficiency":{"gemm":1.5}})"), doctest::Contains("prof.json: $.efficiency.gemm"), InputError);
  CHECK_THROWS_WITH_AS(parse(R"({"name":"x","provenance":"p","peak_bf16_flops":1e15,"hbm_bytes_per_s":1e12,"memory_bytes":8e10,
                               "efficency":{}})"), doctest::Contains("$.efficency: unknown field"), InputError);
  CHECK_THROWS_WITH_AS(parse(R"({"name":"x","provenance":"p","peak_bf16_flops":-1,"hbm_bytes_per_s":1e12,"memory_bytes":8e10})"),
                       doctest::Contains("$.peak_bf16_flops"), InputError);
  CHECK_THROWS_WITH_AS(builtin_compute_profile("tpu"),
                       doctest::Contains("known: a100-40gb, a100-40gb-datasheet, a100-80gb"), InputError);
  // Capacity: the datasheet's decimal GB (the NVML total's 7% beyond it is left to the runtime).
  CHECK(builtin_compute_profile("h200-sxm").memory_bytes == 141e9);
  // The 40 GB A100 is not the 80 GB one: half the memory, HBM2 at 1555 GB/s.
  CHECK(builtin_compute_profile_for_gpu("A100-SXM4-40GB") == "a100-40gb");
  CHECK(builtin_compute_profile_for_gpu("A100-SXM4-80GB") == "a100-80gb");
  CHECK(builtin_compute_profile("a100-40gb").memory_bytes == 40e9);
  CHECK(builtin_compute_profile("a100-40gb").hbm_bytes_per_s == 1555e9);
}

TEST_CASE("work: the calibrated built-in profiles are the ones the reproductions fitted, with the same peaks") {
  for (const auto& row : {std::pair{"a100-80gb", "results/megatron-sc21-table1/a100-fitted.json"},
                          std::pair{"h100-sxm5", "results/nemo-24.07-h100/h100-fitted.json"}}) {
    const char* name = row.first;  // not a structured binding: CAPTURE's lambda (clang < 16)
    const char* file = row.second;
    CAPTURE(name);
    const ComputeProfile b = builtin_compute_profile(name);
    const ComputeProfile f = load_compute_profile_file(std::string(COMMSTACK_SOURCE_DIR) + "/" + file);
    CHECK(b.eff_gemm == f.eff_gemm);
    CHECK(b.eff_attention == f.eff_attention);
    CHECK(b.eff_memory == f.eff_memory);
    CHECK(b.peak_bf16_flops == f.peak_bf16_flops);
    CHECK(b.peak_fp8_flops == f.peak_fp8_flops);
    CHECK(b.hbm_bytes_per_s == f.hbm_bytes_per_s);
    CHECK(b.memory_bytes == f.memory_bytes);
    CHECK(b.provenance.find(file) != std::string::npos);  // says where the numbers come from
    const ComputeProfile d = builtin_compute_profile(std::string(name) + "-datasheet");
    CHECK(d.eff_gemm == 1);
    CHECK(d.eff_memory == 1);
    CHECK(d.peak_bf16_flops == b.peak_bf16_flops);
  }
  // H200 is H100 compute with more and faster HBM: the H100 efficiencies, its own bandwidth.
  CHECK(builtin_compute_profile("h200-sxm").eff_gemm == builtin_compute_profile("h100-sxm5").eff_gemm);
  CHECK(builtin_compute_profile("h200-sxm").hbm_bytes_per_s == 4.8e12);
}
