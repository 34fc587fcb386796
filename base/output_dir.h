// PROF_OUTPUT_DIR: whether it can be used, checked at start without creating
// anything, and its creation when a window is written.
#pragma once

#include <string>
#include <vector>

#include "base/file_system.h"

namespace prof {

// mkdir -p; the directories it made go to created (may be null); false with
// a reason when the path cannot be a directory.
bool MakeDirectories(const std::string& dir, std::vector<std::string>* created, std::string* why,
                     FileSystem& fs = PosixFileSystem());

// Whether dir is writable, or can be created (the nearest existing folder
// above it is a writable directory on a file system that holds files);
// false with a reason. Creates nothing.
bool OutputDirUsable(const std::string& dir, std::string* why, FileSystem& fs = PosixFileSystem());

// dir made absolute against the current directory ("./x" and "x" alike);
// unchanged when it is absolute or the current directory is unknown.
std::string AbsoluteOutputDir(const std::string& dir);

}  // namespace prof
