// commstack: thin command-line front end. Each verb lives in its own cli/verb_*.cpp file and
// registers a CLI11 subcommand; this file only wires them and maps errors to exit codes.
#include <cstdio>
#include <exception>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli/verbs.hpp"
#include "common/error.hpp"

int main(int argc, char** argv) {
  CLI::App app{"commstack: predict the communication time of LLM training on GPU clusters"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "commstack 0.1.0");
  commstack::cli::register_all_verbs(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const commstack::InputError& e) {
    // Raised by option validators (sizes, presets) during parsing.
    fmt::print(stderr, "commstack: error: {}\n", e.what());
    return 2;
  }
  try {
    commstack::cli::run_selected_verb(app);
  } catch (const commstack::InputError& e) {
    fmt::print(stderr, "commstack: error: {}\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "commstack: internal error: {}\n", e.what());
    return 3;
  }
  return 0;
}
