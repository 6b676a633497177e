// commstack: thin command-line front end. Each verb lives in its own cli/verb_*.cpp file and
// registers a CLI11 subcommand; this file only wires them and maps errors to exit codes.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <CLI/CLI.hpp>

#include "cli/interrupt.hpp"
#include "cli/verbs.hpp"
#include "common/error.hpp"

namespace {

// What a message may echo of the command line and should cap: each argument, the value of
// "--flag=value", and the file of a run spec "FILE@key=value" (validate --measured, calibrate
// --input). Set by run().
std::vector<std::string> g_user_values;

// A path is shown whole so that the message names the file: one that exists, or one that reads as a
// path (a '/', no blank or control character, at most PATH_MAX): an output to write, a mistyped input.
bool shown_whole(const std::string& value) {
  std::error_code ec;
  if (std::filesystem::exists(value, ec)) return true;
  const bool plain = std::all_of(value.begin(), value.end(),
                                 [](char c) { return std::isgraph(static_cast<unsigned char>(c)) != 0; });
  return plain && value.find('/') != std::string::npos && value.size() <= 4096;
}

void collect_user_values(int argc, char** argv) {
  const auto add = [](const std::string& value) {
    if (value.size() > commstack::kMaxEchoedChars && !shown_whole(value)) g_user_values.push_back(value);
  };
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    add(arg);
    if (const auto eq = arg.find('='); arg.starts_with("--") && eq != std::string::npos)
      add(arg.substr(eq + 1));
    if (const auto at = arg.find('@'); at != std::string::npos) add(arg.substr(0, at));
  }
}

// Every "commstack: error: ..." line: a long value from the command line (not a path) is echoed
// capped (common/error.hpp echo_value), wherever in the code the message was written, and control
// characters a value brought in are written out, so the error stays one line.
void print_error(const std::string& message) {
  fmt::print(stderr, "commstack: error: {}\n",
             commstack::escape_control_chars(commstack::cap_echoed_values(message, g_user_values)));
}

// A command-line mistake, in the same form as an unusable input: "commstack: error: ...", status 2.
// CLI11 checks required options before it reports unexpected arguments, so a mistyped option
// (--clsuter) would read "--cluster is required"; the arguments nothing took are named first.
int usage_error(const CLI::App& app, const CLI::ParseError& e) {
  std::vector<std::string> extras = app.remaining(true);
  std::string message = e.what();
  const CLI::App* verb = app.get_subcommands().empty() ? nullptr : app.get_subcommands().front();
  std::vector<std::string> verbs;
  for (const auto* sub : app.get_subcommands({})) verbs.push_back(sub->get_name());
  if (verb == nullptr) {
    message = extras.empty()
                  ? fmt::format("a command is needed: {}", fmt::join(verbs, ", "))
                  : fmt::format("unknown command '{}'; commands: {}", extras.front(), fmt::join(verbs, ", "));
  } else if (!extras.empty()) {
    message = fmt::format("{}: unexpected argument{} {} (see commstack {} --help)", verb->get_name(),
                          extras.size() > 1 ? "s" : "", fmt::join(extras, " "), verb->get_name());
  }
  // CLI11's "--nodes: 1 required TEXT missing": the option came last, without its value.
  if (const auto at = message.find(": 1 required TEXT missing"); at != std::string::npos)
    message = message.substr(0, at) + ": expected a value after it";
  print_error(message);
  if (verb == nullptr || extras.empty())
    fmt::print(stderr, "Run commstack {}--help for the options.\n",
               verb != nullptr ? verb->get_name() + " " : "");
  return 2;
}

int run(int argc, char** argv) {
  collect_user_values(argc, argv);
  CLI::App app{"commstack: predict the communication time of LLM training on GPU clusters"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "commstack 0.1.0");
  commstack::cli::register_all_verbs(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success))
      return app.exit(e);  // --help, --version
    return usage_error(app, e);
  } catch (const commstack::InputError& e) {
    // Raised by option validators (sizes, presets) during parsing.
    print_error(e.what());
    return 2;
  }
  try {
    commstack::cli::run_selected_verb(app);
  } catch (const commstack::cli::Interrupted&) {
    return 130;  // stopped by Ctrl-C after printing what it had (cli/interrupt.hpp)
  } catch (const commstack::InputError& e) {
    print_error(e.what());
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "commstack: internal error: {}\n", commstack::escape_control_chars(e.what()));
    return 3;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // run() catches what the verbs throw; this catches what escapes around them (out of memory while
  // setting up the command line, an error while printing one), so that no exception ends in
  // std::terminate.
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "commstack: internal error: %s\n", e.what());
    return 3;
  } catch (...) {
    std::fprintf(stderr, "commstack: internal error: an unknown exception\n");
    return 3;
  }
}
