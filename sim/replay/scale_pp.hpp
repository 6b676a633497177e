#pragma once
// Pipeline scale-out of an imported trace (`commstack replay --scale-pp K`, docs/replay.md): each
// traced pipeline stage s becomes K consecutive stages s*K .. s*K+K-1 of a K times deeper
// pipeline (the model is K times deeper, the work per stage is unchanged). Every new stage runs
// its traced stage's per-micro-batch forward and backward blocks, re-ordered into the 1F1B order
// of its new depth (warm-up: new_pp - new_stage - 1 forwards, then one forward / one backward,
// then the cool-down backwards), with stage-boundary send/recv between consecutive new stages of
// the traced boundary messages' size; groups within a stage (TP, DP) are copied per new stage.
// Ops outside any layer (embedding, logits, loss) stay on the first copy of the first traced
// stage and on the last copy of the last traced stage; groups spanning stages (tied embeddings)
// join those copies. It needs each op's micro-batch, phase and layer (ImportedTrace::steps_known:
// commstack --otf2 archives); other traces are refused with an InputError naming what is missing.
#include <string>

#include "workloads/importers/imported_trace.hpp"

namespace commstack::sim::replay {

// The trace of the deeper job: world x K ranks, every rank traced, no traced timestamps (the
// replay schedules the new graph with the traced durations as its "traced" reference).
// `assumed` receives the rule in plain words. Throws InputError when the trace cannot be scaled.
workloads::ImportedTrace scale_pipeline(const workloads::ImportedTrace& trace, int k, std::string& assumed);

}  // namespace commstack::sim::replay
