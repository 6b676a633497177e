#include <doctest/doctest.h>

#include "approx.hpp"

#include "common/error.hpp"
#include "common/units.hpp"

using namespace commstack;

TEST_CASE("parse_bytes accepts nccl-tests style sizes") {
  CHECK(parse_bytes("8", "--min-bytes") == 8);
  CHECK(parse_bytes("64K", "x") == 65536);
  CHECK(parse_bytes("16M", "x") == 16777216);
  CHECK(parse_bytes("16G", "x") == 17179869184ULL);
  CHECK(parse_bytes("1GB", "x") == 1073741824ULL);
  CHECK(parse_bytes("0.5K", "x") == 512);
}

TEST_CASE("parse_bytes rejects negatives, garbage and fractions with the flag name") {
  CHECK_THROWS_WITH_AS(parse_bytes("-1", "--max-bytes"), doctest::Contains("--max-bytes"), InputError);
  CHECK_THROWS_AS(parse_bytes("abc", "x"), InputError);
  CHECK_THROWS_AS(parse_bytes("12Q", "x"), InputError);
  CHECK_THROWS_AS(parse_bytes("1.5", "x"), InputError);
  CHECK_THROWS_AS(parse_bytes("", "x"), InputError);
}

TEST_CASE("bandwidth and latency units") {
  CHECK(parse_bandwidth("400Gbps", "x") == approx(50e9));
  CHECK(parse_bandwidth("450GB/s", "x") == approx(450e9));
  CHECK(parse_bandwidth("75Gb/s", "x") == approx(9.375e9));
  CHECK(parse_latency("850ns", "x") == approx(850e-9));
  CHECK(parse_latency("2us", "x") == approx(2e-6));
  CHECK_THROWS_AS(parse_bandwidth("0Gbps", "x"), InputError);
  CHECK_THROWS_AS(parse_bandwidth("10 furlongs", "x"), InputError);
  CHECK_THROWS_AS(parse_latency("-1us", "x"), InputError);
  CHECK(format_bytes(17179869184ULL) == "16G");
  CHECK(format_bytes(1000) == "1000");
}
