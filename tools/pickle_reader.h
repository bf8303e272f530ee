/*
 * A reader of Python pickles for the `dao` tool, for the subset of the
 * protocol (0 to 5) that plain data uses: dicts, lists, tuples, sets,
 * strings, bytes, integers, floats, booleans and None, with the memo and
 * framing. This is what `torch.cuda.memory._dump_snapshot` writes (Python's
 * pickle, protocol 2 to 5) and what libtorch's C++ pickler writes (protocol
 * 2). A class instance (GLOBAL/STACK_GLOBAL with REDUCE, NEWOBJ, BUILD) is
 * read as a TV_OTHER value named "module.name"; nothing is ever called.
 *
 * Hostile input (truncated, garbled, a foreign file) gives NULL and a message,
 * never a crash; memory use is bounded by a small multiple of the input size.
 */
#ifndef DAO_TOOL_PICKLE_READER_H
#define DAO_TOOL_PICKLE_READER_H

#include <stddef.h>

#include "tool_value.h"

#ifdef __cplusplus
extern "C" {
#endif

/** 1 when `data` starts like a binary pickle (PROTO opcode, protocol 2-5). */
int pickle_looks_like(const unsigned char *data, size_t len);

/**
 * Reads the pickle in `data[0..len)` up to its STOP opcode.
 * @return the value (allocated from `a`), or NULL with a message naming the
 *         byte offset and the problem in `error`.
 */
tv *pickle_read(tv_arena *a, const unsigned char *data, size_t len, char *error, size_t error_size);

#ifdef __cplusplus
}
#endif

#endif
