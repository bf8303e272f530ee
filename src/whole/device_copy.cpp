// Driver copies for whole memory on devices (see device_copy.hpp).
#include "whole/device_copy.hpp"

#include "resource/system_resource.hpp"

namespace dao::detail::whole {

device_copier::device_copier(dao_place place) : stream_(resource_for(place).create_stream()) {}

device_copier::~device_copier() { finish_quietly(); }

void device_copier::finish_quietly() noexcept {
  try {
    stream_->synchronize();
  } catch (...) {
    // The stream failed; its copies are over either way.
  }
}

}  // namespace dao::detail::whole
