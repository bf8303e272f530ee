// The recorder's writer thread: drains the ring, declares allocators,
// streams and stacks before their first use, formats JSON Lines
// (docs/trace-format.md, version 1) and writes whole lines every
// `flush_ms`, so that a killed process leaves a readable prefix. Stacks are
// symbolized here (dladdr, demangled), never on the allocating thread.
#include <cxxabi.h>
#include <dlfcn.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include "dao/version.h"
#include "trace/state.hpp"

namespace dao::detail::trace {

namespace {

// Little-endian bytes of `v` (the binary encoding's byte order on every
// host; a little-endian one compiles this to one store).
inline void put_le(unsigned char* to, std::uint64_t v, int bytes) noexcept {
  for (int i = 0; i < bytes; ++i) to[i] = static_cast<unsigned char>(v >> (8 * i));
}

// The lines being formatted: a flat buffer, appended to without checks
// beyond one capacity test per piece (the writer formats millions of
// records a second).
class out_buffer {
 public:
  out_buffer() : data_(new char[kInitial]), cap_(kInitial) {}
  const char* data() const noexcept { return data_.get(); }
  std::size_t size() const noexcept { return len_; }
  void clear() noexcept { len_ = 0; }

  void raw(const char* s, std::size_t n) {
    ensure(n);
    std::memcpy(data_.get() + len_, s, n);
    len_ += n;
  }
  template <std::size_t N>
  void lit(const char (&s)[N]) {
    raw(s, N - 1);
  }
  void ch(char c) {
    ensure(1);
    data_[len_++] = c;
  }
  void u64(std::uint64_t v) {
    char tmp[20];
    char* p = tmp + sizeof tmp;
    do {
      *--p = static_cast<char>('0' + v % 10);
      v /= 10;
    } while (v != 0);
    raw(p, static_cast<std::size_t>(tmp + sizeof tmp - p));
  }
  // ,"key":
  template <std::size_t N>
  void key(const char (&k)[N]) {
    ensure(N + 3);
    char* p = data_.get() + len_;
    *p++ = ',';
    *p++ = '"';
    std::memcpy(p, k, N - 1);
    p += N - 1;
    *p++ = '"';
    *p++ = ':';
    len_ = static_cast<std::size_t>(p - data_.get());
  }
  // ,"key":v (an integer field)
  template <std::size_t N>
  void num(const char (&k)[N], std::uint64_t v) {
    key(k);
    u64(v);
  }
  // A JSON string, quoted and escaped.
  void str(const char* s) {
    static const char hex[] = "0123456789abcdef";
    ch('"');
    for (const unsigned char* p = reinterpret_cast<const unsigned char*>(s); *p != 0; ++p) {
      const unsigned char c = *p;
      if (c == '"' || c == '\\') {
        ch('\\');
        ch(static_cast<char>(c));
      } else if (c == '\n') {
        lit("\\n");
      } else if (c < 0x20) {
        lit("\\u00");
        ch(hex[c >> 4]);
        ch(hex[c & 15]);
      } else {
        ch(static_cast<char>(c));
      }
    }
    ch('"');
  }
  // A frame's length (u32 LE) at `at`, written now or patched later.
  void le32(std::uint32_t v) {
    unsigned char b[4];
    put_le(b, v, 4);
    raw(reinterpret_cast<const char*>(b), 4);
  }
  void patch_le32(std::size_t at, std::uint32_t v) noexcept {
    put_le(reinterpret_cast<unsigned char*>(data_.get() + at), v, 4);
  }
  // An address: a number below 2^53, else a "0x..." string (the format's rule).
  void addr(std::uint64_t v) {
    if (v < (std::uint64_t{1} << 53)) {
      u64(v);
      return;
    }
    char buf[24];
    const int n = std::snprintf(buf, sizeof buf, "\"0x%llx\"", static_cast<unsigned long long>(v));
    raw(buf, static_cast<std::size_t>(n));
  }

 private:
  static constexpr std::size_t kInitial = std::size_t{2} << 20;
  void ensure(std::size_t n) {
    if (len_ + n <= cap_) return;
    std::size_t cap = cap_ * 2;
    while (cap < len_ + n) cap *= 2;
    std::unique_ptr<char[]> bigger(new char[cap]);
    std::memcpy(bigger.get(), data_.get(), len_);
    data_ = std::move(bigger);
    cap_ = cap;
  }
  std::unique_ptr<char[]> data_;
  std::size_t cap_ = 0, len_ = 0;
};

// Ids seen so far (allocators, streams, stacks): small dense numbers, a
// bit each.
class id_set {
 public:
  bool insert(std::uint32_t id) {
    if (id >= bits_.size()) bits_.resize(std::max<std::size_t>(id + 1, bits_.size() * 2), false);
    if (bits_[id]) return false;
    bits_[id] = true;
    return true;
  }

  bool has(std::uint32_t id) const { return id < bits_.size() && bits_[id]; }

 private:
  std::vector<bool> bits_ = std::vector<bool>(1024, false);
};

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
  explicit writer(recording& r)
      : r_(r),
        binary_(r.opts.binary),
        margin_ticks_(static_cast<std::uint64_t>(static_cast<double>(kMarginNs) / r.ns_per_tick)) {}

  void header() {
    out_.lit("{\"format\":\"dao-trace\",\"version\":1,\"libdao\":");
    out_.str(DAO_VERSION_STRING);
    out_.lit(",\"pid\":");
    out_.u64(static_cast<std::uint64_t>(getpid()));
    out_.lit(",\"clock\":\"monotonic\",\"start_ns\":");
    out_.u64(r_.start_ns);
    if (binary_) out_.lit(",\"encoding\":\"binary\"");
    out_.lit(",\"source\":\"recorded\"}\n");
    write_out();
  }

  // Takes the records filled so far, in stamp order across the threads'
  // rings (ring.hpp); returns how many. Each ring is in stamp order, so the
  // next record is at the front of one of them. A claimed cell not yet
  // filled holds back every record stamped after it; so do records
  // stamped within kMarginNs of now, since a thread may have read the
  // clock and not yet published its claim (`all`: no margin, for a flush,
  // whose caller's records are all published, and at the stop).
  //
  // A pass takes what was there when it began, and the writer sleeps
  // between passes: chasing the producers record by record would keep
  // pulling the lines they are writing to this core and stall them.
  std::size_t drain(bool all = false) {
    std::size_t n = 0;
    fronts_.clear();
    for (thread_ring* rg = g_rings.load(std::memory_order_acquire); rg != nullptr; rg = rg->next) {
      const std::uint64_t head = rg->head.load(std::memory_order_acquire);
      // tid is read once a pass: it shares its line with the producer's
      // position, which the producer writes on every record.
      if (head != rg->writer_tail)
        fronts_.push_back(front{rg, head, rg->tid.load(std::memory_order_relaxed)});
    }
    const std::uint64_t limit = all ? UINT64_MAX : clock_now() - margin_ticks_;
    for (;;) {
      // The ring whose next record has the smallest stamp.
      front* best = nullptr;
      std::uint64_t best_stamp = UINT64_MAX;
      for (front& f : fronts_) {
        if (f.ring->writer_tail == f.head) continue;
        const std::uint64_t stamp = f.ring->at(f.ring->writer_tail).clock;
        if (best == nullptr || stamp < best_stamp) {
          best = &f;
          best_stamp = stamp;
        }
      }
      if (best == nullptr || best_stamp >= limit) break;
      thread_ring& rg = *best->ring;
      cell& c = rg.at(rg.writer_tail);
      if (c.seq.load(std::memory_order_acquire) != rg.writer_tail + 1) break;  // being filled
      // A cell stamped before this recording began is left from an earlier one.
      if (best_stamp >= r_.start_clock) {
        format(c, best->tid);
        ++n;
        if (out_.size() > (1u << 20)) write_out();
      }
      ++rg.writer_tail;
    }
    for (front& f : fronts_) f.ring->tail.store(f.ring->writer_tail, std::memory_order_release);
    const std::uint64_t lost = lost_total() - r_.lost_base;
    if (lost != reported_lost_) {
      begin("lost", last_t_);
      out_.num("count", lost - reported_lost_);
      end();
      reported_lost_ = lost;
    }
    return n;
  }

  // Records claimed and not yet taken.
  std::uint64_t backlog() const noexcept {
    std::uint64_t n = 0;
    for (thread_ring* rg = g_rings.load(std::memory_order_acquire); rg != nullptr; rg = rg->next)
      n += rg->head.load(std::memory_order_acquire) - rg->writer_tail;
    return n;
  }

  void finish() {
    begin("end", last_t_);
    const std::uint64_t records = r_.written.load(std::memory_order_relaxed) + 1;
    out_.num("records", records);
    out_.num("lost", lost_total() - r_.lost_base);
    end();
    write_out();
  }

  // Writes the whole lines (binary: the whole frames) formatted so far.
  void write_out() {
    close_frame();
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
    if (!g_stamp_counter.load(std::memory_order_relaxed)) return;  // stamps are ns already
    const std::uint64_t c = clock_now(), ns = monotonic_now();
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

  // Binary encoding (docs/trace-format.md): after the header line, frames
  // of a tag byte, three zero bytes and the payload's length (u32 LE); a
  // `J` frame holds JSON Lines (declarations, rare records), an `R` frame
  // 48-byte records. The frame being written stays open until a record of
  // the other encoding or a write_out().
  void open_frame(char tag) {
    if (frame_tag_ == tag) return;
    close_frame();
    frame_tag_ = tag;
    out_.ch(tag);
    out_.raw("\0\0\0", 3);
    frame_at_ = out_.size();
    out_.le32(0);
  }
  void close_frame() noexcept {
    if (frame_tag_ == 0) return;
    out_.patch_le32(frame_at_, static_cast<std::uint32_t>(out_.size() - frame_at_ - 4));
    frame_tag_ = 0;
  }

  // One binary record: t, ptr, size, req (u64 LE); allocator, stream,
  // stack id + 1 (0: none), kind | tid << 8 (u32 LE). `kind` is the
  // format's kind number (docs/trace-format.md).
  void binary_record(std::uint32_t kind_number, std::uint64_t t, const cell& c, std::uint32_t tid) {
    open_frame('R');
    unsigned char b[48];
    put_le(b, t, 8);
    put_le(b + 8, c.ptr, 8);
    put_le(b + 16, c.size, 8);
    put_le(b + 24, c.req, 8);
    put_le(b + 32, c.allocator, 4);
    put_le(b + 36, c.stream, 4);
    put_le(b + 40, c.stack, 4);
    put_le(b + 44, kind_number | (tid << 8), 4);
    out_.raw(reinterpret_cast<const char*>(b), sizeof b);
    count_written();
  }

  template <std::size_t N>
  void begin(const char (&k)[N], std::uint64_t t) {
    if (binary_) open_frame('J');
    out_.lit("{\"k\":\"");
    out_.raw(k, N - 1);
    out_.lit("\",\"t\":");
    out_.u64(t);
  }
  void end() {
    out_.lit("}\n");
    count_written();
  }

  void declare_allocator(std::uint32_t id, std::uint64_t t) {
    if (id == 0 || declared_allocators_.has(id)) return;
    allocator_info info;
    {
      std::lock_guard<std::mutex> lock(r_.tables_mutex);
      if (id > r_.allocators.size()) return;
      info = r_.allocators[id - 1];
    }
    declared_allocators_.insert(id);
    places_[id] = info.place;
    begin("allocator", t);
    out_.num("id", id);
    out_.key("place");
    out_.str(info.place.c_str());
    out_.key("strategy");
    out_.str(info.strategy.c_str());
    out_.key("config");
    out_.str(info.config.c_str());
    out_.num("capacity", info.capacity);
    end();
  }

  void declare_stream(std::uint32_t id, std::uint32_t allocator, std::uint64_t handle,
                      std::uint64_t t) {
    if (id == 0 || !declared_streams_.insert(id)) return;
    begin("stream", t);
    out_.num("id", id);
    out_.key("place");
    const auto p = places_.find(allocator);
    out_.str(p != places_.end() ? p->second.c_str() : "");
    out_.num("handle", handle);
    end();
  }

  void declare_stack(std::uint32_t id_plus_one, std::uint64_t t) {
    if (id_plus_one == 0 || declared_stacks_.has(id_plus_one)) return;
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
    out_.num("id", id_plus_one - 1);
    out_.lit(",\"frames\":[");
    for (std::size_t i = 0; i < frames.size(); ++i) {
      if (i != 0) out_.ch(',');
      out_.str(symbolize(frames[i]).c_str());
    }
    out_.ch(']');
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

  void format(const cell& c, std::uint32_t tid) {
    const auto what = static_cast<kind>(c.what);
    if (what == kind::skip) return;
    const std::uint64_t t = t_of(c.clock);
    declare_allocator(c.allocator, t);
    if (what == kind::alloc || what == kind::use) declare_stream(c.stream, c.allocator, c.extra, t);
    declare_stack(c.stack, t);
    if (binary_) {
      // The frequent kinds as binary records; the rest as lines.
      switch (what) {
        case kind::alloc: return binary_record(0, t, c, tid);
        case kind::free: return binary_record(1, t, c, tid);
        case kind::use: return binary_record(3, t, c, tid);
        case kind::map: return binary_record(4, t, c, tid);
        case kind::unmap: return binary_record(5, t, c, tid);
        case kind::trim: return binary_record(7, t, c, tid);
        default: break;
      }
    }
    switch (what) {
      case kind::alloc:
      case kind::free:
      case kind::use:
        if (what == kind::alloc) begin("alloc", t);
        else if (what == kind::free) begin("free", t);
        else begin("use", t);
        out_.num("a", c.allocator);
        out_.key("ptr");
        out_.addr(c.ptr);
        if (what == kind::alloc) {
          out_.num("size", c.size);
          out_.num("req", c.req);
        }
        out_.num("s", c.stream);
        if (c.stack != 0) {
          out_.num("st", c.stack - 1);
        }
        out_.num("tid", tid);
        break;
      case kind::map:
      case kind::unmap:
        if (what == kind::map) begin("map", t);
        else begin("unmap", t);
        out_.num("a", c.allocator);
        out_.key("addr");
        out_.addr(c.ptr);
        out_.num("size", c.size);
        break;
      case kind::oom:
        begin("oom", t);
        out_.num("a", c.allocator);
        out_.num("size", c.size);
        out_.num("s", c.stream);
        out_.num("free", c.req);
        out_.key("msg");
        out_.str(take_text(c.extra).c_str());
        break;
      case kind::trim:
        begin("trim", t);
        out_.num("a", c.allocator);
        out_.num("released", c.size);
        break;
      case kind::mark:
        begin("mark", t);
        out_.key("text");
        out_.str(take_text(c.extra).c_str());
        break;
      default: return;
    }
    end();
  }

  // The writer is the only thread that writes the count: a plain store, no
  // atomic read-modify-write per record.
  void count_written() noexcept {
    r_.written.store(r_.written.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }

  // A ring with records to take in this pass, and its position then.
  struct front {
    thread_ring* ring;
    std::uint64_t head;
    std::uint32_t tid;
  };
  static constexpr double kMarginNs = 20000;  // 20 us

  recording& r_;
  const bool binary_;
  const std::uint64_t margin_ticks_;
  std::vector<front> fronts_;  // reused: no allocation per pass
  char frame_tag_ = 0;         // the open frame's tag, 0: none
  std::size_t frame_at_ = 0;   // where its length goes
  out_buffer out_;
  std::uint64_t last_t_ = 0;
  std::uint64_t reported_lost_ = 0;
  id_set declared_allocators_, declared_streams_, declared_stacks_;
  std::unordered_map<std::uint32_t, std::string> places_;
};

}  // namespace

void writer_main(recording& r) {
  // The lowest priority (nice 19): the writer takes what CPU time the
  // program leaves, so that where no core is spare it is the writer that
  // falls behind (rings fill, records are dropped and counted), not the
  // allocating threads.
  setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), 19);
  writer w(r);
  w.header();
  auto last_flush = std::chrono::steady_clock::now();
  const auto period = std::chrono::milliseconds(r.opts.flush_ms);
  std::size_t last_pass = 0;  // records the last pass took
  for (;;) {
    bool stopping;
    std::uint64_t flush_wanted, flushed;
    {
      std::unique_lock<std::mutex> lock(r.control_mutex);
      // Sleep a millisecond at a time unless the ring fills up; a tenth
      // of that after a pass that took an eighth of a ring (a producer
      // fast enough to fill it within two sleeps).
      const std::size_t cells = g_ring_cells.load(std::memory_order_relaxed);
      if (!r.stop_requested && r.flush_requests == r.flushes_done && w.backlog() < cells / 4)
        r.control_cv.wait_for(lock, last_pass > cells / 8 ? std::chrono::microseconds(100)
                                                          : std::chrono::microseconds(1000));
      stopping = r.stop_requested;
      flush_wanted = r.flush_requests;
      flushed = r.flushes_done;
    }
    last_pass = w.drain(stopping || flush_wanted != flushed);
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
  w.drain(true);
  while (w.backlog() != 0 && std::chrono::steady_clock::now() < deadline) {
    if (w.drain(true) == 0) std::this_thread::yield();
  }
  w.finish();
  ::close(r.fd);
  r.fd = -1;
}

}  // namespace dao::detail::trace
