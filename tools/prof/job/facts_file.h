// Reads the facts a rank wrote beside its window's trace (<stem>.job.json,
// exporters/job/rank_facts.h's RankFactsJson): what `prof merge
// --summary-only` summarizes a job from without reading its traces.
#pragma once

#include <string>

#include "exporters/job/rank_facts.h"

namespace prof::tool {

// Whether `path` names a facts file (it ends in .job.json).
bool IsFactsFileName(const std::string& path);

// False with `error` ("<path>: <what is wrong>") when the file cannot be
// read or is not one; its facts otherwise, `path` set to the file's.
bool ReadFactsFile(const std::string& path, RankFacts* facts, std::string* error);

}  // namespace prof::tool
