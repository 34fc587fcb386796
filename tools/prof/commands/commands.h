// The `prof` subcommands, one file each in commands/. Each takes the
// arguments after its name and returns the process exit status.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace prof::tool {

using Args = std::vector<std::string>;

int RunCommand(const Args& args);       // prof run [options] -- CMD...
int SummaryCommand(const Args& args);   // prof summary FILE...
int ValidateCommand(const Args& args);  // prof validate FILE...
int MergeCommand(const Args& args);     // prof merge FILE... -o OUT
int ReportCommand(const Args& args);    // prof report TRACE|DIR [-o FILE] [--stacks]

// What the commands share (arguments.cpp): "--help" or "-h" among the
// arguments.
bool WantsHelp(const Args& args);
// "--max-unpacked-mb N": N > 0 whole MB, at most 9 digits.
bool ParseMegabytes(const std::string& text, uint64_t* bytes);
// FILE... with "--max-unpacked-mb N" among them (and "-q" into *quiet when
// quiet is given; otherwise "-q" is a file): 0, or the exit status for bad
// arguments or no file, having said why ("prof <command>: ...", then help).
int ParseFileArgs(const Args& args, const char* command, const char* help, uint64_t* max_unpacked,
                  std::vector<std::string>* paths, bool* quiet = nullptr);
// An output file that could not be written, said with the path the user
// gave: "cannot write PATH: <why>". file_error is AtomicFile::error() ("<call>
// <path>: <why>"), which names the hidden temporary the bytes went to first
// (".out.json.tmp*"), a name the user never gave; empty: why is not known.
std::string CannotWrite(const std::string& path, const std::string& file_error);

}  // namespace prof::tool
