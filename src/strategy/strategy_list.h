/* The strategies of libdao, in the order `dao info` lists them: the one list
 * that the registry (strategy/registry.cpp), the conformance tests, the soak
 * and the fuzzers read. C and C++ include it alike:
 *
 *   #define NAME(s) #s,
 *   static const char *const strategies[] = {DAO_STRATEGY_LIST(NAME)};
 *
 * A new strategy adds its name here and its row in registry.cpp. */
#ifndef DAO_STRATEGY_LIST_H
#define DAO_STRATEGY_LIST_H

#define DAO_STRATEGY_LIST(X) X(buddy) X(caching) X(system) X(limit)

#endif
