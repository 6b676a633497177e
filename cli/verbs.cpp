#include "cli/verbs.hpp"

#include <map>

namespace commstack::cli {
namespace {
std::map<CLI::App*, VerbAction>& actions() {
  static std::map<CLI::App*, VerbAction> table;
  return table;
}
}  // namespace

void on_selected(CLI::App* sub, VerbAction action) { actions()[sub] = std::move(action); }

void register_all_verbs(CLI::App& app) {
  register_topo(app);
  register_collective(app);
  register_validate(app);
  register_calibrate(app);
  register_train(app);
  register_whatif(app);
  register_plan(app);
  register_replay(app);
  register_sweep(app);
}

void run_selected_verb(CLI::App& app) {
  for (CLI::App* sub : app.get_subcommands()) {
    auto it = actions().find(sub);
    if (it != actions().end()) it->second();
  }
}

}  // namespace commstack::cli
