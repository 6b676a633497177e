#include "sim/report/otf2_errors.hpp"

#include <otf2/otf2.h>

#include <cstdarg>
#include <cstdio>

namespace commstack::sim {
namespace {

std::string& message() {
  thread_local std::string text;
  return text;
}

OTF2_ErrorCode remember_otf2_error(void*, const char*, uint64_t, const char*, OTF2_ErrorCode code, const char* format,
                                   va_list args) {
  char text[512] = {};
  if (format != nullptr) std::vsnprintf(text, sizeof text, format, args);
  message() = text;
  return code;
}

}  // namespace

void capture_otf2_errors() {
  OTF2_Error_RegisterCallback(remember_otf2_error, nullptr);
  message().clear();
}

const std::string& last_otf2_message() { return message(); }

}  // namespace commstack::sim
