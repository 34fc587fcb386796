// peak_rss <program> [args...]: runs the program and then prints one JSON
// line with its peak resident set size and CPU time (all threads), from
// wait4(). A tiny C++ parent is used instead of forking from Python because
// Linux carries the forking process's RSS high-water mark across exec: a
// child forked from a Python interpreter would report at least the
// interpreter's RSS, hiding differences below it.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: peak_rss <program> [args...]\n");
    return 2;
  }
  pid_t pid = fork();
  if (pid < 0) return 2;
  if (pid == 0) {
    execv(argv[1], argv + 1);
    _exit(127);
  }
  int status = 0;
  rusage usage{};
  if (wait4(pid, &status, 0, &usage) != pid) return 2;
  long long cpu_ns = (usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1000000000ll +
                     (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) * 1000ll;
  std::fflush(stdout);
  std::printf("{\"peak_rss_kb\":%ld,\"cpu_ns\":%lld}\n", usage.ru_maxrss, cpu_ns);
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}
