/**
 * @file dao.h
 * @brief libdao: memory for heterogeneous machines. The umbrella header.
 *
 * Include this one header to get the whole public API. Each area also has a
 * header of its own under `dao/`.
 */
#ifndef DAO_H
#define DAO_H

#include "dao/export.h"
#include "dao/version.h"
#include "dao/status.h"
#include "dao/place.h"
#include "dao/stream.h"
#include "dao/allocator.h"
#include "dao/memory.h"
#include "dao/interop.h"
#include "dao/sim.h"
#include "dao/recycle.h"
#include "dao/tiered.h"
#include "dao/whole.h"
#include "dao/trace.h"

#endif /* DAO_H */
