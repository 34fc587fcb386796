// `prof`: run a command under libprof, and read, check and merge its traces.
#include <cstdio>
#include <cstring>
#include <exception>

#include "tools/prof/commands/commands.h"

namespace {

constexpr const char* kUsage = R"(usage: prof <command> [options]

commands:
  run       run a command with libprof injected (LD_PRELOAD) and a schedule
  summary   print the summary of saved traces (.pt.trace.json[.gz])
  validate  check traces against the rules Perfetto and HTA rely on
  merge     merge several ranks' traces into one timeline
  report    write the report page (or folded stacks) of saved traces

`prof <command> --help` describes each; `prof --version` prints the version.
)";

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h") || !std::strcmp(argv[1], "help")) {
    std::fputs(kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  if (!std::strcmp(argv[1], "--version") || !std::strcmp(argv[1], "-V") || !std::strcmp(argv[1], "version")) {
    std::printf("prof (libprof) %s\n", PROF_VERSION_STRING);
    return 0;
  }
  prof::tool::Args args(argv + 2, argv + argc);
  const char* command = argv[1];
  try {
    if (!std::strcmp(command, "run")) return prof::tool::RunCommand(args);
    if (!std::strcmp(command, "summary")) return prof::tool::SummaryCommand(args);
    if (!std::strcmp(command, "validate")) return prof::tool::ValidateCommand(args);
    if (!std::strcmp(command, "merge")) return prof::tool::MergeCommand(args);
    if (!std::strcmp(command, "report")) return prof::tool::ReportCommand(args);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "prof %s: %s\n", command, e.what());
    return 1;
  }
  std::fprintf(stderr, "prof: unknown command '%s'\n\n%s", command, kUsage);
  return 2;
}
