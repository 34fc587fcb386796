// The rank and world size a launcher gives a process (torchrun, MPI, PMIx,
// Slurm), for PROF_RANK's default.
#include "base/config_parts.h"
#include "base/log.h"

namespace prof {

using config_parts::ParseUnsigned;
using config_parts::Trim;

// The most specific launcher first: torchrun's RANK, then MPI's own (an
// mpirun inside a Slurm allocation inherits the batch step's SLURM_PROCID,
// the same for every process), Slurm's last.
void RankFromLauncher(const EnvLookup& env, Config* config, std::vector<std::string>* problems) {
  for (const char* var : {"RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"}) {
    const char* v = env(var);
    if (v == nullptr || *v == '\0') continue;
    uint64_t r = 0;
    if (ParseUnsigned(Trim(v), 1'000'000'000, &r)) {
      config->rank = static_cast<int>(r);
      return;
    }
    problems->push_back(fmt::format("{}='{}' is not valid: expected a non-negative integer rank; ignored (set PROF_RANK to override)", var, v));
  }
}

void WorldSizeFromLauncher(const EnvLookup& env, Config* config) {
  for (const char* var : {"WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS"}) {
    const char* v = env(var);
    uint64_t n = 0;
    if (v != nullptr && ParseUnsigned(Trim(v), 1'000'000'000, &n) && n > 0) {
      config->world_size = static_cast<int>(n);
      return;
    }
  }
}

}  // namespace prof
