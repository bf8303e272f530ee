/**
 * @file stream.h
 * @brief The stream handle that stream-ordered calls take.
 *
 * A ::dao_stream is an opaque, pointer-sized handle. NULL
 * (::DAO_STREAM_DEFAULT) is the default stream of a place. On CUDA places a
 * stream is a `CUstream` (the same as a `cudaStream_t`).
 */
#ifndef DAO_STREAM_H
#define DAO_STREAM_H

/** Opaque stream handle; NULL is the default stream. */
typedef struct dao_stream_st *dao_stream;

/** The default stream of any place. */
#define DAO_STREAM_DEFAULT ((dao_stream)0)

#endif /* DAO_STREAM_H */
