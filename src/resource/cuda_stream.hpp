// Streams and events of the CUDA places: CUstream and CUevent handles of a
// device's primary context, called through the driver that cuda_driver
// loaded. Each call pushes that context and pops it again.
#pragma once

#include <memory>
#include <string>

#include "resource/cuda_driver.hpp"
#include "resource/stream.hpp"

namespace dao::detail {

// A new non-blocking stream (CU_STREAM_NON_BLOCKING) in `ctx`. `name` (the
// place, "cuda:0") starts every error message. Throws backend_error with the
// driver's text.
std::unique_ptr<stream_impl> make_cuda_stream(cuda_driver& driver, CUcontext ctx, std::string name);

// Adopts a caller's stream (NULL: the legacy default stream); it is never
// destroyed by libdao.
std::unique_ptr<stream_impl> wrap_cuda_stream(cuda_driver& driver, CUcontext ctx, CUstream native,
                                              std::string name);

// A new event without timing (CU_EVENT_DISABLE_TIMING) in `ctx`.
std::unique_ptr<event_impl> make_cuda_event(cuda_driver& driver, CUcontext ctx, std::string name);

}  // namespace dao::detail
