// placeholder, replaced by the topology work
#include "cli/verbs.hpp"
namespace commstack::cli {
void register_topo(CLI::App& app) { (void)app; }
}
