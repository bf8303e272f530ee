// Streams and events of the simulated devices: each stream is an ordered
// queue run by a worker thread of its own, so work really is asynchronous;
// events are host-side generation counters, so a stream of one SIM device
// may wait on an event of another.
#pragma once

#include <memory>

#include "dao/place.h"
#include "resource/stream.hpp"

namespace dao::detail {

// A stream of `place` (used in messages). Throws backend_error when its
// worker thread cannot be started.
std::unique_ptr<stream_impl> make_sim_stream(dao_place place);

// A SIM event; it counts as completed until it is first recorded.
std::unique_ptr<event_impl> make_sim_event();

// Moves a SIM event to a point that has already been reached, which is what
// recording it on the (synchronous) default stream means. Work queued by
// earlier records still runs; waits queued before this call still wait for
// it. Throws invalid_argument when `event` is not a SIM event.
void sim_event_complete_now(event_impl& event);

}  // namespace dao::detail
