#pragma once
// libotf2 prints its errors to stderr unless a callback takes them. The OTF2 writer and reader route
// them into a per-thread buffer instead, so that the message ends up in our own InputError.
#include <string>

namespace commstack::sim {

// Installs the callback (idempotent) and clears the last message.
void capture_otf2_errors();
// The last message libotf2 reported on this thread since capture_otf2_errors() ("" if none).
const std::string& last_otf2_message();

}  // namespace commstack::sim
