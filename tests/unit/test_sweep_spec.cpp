// Sweep files: point order, stable ids, zip groups and the errors of malformed grids.
#include <doctest/doctest.h>

#include "common/error.hpp"
#include "sim/sweep/spec.hpp"

using namespace commstack;
using namespace commstack::sim::sweep;
using ojson = nlohmann::ordered_json;

namespace {

SweepSpec parse(const std::string& text) { return parse_sweep(ojson::parse(text), "sweep.json", "."); }

std::string error_of(const std::string& text) {
  try {
    parse(text);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

const char* kBase = R"("base": {"parallel": {"tp": 1, "pp": 1}, "cluster": {"fabric": {"oversubscription": 1}},
                                "nodes": 2, "list": [10, 20]})";

}  // namespace

TEST_CASE("sweep: the grid is a product in file order, the last axis varying fastest") {
  const auto spec = parse(std::string("{") + kBase +
                          R"(, "grid": {"parallel.tp": [2, 4, 8], "cluster.fabric.oversubscription": [1, 2]}})");
  const auto points = expand(spec);
  REQUIRE(points.size() == 6);
  const int tp[] = {2, 2, 4, 4, 8, 8};
  const int os[] = {1, 2, 1, 2, 1, 2};
  for (std::size_t i = 0; i < 6; ++i) {
    CHECK(points[i].index == i);
    CHECK(points[i].overrides["parallel.tp"] == tp[i]);
    CHECK(points[i].overrides["cluster.fabric.oversubscription"] == os[i]);
    // Keys in axis order, as written in the file.
    CHECK(points[i].overrides.begin().key() == "parallel.tp");
  }
  const auto job = apply_point(spec, points[3]);
  CHECK(job["parallel"]["tp"] == 4);
  CHECK(job["parallel"]["pp"] == 1);
  CHECK(job["cluster"]["fabric"]["oversubscription"] == 2);
  CHECK(job["nodes"] == 2);
}

TEST_CASE("sweep: zip axes vary together and multiply with the grid") {
  const auto spec = parse(std::string("{") + kBase +
                          R"(, "grid": {"nodes": [1, 2]}, "zip": [{"parallel.tp": [2, 4, 8], "parallel.pp": [8, 4, 2]}]})");
  const auto points = expand(spec);
  REQUIRE(points.size() == 6);
  for (const auto& p : points) {
    CHECK(p.overrides["parallel.tp"].get<int>() * p.overrides["parallel.pp"].get<int>() == 16);
  }
  CHECK(points[0].overrides["nodes"] == 1);
  CHECK(points[3].overrides["nodes"] == 2);
  CHECK(points[4].overrides["parallel.tp"] == 4);
}

TEST_CASE("sweep: point ids depend on the overrides only, not on position, axis order or path spelling") {
  const auto a = expand(parse(std::string("{") + kBase + R"(, "grid": {"parallel.tp": [2, 4], "nodes": [1, 2]}})"));
  const auto b = expand(parse(std::string("{") + kBase + R"(, "grid": {"nodes": [2, 1], "/parallel/tp": [8, 4, 2]}})"));
  auto id_of = [](const std::vector<Point>& pts, int tp, int nodes) {
    for (const auto& p : pts) {
      const auto& o = p.overrides;
      const int t = o.contains("parallel.tp") ? o["parallel.tp"].get<int>() : o["/parallel/tp"].get<int>();
      if (t == tp && o["nodes"] == nodes) return p.id;
    }
    return std::string("missing");
  };
  CHECK(id_of(a, 4, 2) == id_of(b, 4, 2));
  CHECK(id_of(a, 2, 1) == id_of(b, 2, 1));
  CHECK(id_of(a, 2, 1) != id_of(a, 2, 2));
  CHECK(a[0].id.size() == 16);
  // FNV-1a 64 of the empty string and of "a" (published test vectors).
  CHECK(stable_hash("") == "cbf29ce484222325");
  CHECK(stable_hash("a") == "af63dc4c8601ec8c");
}

TEST_CASE("sweep: array elements and pointer paths") {
  const auto spec = parse(std::string("{") + kBase + R"(, "grid": {"list.1": [30, 40]}})");
  const auto points = expand(spec);
  CHECK(apply_point(spec, points[1])["list"] == nlohmann::json::parse("[10, 40]"));
  CHECK(to_pointer("a.b.0", "x").to_string() == "/a/b/0");
  CHECK(to_pointer("/a.b/c", "x").to_string() == "/a.b/c");
}

TEST_CASE("sweep: malformed sweep files give one error naming the field") {
  CHECK(error_of(std::string("{") + kBase + R"(, "grid": {"parallel.tq": [2]}})") ==
        "sweep.json: /grid/parallel.tq: 'parallel.tq' (/parallel/tq) is not a field of the base job (sweep.json /base); "
        "only fields present in the base can be swept (add the field with its default value to the base job)");
  CHECK(error_of(std::string("{") + kBase + R"(, "grid": {"parallel.tp": []}})") ==
        "sweep.json: /grid/parallel.tp: expected a non-empty array of values, got an empty array");
  CHECK(error_of(std::string("{") + kBase + R"(, "grid": {"parallel.tp": 4}})") ==
        "sweep.json: /grid/parallel.tp: expected a non-empty array of values, got number");
  CHECK(error_of(std::string("{") + kBase + R"(, "grid": {"parallel.tp": [2, 4, 2]}})") ==
        "sweep.json: /grid/parallel.tp: the value 2 appears twice (each point must be distinct)");
  // 2.0 is the integer 2 to every integer field, so it repeats 2.
  CHECK(error_of(std::string("{") + kBase + R"(, "grid": {"parallel.tp": [2, 2.0]}})") ==
        "sweep.json: /grid/parallel.tp: the value 2.0 appears twice (each point must be distinct)");
  CHECK(error_of(std::string("{") + kBase + R"(, "grid": {"parallel..tp": [2]}})").find("has an empty segment") !=
        std::string::npos);
  CHECK(error_of(std::string("{") + kBase + R"(, "gird": {"parallel.tp": [2]}})") ==
        "sweep.json: /gird: unknown field; expected description, base, grid, zip");
  CHECK(error_of(R"({"grid": {"nodes": [1]}})").find("/base: missing") != std::string::npos);
  CHECK(error_of(std::string("{") + kBase + "}") ==
        "sweep.json: /grid: no axes; expected at least one field: [values] in grid or zip");
  CHECK(error_of(std::string("{") + kBase + R"(, "grid": {"nodes": [1]}, "zip": [{"nodes": [2]}]})") ==
        "sweep.json: /zip/0/nodes: the field /nodes is already swept by another axis");
  CHECK(error_of(std::string("{") + kBase + R"(, "zip": [{"parallel.tp": [2, 4], "parallel.pp": [1]}]})") ==
        "sweep.json: /zip/0/parallel.pp: has 1 values but 'parallel.tp' in the same zip group has 2; the axes of a "
        "zip group vary together and need equal lengths");
  CHECK(error_of(R"({"base": "does-not-exist.json", "grid": {"nodes": [1]}})") ==
        "./does-not-exist.json: cannot read the base job referenced by sweep.json /base: no such file");
}

TEST_CASE("sweep: a zip axis may repeat a value, but not a whole step") {
  const auto spec = parse(std::string("{") + kBase +
                          R"(, "zip": [{"parallel.tp": [8, 4, 8], "parallel.pp": [1, 2, 2]}]})");
  const auto points = expand(spec);
  REQUIRE(points.size() == 3);
  CHECK(points[2].overrides["parallel.tp"] == 8);
  CHECK(points[2].overrides["parallel.pp"] == 2);
  CHECK(error_of(std::string("{") + kBase + R"(, "zip": [{"parallel.tp": [8, 4, 8], "parallel.pp": [2, 2, 2]}]})") ==
        "sweep.json: /zip/0: step 2 repeats the values [8,2] of an earlier step (each point must be distinct)");
}

TEST_CASE("sweep: an axis over a section and one over a field inside it are the same field in two axes") {
  // Either order, grid or zip: the message names both axes (the later one set the field silently
  // before, and both orders had the same point ids).
  const std::string tail =
      " already sweeps (the same field in two axes: an axis replaces the whole value of its field); sweep "
      "either the section or its fields";
  CHECK(error_of(std::string("{") + kBase +
                 R"(, "grid": {"parallel": [{"tp": 2, "pp": 1}], "parallel.tp": [4]}})") ==
        "sweep.json: /grid/parallel.tp: the field /parallel/tp is inside /parallel, which the axis "
        "/grid/parallel" + tail);
  CHECK(error_of(std::string("{") + kBase +
                 R"(, "grid": {"/parallel/tp": [4], "parallel": [{"tp": 2, "pp": 1}]}})") ==
        "sweep.json: /grid/parallel: the field /parallel contains /parallel/tp, which the axis "
        "/grid/~1parallel~1tp" + tail);
  CHECK(error_of(std::string("{") + kBase + R"(, "grid": {"cluster.fabric": [{"oversubscription": 2}]},
                                                "zip": [{"cluster.fabric.oversubscription": [1]}]})")
            .starts_with("sweep.json: /zip/0/cluster.fabric.oversubscription: the field "
                         "/cluster/fabric/oversubscription is inside /cluster/fabric, which the axis "
                         "/grid/cluster.fabric already sweeps"));
  CHECK(error_of(std::string("{") + kBase + R"(, "grid": {"list": [[1, 2]], "list.1": [3]}})")
            .starts_with("sweep.json: /grid/list.1: the field /list/1 is inside /list, which the axis /grid/list"));
  // Fields that only share a name prefix are different fields.
  const std::string base = R"("base": {"comm": {"channels": 2}, "comm_extra": 1, "nodes": 2})";
  CHECK(expand(parse("{" + base + R"(, "grid": {"comm": [{"channels": 4}], "comm_extra": [3]}})")).size() == 1);
}
