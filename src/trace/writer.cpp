// The recorder's writer thread: drains the ring, declares allocators,
// streams and stacks before their first use, formats JSON Lines
// (docs/trace-format.md, version 1) and writes whole lines every
// `flush_ms`, so that a killed process leaves a readable prefix. Stacks are
// symbolized here (dladdr, demangled), never on the allocating thread.
#include <cxxabi.h>
#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <unordered_set>

#include "dao/version.h"
#include "trace/state.hpp"

namespace dao::detail::trace {

namespace {

void put_u64(std::string& out, std::uint64_t v) {
  char buf[24];
  char* p = buf + sizeof buf;
  do {
    *--p = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v != 0);
  out.append(p, static_cast<std::size_t>(buf + sizeof buf - p));
}

// A JSON string, quoted and escaped.
void put_string(std::string& out, const char* s) {
  static const char hex[] = "0123456789abcdef";
  out += '"';
  for (const unsigned char* p = reinterpret_cast<const unsigned char*>(s); *p != 0; ++p) {
    const unsigned char c = *p;
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c < 0x20) {
      out += "\\u00";
      out += hex[c >> 4];
      out += hex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  out += '"';
}

void put_key(std::string& out, const char* key) {
  out += ",\"";
  out += key;
  out += "\":";
}

// An address: a number below 2^53, else a "0x..." string (the format's rule).
void put_addr(std::string& out, std::uint64_t v) {
  if (v < (std::uint64_t{1} << 53)) {
    put_u64(out, v);
    return;
  }
  char buf[24];
  std::snprintf(buf, sizeof buf, "\"0x%llx\"", static_cast<unsigned long long>(v));
  out += buf;
}

std::string symbolize(void* addr) {
  Dl_info info{};
  char buf[64];
  if (dladdr(addr, &info) != 0 && info.dli_sname != nullptr) {
    int status = 0;
    char* demangled = abi::__cxa_demangle(info.dli_sname, nullptr, nullptr, &status);
    std::string name = status == 0 && demangled != nullptr ? demangled : info.dli_sname;
    std::free(demangled);
    std::snprintf(buf, sizeof buf, "+0x%llx",
                  static_cast<unsigned long long>(static_cast<char*>(addr) -
                                                  static_cast<char*>(info.dli_saddr)));
    name += buf;
    if (info.dli_fname != nullptr) {
      const char* base = std::strrchr(info.dli_fname, '/');
      name += " (";
      name += base != nullptr ? base + 1 : info.dli_fname;
      name += ')';
    }
    return name;
  }
  std::snprintf(buf, sizeof buf, "0x%llx",
                static_cast<unsigned long long>(reinterpret_cast<std::uintptr_t>(addr)));
  std::string name = buf;
  if (info.dli_fname != nullptr) {
    // The module and the offset in it: what addr2line -e MODULE takes.
    const char* base = std::strrchr(info.dli_fname, '/');
    name += " (";
    name += base != nullptr ? base + 1 : info.dli_fname;
    std::snprintf(buf, sizeof buf, "+0x%llx",
                  static_cast<unsigned long long>(static_cast<char*>(addr) -
                                                  static_cast<char*>(info.dli_fbase)));
    name += buf;
    name += ')';
  }
  return name;
}

bool in_libdao(void* addr) {
  static const void* own = [] {
    Dl_info info{};
    return dladdr(reinterpret_cast<void*>(&writer_main), &info) != 0 ? info.dli_fbase : nullptr;
  }();
  Dl_info info{};
  return own != nullptr && dladdr(addr, &info) != 0 && info.dli_fbase == own;
}

class writer {
 public:
  explicit writer(recording& r) : r_(r) { out_.reserve(1u << 20); }

  void header() {
    out_ += "{\"format\":\"dao-trace\",\"version\":1,\"libdao\":";
    put_string(out_, DAO_VERSION_STRING);
    out_ += ",\"pid\":";
    put_u64(out_, static_cast<std::uint64_t>(getpid()));
    out_ += ",\"clock\":\"monotonic\",\"start_ns\":";
    put_u64(out_, r_.start_ns);
    out_ += ",\"source\":\"recorded\"}\n";
    write_out();
  }

  // Formats every published cell; returns how many.
  std::size_t drain(ring& rg) {
    std::size_t n = 0;
    for (cell* c = rg.next(); c != nullptr; c = rg.next()) {
      format(*c);
      rg.release(*c);
      ++n;
      if (out_.size() > (1u << 20)) write_out();
    }
    const std::uint64_t lost = r_.lost.load(std::memory_order_relaxed);
    if (lost != reported_lost_) {
      begin("lost", last_t_);
      put_key(out_, "count");
      put_u64(out_, lost - reported_lost_);
      end();
      reported_lost_ = lost;
    }
    return n;
  }

  void finish() {
    begin("end", last_t_);
    const std::uint64_t records = r_.written.load(std::memory_order_relaxed) + 1;
    put_key(out_, "records");
    put_u64(out_, records);
    put_key(out_, "lost");
    put_u64(out_, r_.lost.load(std::memory_order_relaxed));
    end();
    write_out();
  }

  // Writes the whole lines formatted so far.
  void write_out() {
    std::size_t done = 0;
    while (done < out_.size()) {
      const ssize_t w = ::write(r_.fd, out_.data() + done, out_.size() - done);
      if (w < 0) {
        if (errno == EINTR) continue;
        break;  // a full disk: what could not be written is dropped
      }
      done += static_cast<std::size_t>(w);
    }
    r_.bytes.fetch_add(done, std::memory_order_relaxed);
    out_.clear();
  }

  // Refines ticks -> ns over the longest baseline (TSC clocks only).
  void recalibrate() {
    const std::uint64_t c = clock_now(), ns = monotonic_ns();
    if (c > r_.start_clock && ns > r_.start_ns + 50000000ull)
      r_.ns_per_tick =
          static_cast<double>(ns - r_.start_ns) / static_cast<double>(c - r_.start_clock);
  }

 private:
  std::uint64_t t_of(std::uint64_t clock) {
    std::uint64_t t = clock > r_.start_clock
                          ? static_cast<std::uint64_t>(static_cast<double>(clock - r_.start_clock) *
                                                       r_.ns_per_tick)
                          : 0;
    t = std::max(t, last_t_);  // non-decreasing in file order
    last_t_ = t;
    return t;
  }

  void begin(const char* k, std::uint64_t t) {
    out_ += "{\"k\":\"";
    out_ += k;
    out_ += "\",\"t\":";
    put_u64(out_, t);
  }
  void end() {
    out_ += "}\n";
    r_.written.fetch_add(1, std::memory_order_relaxed);
  }

  void declare_allocator(std::uint32_t id, std::uint64_t t) {
    if (id == 0 || declared_allocators_.count(id) != 0) return;
    allocator_info info;
    {
      std::lock_guard<std::mutex> lock(r_.tables_mutex);
      if (id > r_.allocators.size()) return;
      info = r_.allocators[id - 1];
    }
    declared_allocators_.insert(id);
    places_[id] = info.place;
    begin("allocator", t);
    put_key(out_, "id");
    put_u64(out_, id);
    put_key(out_, "place");
    put_string(out_, info.place.c_str());
    put_key(out_, "strategy");
    put_string(out_, info.strategy.c_str());
    put_key(out_, "config");
    put_string(out_, info.config.c_str());
    put_key(out_, "capacity");
    put_u64(out_, info.capacity);
    end();
  }

  void declare_stream(std::uint32_t id, std::uint32_t allocator, std::uint64_t handle,
                      std::uint64_t t) {
    if (id == 0 || declared_streams_.count(id) != 0) return;
    declared_streams_.insert(id);
    begin("stream", t);
    put_key(out_, "id");
    put_u64(out_, id);
    put_key(out_, "place");
    const auto p = places_.find(allocator);
    put_string(out_, p != places_.end() ? p->second.c_str() : "");
    put_key(out_, "handle");
    put_u64(out_, handle);
    end();
  }

  void declare_stack(std::uint32_t id_plus_one, std::uint64_t t) {
    if (id_plus_one == 0 || declared_stacks_.count(id_plus_one) != 0) return;
    std::vector<void*> frames;
    {
      std::lock_guard<std::mutex> lock(r_.tables_mutex);
      if (id_plus_one > r_.stacks.frames.size()) return;
      frames = r_.stacks.frames[id_plus_one - 1];
    }
    declared_stacks_.insert(id_plus_one);
    // The caller's stack: libdao's own frames (the API function and what it
    // called) are left out.
    std::size_t first = 0;
    while (first + 1 < frames.size() && in_libdao(frames[first])) ++first;
    frames.erase(frames.begin(), frames.begin() + static_cast<std::ptrdiff_t>(first));
    begin("stack", t);
    put_key(out_, "id");
    put_u64(out_, id_plus_one - 1);
    out_ += ",\"frames\":[";
    for (std::size_t i = 0; i < frames.size(); ++i) {
      if (i != 0) out_ += ',';
      put_string(out_, symbolize(frames[i]).c_str());
    }
    out_ += ']';
    end();
  }

  std::string take_text(std::uint64_t n) {
    std::lock_guard<std::mutex> lock(r_.tables_mutex);
    auto it = r_.texts.find(n);
    if (it == r_.texts.end()) return std::string();
    std::string s = std::move(it->second);
    r_.texts.erase(it);
    return s;
  }

  void format(const cell& c) {
    const auto what = static_cast<kind>(c.what);
    if (what == kind::skip) return;
    const std::uint64_t t = t_of(c.clock);
    declare_allocator(c.allocator, t);
    if (what == kind::alloc || what == kind::use) declare_stream(c.stream, c.allocator, c.extra, t);
    declare_stack(c.stack, t);
    switch (what) {
      case kind::alloc:
      case kind::free:
      case kind::use:
        begin(what == kind::alloc ? "alloc" : what == kind::free ? "free" : "use", t);
        put_key(out_, "a");
        put_u64(out_, c.allocator);
        put_key(out_, "ptr");
        put_addr(out_, c.ptr);
        if (what == kind::alloc) {
          put_key(out_, "size");
          put_u64(out_, c.size);
          put_key(out_, "req");
          put_u64(out_, c.req);
        }
        put_key(out_, "s");
        put_u64(out_, c.stream);
        if (c.stack != 0) {
          put_key(out_, "st");
          put_u64(out_, c.stack - 1);
        }
        put_key(out_, "tid");
        put_u64(out_, c.tid);
        break;
      case kind::map:
      case kind::unmap:
        begin(what == kind::map ? "map" : "unmap", t);
        put_key(out_, "a");
        put_u64(out_, c.allocator);
        put_key(out_, "addr");
        put_addr(out_, c.ptr);
        put_key(out_, "size");
        put_u64(out_, c.size);
        break;
      case kind::oom:
        begin("oom", t);
        put_key(out_, "a");
        put_u64(out_, c.allocator);
        put_key(out_, "size");
        put_u64(out_, c.size);
        put_key(out_, "s");
        put_u64(out_, c.stream);
        put_key(out_, "free");
        put_u64(out_, c.req);
        put_key(out_, "msg");
        put_string(out_, take_text(c.extra).c_str());
        break;
      case kind::trim:
        begin("trim", t);
        put_key(out_, "a");
        put_u64(out_, c.allocator);
        put_key(out_, "released");
        put_u64(out_, c.size);
        break;
      case kind::mark:
        begin("mark", t);
        put_key(out_, "text");
        put_string(out_, take_text(c.extra).c_str());
        break;
      default: return;
    }
    end();
  }

  recording& r_;
  std::string out_;
  std::uint64_t last_t_ = 0;
  std::uint64_t reported_lost_ = 0;
  std::unordered_set<std::uint32_t> declared_allocators_, declared_streams_, declared_stacks_;
  std::unordered_map<std::uint32_t, std::string> places_;
};

}  // namespace

void writer_main(recording& r) {
  writer w(r);
  ring& rg = *g_ring.load(std::memory_order_acquire);
  w.header();
  auto last_flush = std::chrono::steady_clock::now();
  const auto period = std::chrono::milliseconds(r.opts.flush_ms);
  for (;;) {
    bool stopping;
    std::uint64_t flush_wanted, flushed;
    {
      std::unique_lock<std::mutex> lock(r.control_mutex);
      // Sleep a millisecond at a time unless the ring fills up.
      if (!r.stop_requested && r.flush_requests == r.flushes_done && rg.backlog() < rg.size() / 4)
        r.control_cv.wait_for(lock, std::chrono::milliseconds(1));
      stopping = r.stop_requested;
      flush_wanted = r.flush_requests;
      flushed = r.flushes_done;
    }
    w.drain(rg);
    const auto now = std::chrono::steady_clock::now();
    if (stopping) break;
    if (flush_wanted != flushed || now - last_flush >= period) {
      w.recalibrate();
      w.write_out();
      last_flush = now;
      std::lock_guard<std::mutex> lock(r.control_mutex);
      if (r.flushes_done < flush_wanted) {
        r.flushes_done = flush_wanted;
        r.control_cv.notify_all();
      }
    }
  }
  // Stopping: records claimed before the flag fell are published within
  // microseconds; wait for them a little, never for ever.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
  while (rg.backlog() != 0 && std::chrono::steady_clock::now() < deadline) {
    if (w.drain(rg) == 0) std::this_thread::yield();
  }
  w.finish();
  ::close(r.fd);
  r.fd = -1;
}

}  // namespace dao::detail::trace
