// The recorder's hot path and its control: claiming cells, stacks,
// allocator registration, start/stop/mark/flush/status, DAO_TRACE at load
// and the stop at exit (see recorder.hpp).
#include "trace/recorder.hpp"

#include <execinfo.h>
#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <new>

#include "core/config.hpp"
#include "core/error.hpp"
#include "trace/state.hpp"
#include "util/format.hpp"

namespace dao::detail::trace {

std::atomic<bool> g_active{false};
std::atomic<std::uint32_t> g_session{0};
__thread thread_ring* t_ring __attribute__((tls_model("initial-exec"))) = nullptr;
std::atomic<thread_ring*> g_rings{nullptr};
std::atomic<std::size_t> g_ring_cells{1u << 14};
std::atomic<bool> g_stacks{false};
std::atomic<bool> g_stamp_counter{true};

namespace {

std::atomic<std::uint32_t> g_next_tid{0};
std::atomic<std::uint64_t> g_unringed_lost{0};  // threads without a ring
std::mutex g_control;                           // start / stop / flush

thread_local bool t_exiting __attribute__((tls_model("initial-exec"))) = false;

// Hands the ring back when its thread ends.
struct ring_owner {
  thread_ring* ring = nullptr;
  ~ring_owner() {
    t_exiting = true;
    t_ring = nullptr;
    if (ring != nullptr) ring->orphan.store(true, std::memory_order_release);
  }
};

// The first record of a thread: a drained ring whose thread ended, or a
// new one (the one allocation of a thread's recording).
thread_ring* attach() noexcept {
  if (t_exiting) return nullptr;  // recording from a thread's exit: dropped
  try {
    static thread_local ring_owner owner;
    const std::size_t cells = g_ring_cells.load(std::memory_order_relaxed);
    if (owner.ring != nullptr) {  // a recording with another ring size: a new ring
      owner.ring->orphan.store(true, std::memory_order_release);
      owner.ring = nullptr;
      t_ring = nullptr;
    }
    thread_ring* r = nullptr;
    for (thread_ring* x = g_rings.load(std::memory_order_acquire); x != nullptr; x = x->next) {
      bool was = true;
      if (x->size() == cells && x->orphan.load(std::memory_order_acquire) &&
          x->tail.load(std::memory_order_acquire) == x->head.load(std::memory_order_acquire) &&
          x->orphan.compare_exchange_strong(was, false, std::memory_order_acq_rel)) {
        r = x;
        break;
      }
    }
    if (r == nullptr) {
      r = new thread_ring(cells);
      thread_ring* first = g_rings.load(std::memory_order_relaxed);
      do {
        r->next = first;
      } while (!g_rings.compare_exchange_weak(first, r, std::memory_order_release,
                                              std::memory_order_relaxed));
    }
    r->tid.store(g_next_tid.fetch_add(1, std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    owner.ring = r;
    t_ring = r;
    return r;
  } catch (...) {  // no host memory for a ring
    return nullptr;
  }
}

std::uint64_t take_text(recording& r, const char* text) noexcept {
  try {
    std::lock_guard<std::mutex> lock(r.tables_mutex);
    if (r.texts.size() >= kMaxPendingTexts) return 0;
    const std::uint64_t n = r.next_text++;
    r.texts.emplace(n, text);
    return n;
  } catch (...) {  // out of host memory: the record goes without its text
    return 0;
  }
}

}  // namespace

recording& the_recording() {
  static recording* r = new recording();  // never destroyed: see state.hpp
  return *r;
}

// --- stacks -----------------------------------------------------------------

std::uint32_t stack_id_here(recording& r) noexcept {
  void* frames[kMaxDepth + 4];
  const unsigned depth = r.opts.depth;
  int n = backtrace(frames, static_cast<int>(depth + 3));
  // Leave out the recorder's own frames (this function, fill, and record or
  // commit) and the strategy layer's traced wrapper when present.
  const int skip = n > 3 ? 3 : 0;
  std::uint64_t h = 1469598103934665603ull;
  for (int i = skip; i < n; ++i) {
    h ^= reinterpret_cast<std::uintptr_t>(frames[i]);
    h *= 1099511628211ull;
  }
  if (h == 0) h = 1;
  try {
    std::lock_guard<std::mutex> lock(r.tables_mutex);
    stack_table& t = r.stacks;
    const std::size_t mask = t.hashes.size() - 1;
    for (std::size_t i = h & mask;; i = (i + 1) & mask) {
      if (t.hashes[i] == h) return t.ids[i];
      if (t.hashes[i] == 0) {
        if (t.frames.size() >= kMaxStacks) return 0;
        t.frames.emplace_back(frames + skip, frames + n);
        t.hashes[i] = h;
        t.ids[i] = static_cast<std::uint32_t>(t.frames.size());  // id + 1
        return t.ids[i];
      }
    }
  } catch (...) {
    return 0;
  }
}

// --- the hot path's rare branches (hot_path.hpp) ---

std::uint64_t claim_with_new_ring(thread_ring*& ring) noexcept {
  ring = attach();
  if (ring == nullptr) {
    g_unringed_lost.fetch_add(1, std::memory_order_relaxed);
    return 0;
  }
  return ring->take(clock_now());
}

std::uint32_t stack_id_now() noexcept { return stack_id_here(the_recording()); }

std::uint64_t lost_total() noexcept {
  std::uint64_t n = g_unringed_lost.load(std::memory_order_relaxed);
  for (thread_ring* r = g_rings.load(std::memory_order_acquire); r != nullptr; r = r->next)
    n += r->lost.load(std::memory_order_relaxed);
  return n;
}

void record_oom(std::uint32_t allocator, std::uint64_t size, std::uint64_t stream_id,
                std::uint64_t free_bytes, const char* message) noexcept {
  event e;
  e.what = kind::oom;
  e.allocator = allocator;
  e.size = size;
  e.req = free_bytes;
  e.stream_id = stream_id;
  std::uint64_t position = 0;
  cell* c = claim_cell(position);
  if (c == nullptr) return;
  fill(c, e);
  c->extra = take_text(the_recording(), message != nullptr ? message : "");
  c->seq.store(position, std::memory_order_release);
}

// --- sessions -----------------------------------------------------------------

std::uint32_t register_allocator(std::atomic<std::uint64_t>& slot, std::uint32_t session_number,
                                 const allocator_info& info) {
  recording& r = the_recording();
  std::lock_guard<std::mutex> lock(r.tables_mutex);
  if (session_number != r.session) return 0;  // a stop and start meanwhile
  const std::uint64_t v = slot.load(std::memory_order_acquire);
  if (static_cast<std::uint32_t>(v >> 32) == session_number) return static_cast<std::uint32_t>(v);
  r.allocators.push_back(info);
  const auto id = static_cast<std::uint32_t>(r.allocators.size());
  slot.store((static_cast<std::uint64_t>(session_number) << 32) | id, std::memory_order_release);
  return id;
}

options parse_options(const char* text) {
  options o;
  config cfg = config::parse(text != nullptr ? text : "", "trace options");
  if (auto v = cfg.take_bool("stacks")) o.stacks = *v;
  if (auto v = cfg.take_size("ring")) {
    if (*v < 4096 || *v > (std::size_t{1} << 30)) {
      throw invalid_argument(strprintf("trace options: ring=%s is out of range (4 KiB to 1 GiB)",
                                       format_bytes(*v).c_str()));
    }
    o.ring_bytes = *v;
  }
  if (auto v = cfg.take_size("flush_ms")) {
    if (*v < 1 || *v > 60000)
      throw invalid_argument("trace options: flush_ms must be in 1..60000 (milliseconds)");
    o.flush_ms = static_cast<unsigned>(*v);
  }
  if (auto v = cfg.take_size("depth")) {
    if (*v < 1 || *v > kMaxDepth)
      throw invalid_argument(strprintf("trace options: depth must be in 1..%u", kMaxDepth));
    o.depth = static_cast<unsigned>(*v);
  }
  if (auto v = cfg.take_string("format")) {
    if (*v == "binary") o.binary = true;
    else if (*v == "jsonl") o.binary = false;
    else
      throw invalid_argument(
          strprintf("trace options: format=%s: expected binary or jsonl", v->c_str()));
  }
  if (auto v = cfg.take_string("clock")) {
    if (*v == "counter") o.monotonic = false;
    else if (*v == "monotonic") o.monotonic = true;
    else
      throw invalid_argument(
          strprintf("trace options: clock=%s: expected counter or monotonic", v->c_str()));
  }
  cfg.reject_unknown({"stacks", "ring", "flush_ms", "depth", "format", "clock"});
  return o;
}

namespace {

std::string expand_path(const char* path) {
  std::string out;
  for (const char* p = path; *p != '\0'; ++p) {
    if (p[0] == '%' && p[1] == 'p') {
      out += std::to_string(static_cast<long>(getpid()));
      ++p;
    } else {
      out += *p;
    }
  }
  return out;
}

// Whether the CPU's counter can stamp records: on x86-64, where Linux uses
// the time-stamp counter as its clock (it checks that the counter is
// constant-rate and synchronized across cores before it does); AArch64's
// virtual counter always is.
bool counter_usable() noexcept {
#if defined(DAO_TRACE_TSC)
  char name[32] = "";
  FILE* f = std::fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");
  if (f == nullptr) return false;
  const bool ok = std::fgets(name, sizeof name, f) != nullptr && std::strncmp(name, "tsc", 3) == 0;
  std::fclose(f);
  return ok;
#elif defined(__aarch64__)
  return true;
#else
  return false;
#endif
}

double calibrate(std::uint64_t clock0, std::uint64_t ns0) noexcept {
  if (!g_stamp_counter.load(std::memory_order_relaxed)) return 1.0;  // stamps are ns
#if defined(DAO_TRACE_TSC) || defined(__aarch64__)
  // Ticks per ns over ~2 ms; the writer refines it as the recording runs.
  timespec pause{0, 2000000};
  nanosleep(&pause, nullptr);
  const std::uint64_t dc = clock_now() - clock0, dn = monotonic_now() - ns0;
  return dc != 0 ? static_cast<double>(dn) / static_cast<double>(dc) : 1.0;
#else
  (void)clock0;
  (void)ns0;
  return 1.0;
#endif
}

// A child forked while recording has no writer thread: it does not record
// (its stop at exit, and a later dao_trace_start, must not wait for or
// replace the parent's thread). Its rings and tables are copies, left as
// they are.
void forget_recording_in_child() noexcept {
  g_active.store(false, std::memory_order_relaxed);
  recording& r = the_recording();
  new (&r.writer) std::thread();  // the parent's thread does not exist here
  if (r.fd >= 0) {
    ::close(r.fd);
    r.fd = -1;
  }
}

void stop_at_exit() noexcept {
  try {
    if (active()) stop();
  } catch (...) {
  }
}

}  // namespace

void start(const char* path, const char* options_text) {
  require_non_null(path, "dao_trace_start", "path");
  if (*path == '\0') throw invalid_argument("dao_trace_start: path is empty");
  options o;
  try {
    o = parse_options(options_text);
  } catch (const invalid_argument& e) {
    throw invalid_argument(std::string("dao_trace_start: ") + e.what());
  }
  std::lock_guard<std::mutex> control(g_control);
  recording& r = the_recording();
  if (active()) {
    throw invalid_state(strprintf("dao_trace_start: a recording to '%s' is running; call "
                                  "dao_trace_stop() first (nothing changed)",
                                  r.path.c_str()));
  }
  const std::string file = expand_path(path);
  const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    throw invalid_argument(strprintf("dao_trace_start: cannot open '%s' for writing: %s",
                                     file.c_str(), std::strerror(errno)));
  }
  // Each thread's ring: the cells that fit in ring_bytes, a power of two.
  std::size_t cells = 64;
  while (cells * 2 * sizeof(cell) <= o.ring_bytes) cells *= 2;
  g_ring_cells.store(cells, std::memory_order_relaxed);
  try {
    std::lock_guard<std::mutex> lock(r.tables_mutex);
    r.opts = o;
    r.path = file;
    r.fd = fd;
    r.session = g_session.load(std::memory_order_relaxed) + 1;
    r.allocators.clear();
    r.stacks.frames.clear();
    r.stacks.hashes.assign(2 * kMaxStacks, 0);
    r.stacks.ids.assign(2 * kMaxStacks, 0);
    r.texts.clear();
    r.lost_base = lost_total();
    r.written.store(0);
    r.bytes.store(0);
    r.stop_requested = false;
    r.flush_requests = r.flushes_done = 0;
  } catch (...) {
    ::close(fd);
    throw;
  }
  g_stamp_counter.store(!o.monotonic && counter_usable(), std::memory_order_relaxed);
  r.start_ns = monotonic_now();
  r.start_clock = clock_now();
  r.ns_per_tick = calibrate(r.start_clock, r.start_ns);
  try {
    r.writer = std::thread(writer_main, std::ref(r));
  } catch (const std::exception& e) {
    ::close(fd);
    r.fd = -1;
    throw backend_error(strprintf("dao_trace_start: cannot start the writer thread: %s", e.what()));
  }
  static const bool registered = std::atexit([] { stop_at_exit(); }) == 0 &&
                                 pthread_atfork(nullptr, nullptr, forget_recording_in_child) == 0;
  (void)registered;
  g_stacks.store(o.stacks, std::memory_order_relaxed);
  g_session.store(r.session, std::memory_order_release);
  g_active.store(true, std::memory_order_release);
}

void stop() {
  std::lock_guard<std::mutex> control(g_control);
  recording& r = the_recording();
  if (!active()) {
    throw invalid_state("dao_trace_stop: no recording is running (dao_trace_start() or "
                        "DAO_TRACE starts one)");
  }
  g_active.store(false, std::memory_order_release);
  {
    std::lock_guard<std::mutex> lock(r.control_mutex);
    r.stop_requested = true;
  }
  r.control_cv.notify_all();
  r.writer.join();  // it drains the ring, writes `end` and closes the file
}

void flush() {
  std::unique_lock<std::mutex> control(g_control);
  recording& r = the_recording();
  if (!active()) {
    throw invalid_state("dao_trace_flush: no recording is running");
  }
  std::unique_lock<std::mutex> lock(r.control_mutex);
  const std::uint64_t wanted = ++r.flush_requests;
  r.control_cv.notify_all();
  // A thread that claimed a cell and then blocked could hold the writer
  // up: wait at most a second.
  r.control_cv.wait_for(lock, std::chrono::seconds(1), [&] { return r.flushes_done >= wanted; });
}

void mark(const char* text) {
  require_non_null(text, "dao_trace_mark", "text");
  if (!active()) return;
  event e;
  e.what = kind::mark;
  std::uint64_t position = 0;
  cell* c = claim_cell(position);
  if (c == nullptr) return;
  fill(c, e);
  c->extra = take_text(the_recording(), text);
  c->seq.store(position, std::memory_order_release);
}

status_values status() {
  std::lock_guard<std::mutex> control(g_control);
  recording& r = the_recording();
  status_values s;
  s.active = active();
  s.records = r.written.load();
  s.lost = lost_total() - r.lost_base;
  s.bytes = r.bytes.load();
  s.path = r.path;
  if (s.active) {
    for (thread_ring* x = g_rings.load(std::memory_order_acquire); x != nullptr; x = x->next)
      s.pending +=
          x->head.load(std::memory_order_acquire) - x->tail.load(std::memory_order_acquire);
  }
  return s;
}

namespace {

// DAO_TRACE=path (DAO_TRACE_OPTIONS=...) records the whole process from
// the library's load.
__attribute__((constructor)) void start_from_environment() {
  const char* path = std::getenv("DAO_TRACE");
  if (path == nullptr || *path == '\0') return;
  try {
    start(path, std::getenv("DAO_TRACE_OPTIONS"));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "libdao: DAO_TRACE=%s: %s; not recording\n", path, e.what());
  }
}

}  // namespace

}  // namespace dao::detail::trace
