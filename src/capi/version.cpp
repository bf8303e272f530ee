// dao_version_number and dao_version_string: the library's own version.
#include "dao/version.h"

extern "C" unsigned dao_version_number(void) { return DAO_VERSION_NUMBER; }
extern "C" const char* dao_version_string(void) { return DAO_VERSION_STRING; }
