// The recorder's shared state: the ring, the side tables (allocators,
// stacks, texts) and the writer thread of one recording. Private to
// src/trace/.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "trace/recorder.hpp"
#include "trace/ring.hpp"

namespace dao::detail::trace {

struct options {
  bool stacks = false;
  std::size_t ring_bytes = std::size_t{4} << 20;  // per recording thread
  unsigned flush_ms = 100;
  unsigned depth = 16;
  bool binary = true;      // format=binary (frames of fixed records) or jsonl
  bool monotonic = false;  // clock=monotonic: stamps from CLOCK_MONOTONIC
};

options parse_options(const char* text);  // throws invalid_argument

inline constexpr std::size_t kMaxStacks = 1u << 16;
inline constexpr std::size_t kMaxPendingTexts = 4096;
inline constexpr unsigned kMaxDepth = 64;

struct stack_table {
  // hash -> id+1 (open addressing, fixed size: 2 * kMaxStacks)
  std::vector<std::uint64_t> hashes;
  std::vector<std::uint32_t> ids;
  std::vector<std::vector<void*>> frames;  // by id
};

struct recording {
  options opts;
  std::string path;
  int fd = -1;
  std::uint32_t session = 0;
  std::uint64_t start_ns = 0;
  std::uint64_t start_clock = 0;
  double ns_per_tick = 1.0;

  std::mutex tables_mutex;                 // allocators, stacks, texts
  std::vector<allocator_info> allocators;  // id = index + 1
  stack_table stacks;
  std::unordered_map<std::uint64_t, std::string> texts;
  std::uint64_t next_text = 1;

  std::uint64_t lost_base = 0;            // lost_total() at the start
  std::atomic<std::uint64_t> written{0};  // records written
  std::atomic<std::uint64_t> bytes{0};

  std::mutex control_mutex;
  std::condition_variable control_cv;
  bool stop_requested = false;
  std::uint64_t flush_requests = 0, flushes_done = 0;
  std::thread writer;
};

// Every thread's ring, kept for the process's life (a producer may still
// hold a cell after a stop; a ring whose thread ended is taken over by the
// next new thread once drained). The list only grows, at its front.
extern std::atomic<thread_ring*> g_rings;
// Records dropped since the process started: every ring's, plus those of
// threads that could not get a ring.
std::uint64_t lost_total() noexcept;
// The one recording object, reused by every session and never destroyed (a
// producer that saw the flag just before a stop may still use its tables).
recording& the_recording();

std::uint32_t stack_id_here(recording& r) noexcept;  // 0: none, else id + 1

void writer_main(recording& r);  // the writer thread

}  // namespace dao::detail::trace
