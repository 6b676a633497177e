#pragma once
// One error type for everything a user gave us that we cannot use. The CLI prints what() and
// exits with status 2; the message must name the input (file or flag), the field, and what was
// expected, in plain words.
#include <stdexcept>
#include <string>

namespace commstack {

class InputError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

}  // namespace commstack
