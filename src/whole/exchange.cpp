// The collective gather and scatter (dao_whole_gather_collective,
// dao_whole_scatter_collective): every rank calls together, so on
// distributed memory the ranks trade requests and answers with two-sided
// all-to-alls instead of one-sided gets, as a hand-written exchange would:
//
//   1. each rank groups its indices by owner (its own entries it copies
//      itself, after the exchange) and checks its arguments;
//   2. the ranks agree on the call (one allgather: which call, which object,
//      whether every rank's arguments were good), so that a bad argument
//      anywhere fails every rank before anything moves; with up to 64 ranks
//      the same allgather carries every rank's counts per destination and
//      the room it has for what it receives;
//   3. (more than 64 ranks: an alltoall of counts); a rank that needs more
//      room makes it, and the ranks agree on that outcome (a rank out of
//      memory must not leave the others inside the next collective). Every
//      rank knows every rank's need, so when none needs more room (a loop of
//      batches of one size, after the first) this step is skipped on all;
//   4. alltoallv of the indices (as offsets into the owner's part);
//   5. gather: each owner copies the requested entries into one reply
//      buffer, alltoallv of the entries, each rank puts them in place.
//      scatter: alltoallv of the entries, each owner writes them.
//
// The buffers are kept with the object between calls: a training loop
// gathers batches of the same size again and again, and fresh buffers of
// some MiB would cost page faults on every call.
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/error.hpp"
#include "util/format.hpp"
#include "whole/copy_entry.hpp"
#include "whole/whole_memory.hpp"

namespace dao::detail::whole {

void transport::alltoall(const void*, std::size_t, void*) {
  throw error(DAO_ERR_INTERNAL, strprintf("%s transport: no alltoall", name()));
}

void transport::alltoallv(const void*, const std::size_t*, const std::size_t*, void*,
                          const std::size_t*, const std::size_t*, std::size_t) {
  throw error(DAO_ERR_INTERNAL, strprintf("%s transport: no alltoallv", name()));
}

namespace {

// Counts per destination fit the agreement's record up to this many ranks
// (plus one value: the room).
constexpr std::size_t kInlineRanks = kMaxExtras - 1;
}  // namespace

void whole_memory::plan_exchange(const char* function, const std::int64_t* indices,
                                 std::size_t count, const char* pack) {
  if (!exchange_) exchange_ = std::make_unique<exchange_buffers>();
  exchange_buffers& x = *exchange_;
  const auto ranks = static_cast<std::size_t>(comm_.size());
  const auto me = static_cast<std::uint32_t>(comm_.rank());
  const std::size_t g = params_.entry_size;
  const std::size_t limit = comm_.net().exchange_limit();
  // Any rank may receive every other rank's count: each count must fit the
  // transport's limit `ranks` times over.
  if (count > limit / ranks) {
    throw unsupported(strprintf(
        "%s: %zu entries are more than the %s transport can exchange in one call from each of "
        "%zu ranks (at most %zu per rank); split the call",
        function, count, comm_.net().name(), ranks, limit / ranks));
  }
  x.send_count64.assign(ranks, 0);
  x.recv_count64.assign(ranks, 0);
  x.send_counts.assign(ranks, 0);
  x.send_displs.assign(ranks, 0);
  x.recv_counts.assign(ranks, 0);
  x.recv_displs.assign(ranks, 0);
  if (x.owner.size() < count) x.owner.resize(count);
  for (std::size_t i = 0; i < count; ++i) {
    const auto r = static_cast<std::uint32_t>(layout_.owner(static_cast<std::size_t>(indices[i])));
    x.owner[i] = r;
    ++x.send_count64[r];
  }
  x.send_count64[me] = 0;  // this rank's own entries never travel
  std::size_t sent = 0;
  for (std::size_t r = 0; r < ranks; ++r) {
    x.send_displs[r] = sent;
    x.send_counts[r] = static_cast<std::size_t>(x.send_count64[r]);
    sent += x.send_counts[r];
  }
  x.sent = sent;
  if (x.send_index.size() < sent) x.send_index.resize(sent);
  if (x.slot.size() < sent) x.slot.resize(sent);
  // The entries sent (scatter) or the answers received (gather).
  if (x.send_data.size() < sent * g) x.send_data.resize(sent * g);
  // The cursor of each rank's piece: the receive displacements serve as
  // scratch until the counts arrive.
  std::vector<std::size_t>& cursor = x.recv_displs;
  for (std::size_t r = 0; r < ranks; ++r) cursor[r] = x.send_displs[r];
  for (std::size_t i = 0; i < count; ++i) {
    const std::uint32_t r = x.owner[i];
    if (r == me) continue;
    const std::size_t k = cursor[r]++;
    x.send_index[k] = indices[i] - static_cast<std::int64_t>(first_[r]);
    x.slot[k] = i;
    if (pack != nullptr) copy_entry(x.send_data.data() + k * g, pack + i * g, g);
  }
  if (ranks <= kInlineRanks) {
    // What goes into the agreement: counts per destination, then the room.
    x.extras.assign(ranks + 1, 0);
    for (std::size_t r = 0; r < ranks; ++r) x.extras[r] = x.send_count64[r];
    std::size_t room = x.recv_index.size();
    if (x.recv_data.size() / g < room) room = x.recv_data.size() / g;
    x.extras[ranks] = room;
    if (x.all_extras.size() < ranks * (ranks + 1)) x.all_extras.resize(ranks * (ranks + 1));
  }
}

void whole_memory::agree_on_exchange(const call& c, const outcome& mine) {
  transport& t = comm_.net();
  const auto ranks = static_cast<std::size_t>(comm_.size());
  if (ranks > kInlineRanks || !mine.ok()) {
    agree_on_call(t, c, mine);  // throws when `mine` failed
    return;
  }
  exchange_buffers& x = *exchange_;
  agree_on_call(t, c, mine, call_extras{x.extras.data(), ranks + 1, x.all_extras.data()});
}

void whole_memory::exchange_indices(const char* function) {
  exchange_buffers& x = *exchange_;
  transport& t = comm_.net();
  const auto ranks = static_cast<std::size_t>(comm_.size());
  const auto me = static_cast<std::size_t>(comm_.rank());
  const std::size_t g = params_.entry_size;
  bool grow = true;  // whether some rank needs more room: then the ranks agree on it
  if (ranks <= kInlineRanks) {
    // Every rank's counts came with the agreement: each rank sees what
    // every rank will receive, and whether it has room, alike.
    const std::size_t stride = ranks + 1;
    grow = false;
    for (std::size_t q = 0; q < ranks; ++q) {
      std::uint64_t total = 0;
      for (std::size_t r = 0; r < ranks; ++r) total += x.all_extras[r * stride + q];
      if (total > t.exchange_limit()) {
        throw unsupported(strprintf("%s: rank %zu would receive %llu entries, more than the %s "
                                    "transport can exchange in one call (%zu)",
                                    function, q, static_cast<unsigned long long>(total), t.name(),
                                    t.exchange_limit()));
      }
      if (total > x.all_extras[q * stride + ranks]) grow = true;
    }
    for (std::size_t r = 0; r < ranks; ++r) x.recv_count64[r] = x.all_extras[r * stride + me];
  } else {
    t.alltoall(x.send_count64.data(), sizeof(std::uint64_t), x.recv_count64.data());
  }
  std::size_t received = 0;
  for (std::size_t r = 0; r < ranks; ++r) {
    x.recv_displs[r] = received;
    x.recv_counts[r] = static_cast<std::size_t>(x.recv_count64[r]);
    received += x.recv_counts[r];
  }
  x.received = received;
  if (grow) {
    const outcome room = capture([&] {
      if (received > t.exchange_limit()) {
        throw unsupported(strprintf("%s: rank %zu would receive %zu entries, more than the %s "
                                    "transport can exchange in one call (%zu)",
                                    function, me, received, t.name(), t.exchange_limit()));
      }
      if (x.recv_index.size() < received) x.recv_index.resize(received);
      if (x.recv_data.size() < received * g) x.recv_data.resize(received * g);
    });
    agree_on_outcome(t, function, room);
  }
  t.alltoallv(x.send_index.data(), x.send_counts.data(), x.send_displs.data(), x.recv_index.data(),
              x.recv_counts.data(), x.recv_displs.data(), sizeof(std::int64_t));
  // Every index came from a rank that checked it against the same
  // partition (the ranks agreed on the object): each is in this part.
}

// The start both collective calls share: every rank checks its arguments
// (and plans the exchange), then the ranks agree. True when the entries
// are to be exchanged (the indices already are); false when the call
// copies directly (mapped memory, one rank, a transport without the
// all-to-alls) and the caller does so. `scattered`: the entries a
// scatter sends, NULL for a gather.
bool whole_memory::start_collective(const char* function, call_kind kind,
                                    const std::int64_t* indices, std::size_t count,
                                    const void* buffer, const char* buffer_name,
                                    const char* scattered) {
  transport& t = comm_.net();
  const bool exchange = storage_->win() != nullptr && t.has_exchange() && comm_.size() > 1;
  const outcome mine = capture([&] {
    check_indices(function, indices, count, buffer, buffer_name);
    if (exchange) plan_exchange(function, indices, count, scattered);
  });
  call c{function, kind, id_, {}, nullptr, nullptr};
  if (!exchange) {
    agree_on_call(t, c, mine);
    return false;
  }
  agree_on_exchange(c, mine);
  exchange_indices(function);
  return true;
}

void whole_memory::gather_collective(const std::int64_t* indices, std::size_t count, void* dst) {
  if (!start_collective("dao_whole_gather_collective", call_kind::whole_gather_collective, indices,
                        count, dst, "dst", nullptr)) {
    gather_unchecked(indices, count, dst);
    return;
  }
  transport& t = comm_.net();
  exchange_buffers& x = *exchange_;
  const std::size_t g = params_.entry_size;
  const char* local = storage_->part(comm_.rank());
  // Answer the requests: the reply goes out in the order they came in.
  char* reply = x.recv_data.data();
  for (std::size_t k = 0; k < x.received; ++k)
    copy_entry(reply + k * g, local + static_cast<std::size_t>(x.recv_index[k]) * g, g);
  t.alltoallv(reply, x.recv_counts.data(), x.recv_displs.data(), x.send_data.data(),
              x.send_counts.data(), x.send_displs.data(), g);
  char* out = static_cast<char*>(dst);
  const auto me = static_cast<std::uint32_t>(comm_.rank());
  const std::size_t mine_first = first_[me];
  for (std::size_t i = 0; i < count; ++i) {
    if (x.owner[i] != me) continue;
    copy_entry(out + i * g, local + (static_cast<std::size_t>(indices[i]) - mine_first) * g, g);
  }
  const char* answers = x.send_data.data();
  for (std::size_t k = 0; k < x.sent; ++k) copy_entry(out + x.slot[k] * g, answers + k * g, g);
}

void whole_memory::scatter_collective(const void* src, const std::int64_t* indices,
                                      std::size_t count) {
  const char* in = static_cast<const char*>(src);
  if (!start_collective("dao_whole_scatter_collective", call_kind::whole_scatter_collective,
                        indices, count, src, "src", in)) {
    scatter_unchecked(src, indices, count);
    return;
  }
  transport& t = comm_.net();
  exchange_buffers& x = *exchange_;
  const std::size_t g = params_.entry_size;
  t.alltoallv(x.send_data.data(), x.send_counts.data(), x.send_displs.data(), x.recv_data.data(),
              x.recv_counts.data(), x.recv_displs.data(), g);
  char* local = storage_->part(comm_.rank());
  const char* arrived = x.recv_data.data();
  for (std::size_t k = 0; k < x.received; ++k)
    copy_entry(local + static_cast<std::size_t>(x.recv_index[k]) * g, arrived + k * g, g);
  const auto me = static_cast<std::uint32_t>(comm_.rank());
  const std::size_t mine_first = first_[me];
  for (std::size_t i = 0; i < count; ++i) {
    if (x.owner[i] != me) continue;
    copy_entry(local + (static_cast<std::size_t>(indices[i]) - mine_first) * g, in + i * g, g);
  }
}

}  // namespace dao::detail::whole
