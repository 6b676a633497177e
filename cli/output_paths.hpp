#pragma once
// Outputs must not overwrite inputs: `calibrate --input run.txt --output run.txt` or `topo
// --from-nccl-xml node.xml --write-cluster node.xml` would read the file, then replace the only copy
// of a measurement with what was computed from it. Every verb that writes files checks its output
// paths against the input files named on the same command line before writing anything.
#include <string>
#include <string_view>
#include <vector>

namespace commstack::cli {

// A file a verb reads, with the flag that named it. `or_name`: the flag takes a preset or shipped
// name as well as a file (--cluster dgx-h100), so the path counts only when it exists as a file.
struct InputArg {
  std::string_view flag;
  std::string path;
  bool or_name = false;
};

// A path a verb writes. `tree`: a directory the verb replaces with its contents (an OTF2 archive's
// traces/), so any input inside it is overwritten too.
struct WrittenPath {
  std::string path;
  bool tree = false;
};

// True when `a` and `b` are one file: std::filesystem::equivalent when both exist (hard links,
// symlinks, ./x and x), otherwise their weakly_canonical forms.
bool same_file(const std::string& a, const std::string& b);

// Throws InputError "OUT_FLAG OUT: [writes PATH, ]the same file as IN_FLAG IN; ..." when any written
// path is (or, for a tree, holds) one of the inputs. Empty paths are ignored.
void refuse_overwriting_inputs(std::string_view out_flag, const std::string& out,
                               const std::vector<WrittenPath>& written, const std::vector<InputArg>& inputs);

// The same for an output that writes only the one file it names.
void refuse_overwriting_inputs(std::string_view out_flag, const std::string& out,
                               const std::vector<InputArg>& inputs);

// What `--plot FILE.png` writes: the PNG and its .dat and .gp next to it (common/gnuplot.hpp).
std::vector<WrittenPath> plot_written_paths(const std::string& png);

// What `--otf2 DIR` replaces: DIR's traces.otf2, traces.def and traces/ (sim/report/otf2_writer.cpp),
// and DIR itself when it is the OTF2 directory read as the input trace.
std::vector<WrittenPath> otf2_written_paths(const std::string& dir);

}  // namespace commstack::cli
