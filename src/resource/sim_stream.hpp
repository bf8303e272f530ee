// Streams and events of the simulated devices: each stream is an ordered
// queue run by a worker thread of its own, so work really is asynchronous;
// events are host-side generation counters, so a stream of one SIM device
// may wait on an event of another.
#pragma once

#include <memory>

#include "dao/place.h"
#include "resource/sim_costs.hpp"
#include "resource/stream.hpp"

namespace dao::detail {

// A stream of `place` (used in messages), whose calls are accounted by
// `meter` (its device's, which outlives it). Throws backend_error when its
// worker thread cannot be started.
std::unique_ptr<stream_impl> make_sim_stream(dao_place place, sim_cost_meter& meter);

// A SIM event; it counts as completed until it is first recorded.
std::unique_ptr<event_impl> make_sim_event(sim_cost_meter& meter);

}  // namespace dao::detail
