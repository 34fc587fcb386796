// The job summary as text (`prof merge` prints it and writes it beside the
// merged trace) and as the report page's job view data (its text, and its
// numbers for the heat map and the per-rank chart).
#pragma once

#include <string>

#include "tools/prof/job/job_analysis.h"

namespace prof::tool {

std::string RenderJobSummary(const JobSummary& job);

// {"text": ..., "labels": [...], "steps": [...], "by_number": ..., "cells":
// [[[step, compute, comm, wait, gap, syncs, cost] | null, ...], ...],
// "totals": [...], "straggler": ..., "straggler_line": ..., "evidence": [...]}
std::string JobJson(const JobSummary& job);

}  // namespace prof::tool
