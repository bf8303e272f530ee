// Agreement between the ranks of a collective call (see collective.hpp).
#include "whole/collective.hpp"

#include <cstdio>
#include <cstring>

#include "util/format.hpp"

namespace dao::detail::whole {
namespace {

// What each rank contributes: fixed size, plain bytes, the same layout on
// every rank (all ranks run the same libdao).
struct record {
  std::uint32_t kind;
  std::int32_t status;
  std::uint64_t object;
  std::uint32_t arg_count;
  std::uint32_t text_length;
  std::uint64_t args[call::kMaxArgs];
  std::uint64_t text_hash;
  char text[128];
  char message[384];
  std::uint32_t extra_count;
  std::uint64_t extras[kMaxExtras];  // not agreed on: see call_extras
};
static_assert(sizeof(record) <= kMaxAgreementRecord, "transports reserve kMaxAgreementRecord");

const char* function_of(std::uint32_t kind) {
  switch (static_cast<call_kind>(kind)) {
    case call_kind::comm_create: return "a communicator create";
    case call_kind::whole_create: return "dao_whole_create";
    case call_kind::whole_destroy: return "dao_whole_destroy";
    case call_kind::whole_store: return "dao_whole_store";
    case call_kind::whole_load: return "dao_whole_load";
    case call_kind::comm_barrier: return "dao_comm_barrier";
    case call_kind::whole_gather_collective: return "dao_whole_gather_collective";
    case call_kind::whole_scatter_collective: return "dao_whole_scatter_collective";
  }
  return "an unknown call";
}

std::uint64_t fnv1a(const char* s) {
  std::uint64_t h = 1469598103934665603ull;
  for (; *s != '\0'; ++s) {
    h ^= static_cast<unsigned char>(*s);
    h *= 1099511628211ull;
  }
  return h;
}

void copy_text(char* dst, std::size_t cap, const char* s) { std::snprintf(dst, cap, "%s", s); }

std::string describe(const call_arg& a, std::uint64_t v) {
  if (a.describe != nullptr) return a.describe(v);
  return strprintf("%llu", static_cast<unsigned long long>(v));
}

// Every rank's record, in the transport's reserved room: reading them
// allocates nothing.
class records {
 public:
  records(const unsigned char* bytes, std::size_t count) : bytes_(bytes), count_(count) {}
  std::size_t size() const noexcept { return count_; }
  record operator[](std::size_t r) const noexcept {
    record out;
    std::memcpy(&out, bytes_ + r * sizeof(record), sizeof out);
    return out;
  }

 private:
  const unsigned char* bytes_;
  std::size_t count_;
};

records exchange(transport& t, const record& mine) {
  const auto ranks = static_cast<std::size_t>(t.size());
  std::vector<unsigned char>& room = t.agreement_buffer();
  // Reserved when the transport was made (reserve_agreement()).
  if (room.size() < ranks * sizeof(record)) room.resize(ranks * sizeof(record));
  t.allgather(&mine, sizeof mine, room.data());
  return records(room.data(), ranks);
}

// Throws the failure of the first failing rank, on every rank alike. On the
// failing rank itself the full message is used (the record holds a prefix).
void throw_first_failure(const transport& t, const char* function, const records& all,
                         const outcome& mine) {
  int first = -1;
  int failed = 0;
  for (std::size_t r = 0; r < all.size(); ++r) {
    if (all[r].status != DAO_OK) {
      if (first < 0) first = static_cast<int>(r);
      ++failed;
    }
  }
  if (first < 0) return;
  const record f = all[static_cast<std::size_t>(first)];
  std::string message = first == t.rank() ? mine.message : std::string(f.message);
  std::string text =
      strprintf("%s on rank %d of %d: %s", function, first, t.size(), message.c_str());
  if (failed > 1) text += strprintf(" (and %d other rank(s) failed too)", failed - 1);
  throw error(static_cast<dao_status>(f.status), text);
}

}  // namespace

void reserve_agreement(transport& t) {
  t.agreement_buffer().resize(static_cast<std::size_t>(t.size()) * sizeof(record));
}

void agree_on_call(transport& t, const call& c, const outcome& mine) {
  agree_on_call(t, c, mine, call_extras{});
}

void agree_on_call(transport& t, const call& c, const outcome& mine, const call_extras& extras) {
  record rec;
  std::memset(&rec, 0, sizeof rec);
  rec.kind = static_cast<std::uint32_t>(c.kind);
  rec.status = static_cast<std::int32_t>(mine.status);
  rec.object = c.object;
  rec.arg_count =
      static_cast<std::uint32_t>(c.args.size() < call::kMaxArgs ? c.args.size() : call::kMaxArgs);
  for (std::uint32_t i = 0; i < rec.arg_count; ++i) rec.args[i] = c.args[i].value;
  const char* text = c.text != nullptr ? c.text : "";
  rec.text_length = static_cast<std::uint32_t>(std::strlen(text));
  rec.text_hash = fnv1a(text);
  copy_text(rec.text, sizeof rec.text, text);
  copy_text(rec.message, sizeof rec.message, mine.message.c_str());
  const std::size_t n_extras = extras.count < kMaxExtras ? extras.count : kMaxExtras;
  rec.extra_count = static_cast<std::uint32_t>(n_extras);
  if (extras.mine != nullptr)
    for (std::size_t i = 0; i < n_extras; ++i) rec.extras[i] = extras.mine[i];

  const records all = exchange(t, rec);

  // Different calls first: their arguments mean different things.
  for (std::size_t r = 1; r < all.size(); ++r) {
    if (all[r].kind != all[0].kind) {
      throw invalid_argument(
          strprintf("%s: the ranks are in different collective calls: rank 0 in %s, rank %zu in %s",
                    c.function, function_of(all[0].kind), r, function_of(all[r].kind)));
    }
  }
  throw_first_failure(t, c.function, all, mine);
  for (std::size_t r = 1; r < all.size(); ++r) {
    if (all[r].object != all[0].object) {
      throw invalid_argument(strprintf(
          "%s: the ranks passed different objects: rank 0 object #%llu, rank %zu object #%llu "
          "(objects are numbered in the order the ranks created them)",
          c.function, static_cast<unsigned long long>(all[0].object), r,
          static_cast<unsigned long long>(all[r].object)));
    }
  }
  for (std::size_t i = 0; i < rec.arg_count; ++i) {
    for (std::size_t r = 1; r < all.size(); ++r) {
      if (all[r].args[i] != all[0].args[i]) {
        const call_arg& a = c.args[i];
        throw invalid_argument(strprintf(
            "%s: the ranks disagree on %s: rank 0 passed %s, rank %zu passed %s", c.function,
            a.name, describe(a, all[0].args[i]).c_str(), r, describe(a, all[r].args[i]).c_str()));
      }
    }
  }
  if (c.text_name != nullptr) {
    for (std::size_t r = 1; r < all.size(); ++r) {
      if (all[r].text_hash != all[0].text_hash || all[r].text_length != all[0].text_length) {
        throw invalid_argument(
            strprintf("%s: the ranks disagree on %s: rank 0 passed '%s', rank %zu passed '%s'%s",
                      c.function, c.text_name, all[0].text, r, all[r].text,
                      all[0].text_length >= sizeof rec.text || all[r].text_length >= sizeof rec.text
                          ? " (shown cut short)"
                          : ""));
      }
    }
  }
  if (extras.all != nullptr) {
    for (std::size_t r = 0; r < all.size(); ++r) {
      const record x = all[r];
      for (std::size_t i = 0; i < n_extras; ++i) extras.all[r * n_extras + i] = x.extras[i];
    }
  }
}

void agree_on_outcome(transport& t, const char* function, const outcome& mine) {
  record rec;
  std::memset(&rec, 0, sizeof rec);
  rec.status = static_cast<std::int32_t>(mine.status);
  copy_text(rec.message, sizeof rec.message, mine.message.c_str());
  const records all = exchange(t, rec);
  throw_first_failure(t, function, all, mine);
}

}  // namespace dao::detail::whole
