#include <dao.h>
#include <stdio.h>

int main(void) {
  printf("libdao %s\n", dao_version_string());
  dao_place places[] = {dao_place_cpu(), dao_place_sim(0), dao_place_cuda(0)};
  int failed = 0;
  for (int i = 0; i < 3; ++i) {
    const char *kind = dao_place_kind_name(places[i].kind);
    void *p = NULL;
    dao_status s = dao_alloc(places[i], 1 << 20, &p); /* 1 MiB, 256-byte aligned */
    if (s != DAO_OK) {                                /* for example no GPU on this machine */
      printf("%s: %s: %s\n", kind, dao_status_string(s), dao_last_error());
      failed |= s != DAO_ERR_NO_DEVICE;
      continue;
    }
    size_t used = 0;
    dao_used(places[i], &used);
    printf("%s: got %p, %zu bytes in use\n", kind, p, used);
    dao_free(places[i], p);
  }
  return failed;
}
