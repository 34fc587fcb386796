// cudnnBackendFinalize's per-type half: checks what the cuDNN reference
// says a descriptor of each type needs beyond its required attributes,
// and computes the values cuDNN then reports (engine counts, heuristic
// results, knob infos, workspace sizes, the plan's kernel).
#pragma once

#include <cudnn.h>

#include <string>

#include "cudnn_backend_descriptor.h"

namespace simdnn {

// SUCCESS, or the status cudnnBackendFinalize answers with `why` filled.
cudnnStatus_t FinalizeState(State& s, std::string* why);

}  // namespace simdnn
