// Whether a frame of a shared libcudart is on the calling thread's stack (at
// most 64 frames up): the thread is inside a CUDA runtime call even if no
// callback saw it enter. Used inside the driver's first cuInit (is the
// program's first runtime call initializing the driver, or did the program
// call cuInit itself?) and at the first driver call a thread shows once
// CUPTI's callbacks came on (was its runtime call entered while they were
// off?). A static cudart's frames are the program's own and are not told
// apart. Costs an unwind and a dladdr per frame: never on a per-call path.
#pragma once

namespace prof {

bool RuntimeOnThisStack();

}  // namespace prof
