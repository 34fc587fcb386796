#include <cstdio>
int main(int argc, char** argv) {
  std::fprintf(stderr, "prof: not implemented yet\n");
  return 2;
}
