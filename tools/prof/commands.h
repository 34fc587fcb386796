// The `prof` subcommands. Each takes the arguments after its name and
// returns the process exit status.
#pragma once

#include <string>
#include <vector>

namespace prof::tool {

using Args = std::vector<std::string>;

int RunCommand(const Args& args);       // prof run [options] -- CMD...
int SummaryCommand(const Args& args);   // prof summary FILE...
int ValidateCommand(const Args& args);  // prof validate FILE...
int MergeCommand(const Args& args);     // prof merge FILE... -o OUT

bool WantsHelp(const Args& args);

}  // namespace prof::tool
