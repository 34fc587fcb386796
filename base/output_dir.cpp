#include "base/output_dir.h"

#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/log.h"

namespace prof {

bool MakeDirectories(const std::string& dir, std::vector<std::string>* created, std::string* why, FileSystem& fs) {
  struct stat st;
  // The usual case (the writer asks at every window): it exists already,
  // and one call says so instead of one per level.
  if (fs.Stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return true;
  for (size_t pos = dir.find('/', 1);; pos = dir.find('/', pos + 1)) {
    std::string partial = dir.substr(0, pos);
    if (!partial.empty()) {
      // 0755 whatever the umask: never a world-writable directory of ours.
      if (fs.MakeDir(partial.c_str(), 0755) == 0) {
        if (created != nullptr) created->push_back(partial);
      } else if (errno != EEXIST) {
        if (why != nullptr) *why = fmt::format("cannot create '{}': {}", partial, std::strerror(errno));
        return false;
      }
    }
    if (pos == std::string::npos) break;
  }
  if (fs.Stat(dir.c_str(), &st) != 0) {
    if (why != nullptr) *why = fmt::format("cannot reach '{}': {}", dir, std::strerror(errno));
    return false;
  }
  if (!S_ISDIR(st.st_mode)) {
    if (why != nullptr) *why = "it exists and is not a directory";
    return false;
  }
  return true;
}

// Checked at start so the user hears about a bad one then, not at the first
// window. Checked without creating anything (a mkdir and rmdir cost every process a
// millisecond on ext4, and most processes of a job, shells and launchers,
// never write a window): an existing directory must be writable; for a
// missing one, the nearest existing folder above it must be a writable
// directory on a file system that holds files (not /proc or /sys). The
// writer creates it at the first window and says there if that still fails.
bool OutputDirUsable(const std::string& dir, std::string* why, FileSystem& fs) {
  std::string path = dir.empty() ? "." : dir;
  bool missing = false;
  for (;;) {
    while (path.size() > 1 && path.back() == '/') path.pop_back();
    struct stat st;
    if (fs.Stat(path.c_str(), &st) != 0) {
      if (errno != ENOENT) {  // ENOTDIR: a file on the way; EACCES, ELOOP, ENAMETOOLONG
        *why = fmt::format("cannot reach '{}': {}", path, std::strerror(errno));
        return false;
      }
      size_t slash = path.find_last_of('/');
      path = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
      missing = true;
      continue;
    }
    if (!S_ISDIR(st.st_mode)) {
      *why = missing ? fmt::format("'{}' is not a directory", path) : "it exists and is not a directory";
      return false;
    }
    if (fs.Access(path.c_str(), W_OK | X_OK) != 0) {
      *why = missing ? fmt::format("cannot create it in '{}': {}", path, std::strerror(errno))
                     : fmt::format("it is not writable: {}", std::strerror(errno));
      return false;
    }
    struct statfs sfs;
    if (missing && fs.StatFs(path.c_str(), &sfs) == 0 &&
        (sfs.f_type == PROC_SUPER_MAGIC || sfs.f_type == SYSFS_MAGIC)) {
      *why = fmt::format("cannot create it in '{}', a {} file system", path,
                         sfs.f_type == PROC_SUPER_MAGIC ? "proc" : "sysfs");
      return false;
    }
    return true;
  }
}

std::string AbsoluteOutputDir(const std::string& dir) {
  if (dir.empty() || dir[0] == '/') return dir;
  char cwd[4096];
  if (getcwd(cwd, sizeof(cwd)) == nullptr) return dir;
  std::string base = cwd;
  std::string rel = dir;
  while (rel.rfind("./", 0) == 0) rel.erase(0, 2);
  return rel.empty() || rel == "." ? base : (base == "/" ? "" : base) + "/" + rel;
}

}  // namespace prof
