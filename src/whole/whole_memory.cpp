// Whole memory objects: creation, access, gather and scatter.
#include "whole/whole_memory.hpp"

#include <cstdint>
#include <cstring>

#include "core/error.hpp"
#include "util/format.hpp"
#include "whole/copy_entry.hpp"
#include "whole/support.hpp"

namespace dao::detail::whole {
namespace {

const char* describe_type(std::uint64_t v) { return type_name(static_cast<int>(v)); }
const char* describe_location(std::uint64_t v) { return location_name(static_cast<int>(v)); }

std::uint64_t as_u64(int v) { return static_cast<std::uint64_t>(static_cast<std::uint32_t>(v)); }

// The C API's own checks, done here so that a bad argument on one rank
// fails every rank.
void validate(const whole_params& p) {
  if (p.type < DAO_WHOLE_CONTINUOUS || p.type > DAO_WHOLE_DISTRIBUTED) {
    throw invalid_argument(strprintf(
        "desc->type %d is not a dao_whole_type (0 continuous, 1 chunked, 2 distributed)", p.type));
  }
  if (p.location != DAO_WHOLE_DEVICE && p.location != DAO_WHOLE_HOST) {
    throw invalid_argument(
        strprintf("desc->location %d is not a dao_whole_location (0 device, 1 host)", p.location));
  }
  if (p.entry_size == 0) throw invalid_argument("desc->entry_size must be > 0");
  if (p.total_size == 0) throw invalid_argument("desc->total_size must be > 0");
  if (p.total_size % p.entry_size != 0) {
    throw invalid_argument(strprintf(
        "desc->total_size %zu is not a multiple of desc->entry_size %zu (%zu whole entries and "
        "%zu bytes left over); an entry is never split between ranks",
        p.total_size, p.entry_size, p.total_size / p.entry_size, p.total_size % p.entry_size));
  }
  if (p.total_size / p.entry_size > static_cast<std::size_t>(INT64_MAX)) {
    throw invalid_argument("desc: more entries than an int64_t index can name");
  }
}

// The transfers of a distributed gather or scatter that go to other ranks,
// grouped by rank: rank r's are [start[r], start[r + 1]) of the arrays, each
// `length` bytes at `remote` in r's part and at `local` in the caller's
// buffer. Runs of consecutive indices on one rank are one transfer.
struct remote_plan {
  std::vector<std::size_t> start, remote, length, local;
};

// Walks the indices in runs: this rank's runs go to `local_run(buffer
// offset, part offset, bytes)`, the others into `plan`. Everything that
// may fail (the plan's memory) comes first: a gather or scatter out of host
// memory copies nothing (issue 20), so a failed scatter leaves every entry
// as it was.
template <class Local>
void plan_transfers(const partition& layout, const std::vector<std::size_t>& first, int me,
                    const std::int64_t* indices, std::size_t count, remote_plan& plan,
                    Local&& local_run) {
  struct transfer {
    int rank;
    std::size_t remote, length, local;
  };
  const std::size_t g = layout.entry_size();
  const auto ranks = static_cast<std::size_t>(layout.ranks());
  std::vector<transfer> transfers;
  std::vector<std::size_t> counts(ranks, 0);
  std::size_t i = 0;
  while (i < count) {
    const auto index = static_cast<std::size_t>(indices[i]);
    const int r = layout.owner(index);
    const std::size_t end = first[static_cast<std::size_t>(r) + 1];
    std::size_t run = 1;
    while (i + run < count && static_cast<std::size_t>(indices[i + run]) == index + run &&
           index + run < end)
      ++run;
    const std::size_t offset = (index - first[static_cast<std::size_t>(r)]) * g;
    transfers.push_back(transfer{r, offset, run * g, i * g});
    if (r != me) ++counts[static_cast<std::size_t>(r)];
    i += run;
  }
  plan.start.assign(ranks + 1, 0);
  for (std::size_t r = 0; r < ranks; ++r) plan.start[r + 1] = plan.start[r] + counts[r];
  const std::size_t remote = plan.start[ranks];
  plan.remote.resize(remote);
  plan.length.resize(remote);
  plan.local.resize(remote);
  std::vector<std::size_t> cursor(plan.start.begin(), plan.start.end() - 1);
  for (const transfer& t : transfers) {
    if (t.rank == me) {
      local_run(t.local, t.remote, t.length);
      continue;
    }
    const std::size_t k = cursor[static_cast<std::size_t>(t.rank)]++;
    plan.remote[k] = t.remote;
    plan.length[k] = t.length;
    plan.local[k] = t.local;
  }
}

// Walks the indices in runs of consecutive entries of one rank's part and
// calls `run(position in the caller's buffer, rank, offset in the part,
// bytes)` for each.
template <class Run>
void for_each_run(const partition& layout, const std::vector<std::size_t>& first,
                  const std::int64_t* indices, std::size_t count, Run&& run) {
  const std::size_t g = layout.entry_size();
  std::size_t i = 0;
  while (i < count) {
    const auto index = static_cast<std::size_t>(indices[i]);
    const int r = layout.owner(index);
    const std::size_t end = first[static_cast<std::size_t>(r) + 1];
    std::size_t n = 1;
    while (i + n < count && static_cast<std::size_t>(indices[i + n]) == index + n &&
           index + n < end)
      ++n;
    run(i * g, r, (index - first[static_cast<std::size_t>(r)]) * g, n * g);
    i += n;
  }
}

}  // namespace

whole_memory::whole_memory(communicator& comm, const whole_params& params)
    : comm_(comm),
      params_(params),
      layout_(params.total_size / params.entry_size, params.entry_size, comm.size()) {
  first_.resize(static_cast<std::size_t>(comm.size()) + 1);
  for (int r = 0; r < comm.size(); ++r) first_[static_cast<std::size_t>(r)] = layout_.first(r);
  first_.back() = layout_.entries();
}

std::unique_ptr<whole_memory> whole_memory::create(communicator& comm, const whole_params& params,
                                                   const outcome& pre) {
  // Not a copy of `pre`: copying its message could fail on this rank alone.
  const outcome validated = pre.ok() ? capture([&] { validate(params); }) : outcome{};
  const outcome& mine = pre.ok() ? validated : pre;
  call c{"dao_whole_create",
         call_kind::whole_create,
         0,
         {{"type", as_u64(params.type), describe_type},
          {"location", as_u64(params.location), describe_location},
          {"total_size", params.total_size},
          {"entry_size", params.entry_size}},
         {},
         nullptr};
  agree_on_call(comm.net(), c, mine);
  // The arguments agree, so every rank gets the same answer here (and
  // check_support() allocates only to say why it refuses).
  try {
    check_support(comm, params.type, params.location);
  } catch (const error& e) {
    throw error(e.status(), std::string("dao_whole_create: ") + e.what());
  }
  // From here every step that may fail on one rank (its bookkeeping out of
  // memory) is agreed on before the next collective step: a rank that
  // returned alone would leave the others waiting for ever (issue 20).
  std::unique_ptr<whole_memory> w;
  agree_on_outcome(comm.net(), "dao_whole_create",
                   capture([&] { w.reset(new whole_memory(comm, params)); }));
  w->storage_ = make_storage(comm, params.type, params.location, w->layout_);
  w->id_ = comm.number_new_object();
  return w;
}

void whole_memory::destroy(const outcome& pre) {
  call c{"dao_whole_destroy", call_kind::whole_destroy, id_, {}, {}, nullptr};
  agree_on_call(comm_.net(), c, pre);
  // Every rank is here: nobody reads or writes the object any more.
  comm_.net().barrier();
  storage_->release();
}

char* whole_memory::rank_pointer(int rank, const char* function) const {
  if (rank < 0 || rank >= comm_.size()) {
    throw invalid_argument(
        strprintf("%s: rank %d is out of range 0..%d", function, rank, comm_.size() - 1));
  }
  if (params_.type == DAO_WHOLE_DISTRIBUTED && rank != comm_.rank()) {
    throw unsupported(strprintf(
        "%s: distributed memory is not mapped: only this rank's part (rank %d) has an address "
        "here; read rank %d's entries with dao_whole_gather, or create the object chunked or "
        "continuous",
        function, comm_.rank(), rank));
  }
  return storage_->part(rank);
}

char* whole_memory::base(const char* function) const {
  if (params_.type != DAO_WHOLE_CONTINUOUS) {
    throw unsupported(strprintf(
        "%s: a %s object has no single range of addresses; use dao_whole_get_rank_pointer%s or "
        "dao_whole_gather",
        function, type_name(params_.type),
        params_.type == DAO_WHOLE_DISTRIBUTED ? " (this rank's part only)" : ""));
  }
  return storage_->base();
}

void whole_memory::check_indices(const char* function, const std::int64_t* indices,
                                 std::size_t count, const void* buffer,
                                 const char* buffer_name) const {
  if (count == 0) return;
  if (indices == nullptr) {
    throw invalid_argument(strprintf("%s: indices must not be NULL when count > 0", function));
  }
  if (buffer == nullptr) {
    throw invalid_argument(
        strprintf("%s: %s must not be NULL when count > 0", function, buffer_name));
  }
  if (count > SIZE_MAX / params_.entry_size) {
    throw invalid_argument(strprintf("%s: %zu entries of %zu bytes overflow the address space",
                                     function, count, params_.entry_size));
  }
  const auto entries = static_cast<std::uint64_t>(layout_.entries());
  for (std::size_t i = 0; i < count; ++i) {
    const std::int64_t index = indices[i];
    if (index < 0 || static_cast<std::uint64_t>(index) >= entries) {
      throw invalid_argument(strprintf(
          "%s: indices[%zu] = %lld is out of range: the object has %llu entries (0..%llu)",
          function, i, static_cast<long long>(index), static_cast<unsigned long long>(entries),
          static_cast<unsigned long long>(entries - 1)));
    }
  }
}

void whole_memory::gather(const std::int64_t* indices, std::size_t count, void* dst) {
  check_indices("dao_whole_gather", indices, count, dst, "dst");
  gather_unchecked(indices, count, dst);
}

void whole_memory::gather_unchecked(const std::int64_t* indices, std::size_t count, void* dst) {
  if (count == 0) return;
  const std::size_t g = params_.entry_size;
  char* out = static_cast<char*>(dst);

  if (device_copier* d = storage_->copier()) {
    // Device memory: every part has an address here, the driver copies
    // (a run of consecutive entries as one copy).
    copy_and_wait(*d, [&](device_copier& c) {
      for_each_run(layout_, first_, indices, count,
                   [&](std::size_t at, int r, std::size_t offset, std::size_t bytes) {
                     c.copy(out + at, storage_->part(r) + offset, bytes);
                   });
    });
    return;
  }
  if (char* b = storage_->base()) {
    for (std::size_t i = 0; i < count; ++i)
      copy_entry(out + i * g, b + static_cast<std::size_t>(indices[i]) * g, g);
    return;
  }
  window* w = storage_->win();
  if (comm_.size() == 1) {  // one part, starting at entry 0
    const char* part = storage_->part(0);
    for (std::size_t i = 0; i < count; ++i)
      copy_entry(out + i * g, part + static_cast<std::size_t>(indices[i]) * g, g);
    return;
  }
  if (w == nullptr) {  // chunked: every part is mapped here
    for (std::size_t i = 0; i < count; ++i) {
      const auto index = static_cast<std::size_t>(indices[i]);
      const int r = layout_.owner(index);
      copy_entry(out + i * g, storage_->part(r) + (index - first_[static_cast<std::size_t>(r)]) * g,
                 g);
    }
    return;
  }
  // Distributed: this rank's part directly, the others through the window,
  // every rank's transfers in one call (runs of consecutive indices on one
  // rank as one transfer).
  const int me = comm_.rank();
  const char* local = storage_->part(me);
  remote_plan plan;
  plan_transfers(layout_, first_, me, indices, count, plan,
                 [&](std::size_t at, std::size_t offset, std::size_t bytes) {
                   std::memcpy(out + at, local + offset, bytes);
                 });
  for (int r = 0; r < comm_.size(); ++r) {
    const std::size_t a = plan.start[static_cast<std::size_t>(r)];
    const std::size_t n = plan.start[static_cast<std::size_t>(r) + 1] - a;
    if (n != 0) w->get_many(r, n, &plan.remote[a], &plan.length[a], out, &plan.local[a]);
  }
  w->complete();
}

void whole_memory::scatter(const void* src, const std::int64_t* indices, std::size_t count) {
  check_indices("dao_whole_scatter", indices, count, src, "src");
  scatter_unchecked(src, indices, count);
}

void whole_memory::scatter_unchecked(const void* src, const std::int64_t* indices,
                                     std::size_t count) {
  if (count == 0) return;
  const std::size_t g = params_.entry_size;
  const char* in = static_cast<const char*>(src);

  if (device_copier* d = storage_->copier()) {
    copy_and_wait(*d, [&](device_copier& c) {
      for_each_run(layout_, first_, indices, count,
                   [&](std::size_t at, int r, std::size_t offset, std::size_t bytes) {
                     c.copy(storage_->part(r) + offset, in + at, bytes);
                   });
    });
    return;
  }
  if (char* b = storage_->base()) {
    for (std::size_t i = 0; i < count; ++i)
      copy_entry(b + static_cast<std::size_t>(indices[i]) * g, in + i * g, g);
    return;
  }
  window* w = storage_->win();
  if (comm_.size() == 1) {  // one part, starting at entry 0
    char* part = storage_->part(0);
    for (std::size_t i = 0; i < count; ++i)
      copy_entry(part + static_cast<std::size_t>(indices[i]) * g, in + i * g, g);
    return;
  }
  if (w == nullptr) {
    for (std::size_t i = 0; i < count; ++i) {
      const auto index = static_cast<std::size_t>(indices[i]);
      const int r = layout_.owner(index);
      copy_entry(storage_->part(r) + (index - first_[static_cast<std::size_t>(r)]) * g, in + i * g,
                 g);
    }
    return;
  }
  const int me = comm_.rank();
  char* local = storage_->part(me);
  remote_plan plan;
  plan_transfers(layout_, first_, me, indices, count, plan,
                 [&](std::size_t at, std::size_t offset, std::size_t bytes) {
                   std::memcpy(local + offset, in + at, bytes);
                 });
  for (int r = 0; r < comm_.size(); ++r) {
    const std::size_t a = plan.start[static_cast<std::size_t>(r)];
    const std::size_t n = plan.start[static_cast<std::size_t>(r) + 1] - a;
    if (n != 0) w->put_many(r, n, &plan.remote[a], &plan.length[a], in, &plan.local[a]);
  }
  w->complete();
}

}  // namespace dao::detail::whole
