#pragma once
// The algorithm layer's shape of one call: how many sequential steps of each kind it takes (each
// pays a latency), and the bus-byte rate each resource it uses (NVLink, the domain's NICs) allows
// at line rate, with the efficiency that applies to it. Internal to sim/stack (predict.cpp).
#include <limits>

#include "sim/stack/predict.hpp"

namespace commstack::sim::stack::detail {

// Sequential steps of one call, by the kind of hop they wait for.
struct Steps {
  double intra = 0;  // steps between GPUs of one NVLink domain
  double inter = 0;  // steps that cross the network
  double nvls = 0;   // NVLink SHARP rounds
  double posts = 0;  // extra network messages the proxy posts one after the other (alltoall peers)
};

// Bus-byte rates (bytes of S * busfactor per second) each resource allows at line rate, and the
// efficiency that applies to it. A resource that the algorithm does not use is infinite.
struct Resources {
  double intra_Bps = std::numeric_limits<double>::infinity();
  double inter_Bps = std::numeric_limits<double>::infinity();
  double eta_intra = 1;
  double eta_inter = 1;
};

struct CallShape {
  Steps steps;
  Resources res;
};

// The call's steps and resources on the communicator `geo`; no steps and no resources for one rank.
CallShape call_shape(const Predictor::Choice& choice, const CommGeometry& geo, const Profile& profile);

int ceil_log2(int n);

}  // namespace commstack::sim::stack::detail
