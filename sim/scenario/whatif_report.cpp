// What-if reports (whatif_report.hpp).
#include "sim/scenario/whatif_report.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/error.hpp"
#include "common/gnuplot.hpp"

namespace commstack::sim::scenario {
namespace {

double r9(double x) {
  return std::round(x * 1e9) / 1e9;
}

// Replays are traces of one iteration of a few hundred milliseconds: their tables are in ms.
struct TimeUnit {
  double scale;
  const char* name;
};
TimeUnit unit_of(const WhatifResult& w) {
  return w.replay ? TimeUnit{1e3, "ms"} : TimeUnit{1, "s"};
}

std::string moved_text(const WhatifRow& row, TimeUnit u) {
  if (row.moved.empty()) return "nothing";
  return fmt::format("{} {:+.3f} {}", row.moved, row.moved_s * u.scale, u.name);
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

}  // namespace

std::string whatif_text(const WhatifResult& w) {
  std::string out;
  auto line = [&](const std::string& s) { out += s + "\n"; };
  const WhatifRow& base = w.rows.front();
  const TimeUnit u = unit_of(w);
  line(w.description.empty() ? fmt::format("what-if {}", w.scenario)
                             : fmt::format("what-if {}: {}", w.scenario, w.description));
  if (w.replay) {
    line(fmt::format("from {}; baseline: {}, {}", w.origin, base.result.value("cluster", ""),
                     base.result.value("config", "")));
  } else {
    line(fmt::format("from {}; baseline: {}, {}, {}", w.origin, base.result.value("cluster", ""),
                     base.result.value("model", ""), base.result.value("config", "")));
  }
  std::size_t width = 8;
  for (const auto& r : w.rows) width = std::max(width, r.name.size());
  line("");
  if (w.replay) {
    // A trace has no model FLOPs or tokens: the traced iteration time instead of MFU, tokens/s.
    line(fmt::format("{:<{}}  {:>12}  {:>8}  {:>10}  {}", "variant", width, "iteration ms", "speedup", "traced ms",
                     "moved most (vs baseline)"));
    for (const auto& r : w.rows) {
      line(fmt::format("{:<{}}  {:>12.3f}  {:>8.3f}  {:>10.3f}  {}", r.name, width, r.iteration_s * 1e3, r.speedup,
                       r.result.value("traced_s", 0.0) * 1e3, &r == &base ? "-" : moved_text(r, u)));
    }
  } else {
    line(fmt::format("{:<{}}  {:>11}  {:>8}  {:>6}  {:>12}  {}", "variant", width, "iteration s", "speedup", "MFU",
                     "tokens/s", "moved most (vs baseline)"));
    for (const auto& r : w.rows) {
      line(fmt::format("{:<{}}  {:>11.3f}  {:>8.3f}{:1} {:>5.1f}%  {:>12.0f}  {}", r.name, width,
                       r.iteration_s, r.speedup, r.per_token ? "*" : "", 100 * r.mfu, r.tokens_per_s,
                       &r == &base ? "-" : moved_text(r, u)));
    }
    if (std::any_of(w.rows.begin(), w.rows.end(), [](const WhatifRow& r) { return r.per_token; })) {
      line(
          "* per token (the ratio of tokens/s): the variant processes another number of tokens per "
          "iteration");
      line(
          "  (global batch x sequence length), so its iteration time is not comparable; its breakdown is "
          "per");
      line("  iteration");
    }
  }
  line("");
  line(fmt::format("time breakdown of the critical rank, {} (baseline) and change from the baseline (variants):",
                   u.name));
  std::size_t part_width = 8;
  for (const auto& p : w.parts) part_width = std::max(part_width, p.size());
  std::string head = fmt::format("{:<{}}", "variant", width);
  for (const auto& p : w.parts) head += fmt::format("  {:>{}}", p, part_width);
  line(head);
  for (const auto& r : w.rows) {
    std::string l = fmt::format("{:<{}}", r.name, width);
    for (std::size_t k = 0; k < w.parts.size(); ++k) {
      l += &r == &base ? fmt::format("  {:>{}.3f}", r.breakdown_s[k] * u.scale, part_width)
                       : fmt::format("  {:>+{}.3f}", r.delta_s[k] * u.scale, part_width);
    }
    line(l);
  }
  line("");
  line("variants (overrides of the baseline):");
  for (const auto& r : w.rows) {
    if (&r == &base) continue;
    line(fmt::format("  {}: {}{}", r.name, r.overrides.dump(),
                     r.description.empty() ? std::string() : fmt::format("\n      {}", r.description)));
    if (r.result.value("config", "") != base.result.value("config", "") ||
        r.result.value("cluster", "") != base.result.value("cluster", "")) {
      line(fmt::format("      runs {}, {}", r.result.value("cluster", ""), r.result.value("config", "")));
    }
  }
  // The same note (e.g. the vocabulary padding) usually applies to several runs: print it once.
  std::vector<std::pair<std::string, std::vector<std::string>>> notes;
  for (const auto& r : w.rows) {
    for (const auto& n : r.result.value("notes", nlohmann::ordered_json::array())) {
      const std::string text = n.get<std::string>();
      auto it = std::find_if(notes.begin(), notes.end(), [&](const auto& e) { return e.first == text; });
      if (it == notes.end())
        notes.push_back({text, {r.name}});
      else
        it->second.push_back(r.name);
    }
  }
  if (!notes.empty()) {
    line("");
    line("notes:");
    for (const auto& [text, runs] : notes) {
      line(fmt::format("  {}{}", text,
                       runs.size() == w.rows.size() ? std::string(" (all runs)")
                                                    : fmt::format(" ({})", fmt::join(runs, ", "))));
    }
  }
  return out;
}

std::string whatif_csv(const WhatifResult& w) {
  // Replays: traced_s instead of mfu and tokens_per_s (a trace has no model FLOPs or tokens).
  std::string out = w.replay ? "variant,iteration_s,speedup,traced_s" : "variant,iteration_s,speedup,mfu,tokens_per_s";
  for (const auto& p : w.parts) out += fmt::format(",{}_s", p);
  for (const auto& p : w.parts) out += fmt::format(",delta_{}_s", p);
  out += ",moved,moved_s\n";
  for (const auto& r : w.rows) {
    if (w.replay) {
      out += fmt::format("{},{:.9f},{:.9f},{:.9f}", csv_field(r.name), r.iteration_s, r.speedup,
                         r.result.value("traced_s", 0.0));
    } else {
      out += fmt::format("{},{:.9f},{:.9f},{:.9f},{:.3f}", csv_field(r.name), r.iteration_s, r.speedup, r.mfu,
                         r.tokens_per_s);
    }
    for (double v : r.breakdown_s) out += fmt::format(",{:.9f}", v);
    for (double v : r.delta_s) out += fmt::format(",{:.9f}", v);
    out += fmt::format(",{},{:.9f}\n", r.moved, r.moved_s);
  }
  return out;
}

nlohmann::ordered_json whatif_json(const WhatifResult& w) {
  nlohmann::ordered_json j;
  j["scenario"] = w.scenario;
  j["description"] = w.description;
  j["origin"] = w.origin;
  j["kind"] = w.replay ? "replay" : "training";
  auto& runs = j["runs"] = nlohmann::ordered_json::array();
  for (const auto& r : w.rows) {
    nlohmann::ordered_json o;
    o["name"] = r.name;
    o["description"] = r.description;
    o["overrides"] = r.overrides;
    o["iteration_s"] = r.iteration_s;
    o["speedup"] = r9(r.speedup);
    if (!w.replay) o["speedup_per"] = r.per_token ? "token" : "iteration";
    if (w.replay) {
      o["traced_s"] = r.result.value("traced_s", 0.0);
    } else {
      o["mfu"] = r.mfu;
      o["tokens_per_s"] = r.tokens_per_s;
    }
    // Built apart and then moved in: ordered_json keeps its members in a vector, so a reference
    // to one member does not survive the insertion of the next.
    nlohmann::ordered_json b = nlohmann::ordered_json::object();
    nlohmann::ordered_json d = nlohmann::ordered_json::object();
    for (std::size_t k = 0; k < w.parts.size(); ++k) {
      b[w.parts[k]] = r9(r.breakdown_s[k]);
      d[w.parts[k]] = r9(r.delta_s[k]);
    }
    o["breakdown_s"] = std::move(b);
    o["delta_s"] = std::move(d);
    o["moved"] = r.moved;
    o["moved_s"] = r9(r.moved_s);
    o["result"] = r.result;
    runs.push_back(std::move(o));
  }
  return j;
}

void whatif_plot(const WhatifResult& w, const std::string& png_path) {
  const PlotFiles files = plot_files(png_path);
  const auto& [png, dat, gp] = files;
  {
    std::ofstream out(dat);
    if (!out) throw InputError(fmt::format("--plot: cannot write '{}'", dat.string()));
    out << "# commstack whatif " << w.scenario << ": one row per run (tab-separated)\n#";
    out << "index\tvariant\tspeedup\titeration_s";
    for (const auto& p : w.parts) out << "\t" << p << "_s";
    out << "\n";
    for (std::size_t i = 0; i < w.rows.size(); ++i) {
      const auto& r = w.rows[i];
      // gnuplot reads a double quote in a data column as the start of a quoted string, with no
      // escape, and loses the row: the column gets ' instead (the plot labels are exact, from the .gp).
      std::string name = r.name;
      std::replace(name.begin(), name.end(), '"', '\'');
      out << fmt::format("{}\t{}\t{:.6f}\t{:.6f}", i, name, r.speedup, r.iteration_s);
      for (double v : r.breakdown_s) out << fmt::format("\t{:.6f}", v);
      out << "\n";
    }
    if (!out) throw InputError(fmt::format("--plot: writing '{}' failed", dat.string()));
  }
  {
    std::ofstream out(gp);
    if (!out) throw InputError(fmt::format("--plot: cannot write '{}'", gp.string()));
    const std::string d = gnuplot_quote(dat.filename().string());
    out << "# Written by commstack whatif; run `gnuplot " << gp.filename().string()
        << "` in this folder to redraw.\n";
    // noenhanced: names are shown as written (no _ subscripts, ^ superscripts, {} groups).
    out << "set terminal pngcairo noenhanced size 1200,1000 font ',10'\n";
    out << "set output " << gnuplot_quote(png.filename().string()) << "\n";
    out << "set datafile separator '\\t'\n";
    // The x labels, one per run in .dat order (gnuplot 5.2 arrays), in single-quoted strings that
    // hold any name exactly; the .dat's variant column cannot hold a double quote.
    out << "array variant[" << w.rows.size() << "] = [";
    for (std::size_t i = 0; i < w.rows.size(); ++i) out << (i > 0 ? ", " : "") << gnuplot_quote(w.rows[i].name);
    out << "]\n";
    out << "set multiplot layout 2,1 title "
        << gnuplot_quote(w.description.empty() ? fmt::format("what-if {}", w.scenario)
                                               : fmt::format("what-if {}: {}", w.scenario, w.description))
        << " font ',11'\n";
    out << "set style data histograms\nset style fill solid 0.85 border -1\nset boxwidth 0.7\n";
    out << "set xtics rotate by -15 scale 0\nset grid ytics\nset key outside right top\n";
    out << "set ylabel 'speedup over the baseline (x)'\nset yrange [0:*]\nset offsets 0,0,0.15,0\n";
    out << "plot " << d << " using 3:xtic(variant[int($1) + 1]) title 'speedup' lc rgb '#4472c4', \\\n     " << d
        << " using 1:3:(sprintf('%.3f', $3)) with labels offset 0,0.8 notitle\n";
    out << "set style histogram rowstacked\nset ylabel 'iteration time, s (critical rank)'\nset offsets "
           "0,0,0,0\n";
    const std::vector<std::string> colors = {"#7f7f7f", "#4472c4", "#70ad47", "#ffc000",
                                             "#ed7d31", "#a5a5a5", "#264478"};
    out << "plot ";
    for (std::size_t k = 0; k < w.parts.size(); ++k) {
      if (k > 0) out << ", \\\n     ";
      out << d << " using " << (5 + k) << (k == 0 ? ":xtic(variant[int($1) + 1])" : "") << " title "
          << gnuplot_quote(w.parts[k]) << " lc rgb '" << colors[k] << "'";
    }
    out << "\nunset multiplot\n";
    if (!out) throw InputError(fmt::format("--plot: writing '{}' failed", gp.string()));
  }
  run_gnuplot(files, "--plot");
}

}  // namespace commstack::sim::scenario
