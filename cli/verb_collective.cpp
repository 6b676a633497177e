// placeholder, replaced by the collective work
#include "cli/verbs.hpp"
namespace commstack::cli {
void register_collective(CLI::App& app) { (void)app; }
}
