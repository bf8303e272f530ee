// A C++ program outside libdao that includes the C API (tests/install,
// built by cmake_consumers.sh in a project with CXX only).
#include <dao.h>

#include <cstdio>

int main() {
  void *p = nullptr;
  dao_status s = dao_alloc(dao_place_cpu(), 1 << 20, &p);
  if (s != DAO_OK || p == nullptr) {
    std::printf("FAIL: dao_alloc: %s: %s\n", dao_status_string(s), dao_last_error());
    return 1;
  }
  dao_free(dao_place_cpu(), p);
  // Bad input gets a status, from C++ as from C.
  if (dao_alloc(dao_place_cpu(), 16, nullptr) != DAO_ERR_INVALID_ARGUMENT) {
    std::printf("FAIL: a NULL out-parameter was accepted\n");
    return 1;
  }
  std::printf("consumer_cxx: libdao %s from C++: OK\n", dao_version_string());
  return 0;
}
