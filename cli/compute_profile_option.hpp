#pragma once
// The --compute-profile option of train and plan: a built-in name, a JSON file, or (empty) the
// built-in profile matching the cluster's GPU model.
#include <string>

#include "topologies/cluster.hpp"
#include "workloads/compute/compute_model.hpp"

namespace commstack::cli {

workloads::ComputeProfile compute_profile_option(const std::string& flag, const topologies::ClusterSpec& spec);

}  // namespace commstack::cli
