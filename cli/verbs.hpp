#pragma once
// Verb registry. Each verb file defines one `register_<verb>(CLI::App&)` that adds a subcommand
// and stores a callback; run_selected_verb() runs the one the user picked, outside CLI11's
// parse step so errors are reported uniformly by main().
#include <functional>

#include <CLI/CLI.hpp>

namespace commstack::cli {

using VerbAction = std::function<void()>;

// Records the action to run when `sub` was selected.
void on_selected(CLI::App* sub, VerbAction action);

void register_topo(CLI::App& app);
void register_collective(CLI::App& app);
void register_validate(CLI::App& app);
void register_calibrate(CLI::App& app);
void register_train(CLI::App& app);
void register_whatif(CLI::App& app);
void register_plan(CLI::App& app);
void register_replay(CLI::App& app);
void register_sweep(CLI::App& app);

void register_all_verbs(CLI::App& app);
void run_selected_verb(CLI::App& app);

}  // namespace commstack::cli
