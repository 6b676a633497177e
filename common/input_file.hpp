#pragma once
// Every file a user names (a cluster, a profile, a measured log, a scenario, a trace) is opened
// through here, so that a missing path, a directory or a file without read permission gets the same
// plain error naming the path and the reason, never a stream exception or an "empty input" that
// hides the real cause. Pipes and process substitutions (/dev/stdin, <(...)) are read like files.
#include <string>
#include <string_view>

namespace commstack {

// The whole file. Throws InputError "PATH: cannot read the WHAT: REASON" (no such file, a directory,
// permission denied, a read error, more than 256 MiB from a device or a pipe: /dev/zero).
std::string read_input_file(const std::string& path, std::string_view what = "file");

// The same checks without reading, for readers that stream the file themselves.
void check_input_file(const std::string& path, std::string_view what = "file");

// True when read_input_file would open the path (for "a preset name or a file" options).
bool is_input_file(const std::string& path);

// What a path that exists but is neither a regular file nor a directory is: "a character device"
// (/dev/zero, /dev/null), "a block device", "a pipe (FIFO)", "a socket" or "a special file"; "" for
// a regular file, a directory (symbolic links followed) or a path that does not exist. For inputs
// read by path more than once (a trace: its format is detected, then it is imported), which a device
// or a pipe cannot serve.
std::string special_file_kind(const std::string& path);

}  // namespace commstack
