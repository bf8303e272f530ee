// dao_whole_store and dao_whole_load: the file holds the entries in index
// order and nothing else; each rank writes or reads its own part at its
// byte offset, in parallel with the others.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "core/error.hpp"
#include "util/format.hpp"
#include "whole/whole_memory.hpp"

namespace dao::detail::whole {
namespace {

class file {
 public:
  // A missing file is not_found when `missing_is_not_found` (load), else a
  // backend error like any other (store: a missing directory).
  file(const char* path, int flags, mode_t mode, const char* verb, bool missing_is_not_found)
      : path_(path) {
    fd_ = ::open(path, flags | O_CLOEXEC, mode);
    if (fd_ < 0) {
      const int err = errno;
      std::string message = strprintf("cannot %s '%s': %s", verb, path, std::strerror(err));
      if (err == ENOENT && missing_is_not_found) throw not_found(message);
      throw backend_error(message);
    }
  }
  ~file() {
    if (fd_ >= 0) ::close(fd_);
  }
  file(const file&) = delete;
  file& operator=(const file&) = delete;

  std::size_t size() const {
    struct stat st;
    if (::fstat(fd_, &st) != 0) fail("stat");
    return static_cast<std::size_t>(st.st_size);
  }

  void resize(std::size_t bytes) {
    if (::ftruncate(fd_, static_cast<off_t>(bytes)) != 0) fail("resize");
  }

  void write_at(const char* p, std::size_t bytes, std::size_t offset) {
    while (bytes != 0) {
      const ssize_t n = ::pwrite(fd_, p, bytes, static_cast<off_t>(offset));
      if (n < 0) {
        if (errno == EINTR) continue;
        fail("write");
      }
      p += n;
      bytes -= static_cast<std::size_t>(n);
      offset += static_cast<std::size_t>(n);
    }
  }

  void read_at(char* p, std::size_t bytes, std::size_t offset) {
    while (bytes != 0) {
      const ssize_t n = ::pread(fd_, p, bytes, static_cast<off_t>(offset));
      if (n < 0) {
        if (errno == EINTR) continue;
        fail("read");
      }
      if (n == 0) {
        throw backend_error(strprintf("cannot read '%s': it ended at byte %zu", path_, offset));
      }
      p += n;
      bytes -= static_cast<std::size_t>(n);
      offset += static_cast<std::size_t>(n);
    }
  }

  void close() {
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) fail("write (close)");
  }

 private:
  [[noreturn]] void fail(const char* verb) const {
    throw backend_error(strprintf("cannot %s '%s': %s", verb, path_, std::strerror(errno)));
  }

  const char* path_;
  int fd_ = -1;
};

outcome checked_path(const char* path, const outcome& pre) {
  if (!pre.ok()) return pre;
  if (path == nullptr) return {DAO_ERR_INVALID_ARGUMENT, "path must not be NULL"};
  if (path[0] == '\0') return {DAO_ERR_INVALID_ARGUMENT, "path must not be empty"};
  return {};
}

// Calls piece(buffer, offset, bytes) over [0, bytes) in pieces of at most
// 8 MiB through one host buffer: device memory reaches a file only through
// the host.
template <class Piece>
void staged(std::size_t bytes, Piece&& piece) {
  constexpr std::size_t kPiece = std::size_t(8) << 20;
  std::vector<char> buf(bytes < kPiece ? bytes : kPiece);
  for (std::size_t at = 0; at < bytes; at += buf.size())
    piece(buf, at, bytes - at < buf.size() ? bytes - at : buf.size());
}

}  // namespace

void whole_memory::store(const char* path, const outcome& pre) {
  const char* fn = "dao_whole_store";
  transport& t = comm_.net();
  call c{fn, call_kind::whole_store, id_, {}, path != nullptr ? path : "", "path"};
  agree_on_call(t, c, checked_path(path, pre));
  // What the ranks wrote before this call is visible here.
  t.barrier();
  const std::size_t total = params_.total_size;
  agree_on_outcome(t, fn, capture([&] {
                     if (comm_.rank() != 0) return;
                     file f(path, O_WRONLY | O_CREAT | O_TRUNC, 0644, "create", false);
                     f.resize(total);
                     f.close();
                   }));
  const int me = comm_.rank();
  agree_on_outcome(t, fn, capture([&] {
                     const std::size_t bytes = layout_.byte_size(me);
                     if (bytes == 0) return;
                     file f(path, O_WRONLY, 0, "open", false);
                     if (device_copier* d = storage_->copier()) {
                       // Device memory: through a host buffer, a piece at a time.
                       staged(bytes, [&](std::vector<char>& buf, std::size_t at, std::size_t n) {
                         copy_and_wait(
                             *d, [&](device_copier& c) { c.copy(buf.data(), local() + at, n); });
                         f.write_at(buf.data(), n, layout_.byte_offset(me) + at);
                       });
                     } else {
                       f.write_at(local(), bytes, layout_.byte_offset(me));
                     }
                     f.close();
                   }));
}

void whole_memory::load(const char* path, const outcome& pre) {
  const char* fn = "dao_whole_load";
  transport& t = comm_.net();
  call c{fn, call_kind::whole_load, id_, {}, path != nullptr ? path : "", "path"};
  agree_on_call(t, c, checked_path(path, pre));
  std::unique_ptr<file> f;
  const std::size_t total = params_.total_size;
  agree_on_outcome(t, fn, capture([&] {
                     f = std::make_unique<file>(path, O_RDONLY, 0, "open", true);
                     const std::size_t size = f->size();
                     if (size != total) {
                       throw invalid_argument(strprintf(
                           "'%s' has %zu bytes, but the object has %zu (total_size): it was not "
                           "stored from an object of this size",
                           path, size, total));
                     }
                   }));
  const int me = comm_.rank();
  const outcome read = capture([&] {
    const std::size_t bytes = layout_.byte_size(me);
    if (bytes == 0) return;
    if (device_copier* d = storage_->copier()) {
      staged(bytes, [&](std::vector<char>& buf, std::size_t at, std::size_t n) {
        f->read_at(buf.data(), n, layout_.byte_offset(me) + at);
        copy_and_wait(*d, [&](device_copier& c) { c.copy(local() + at, buf.data(), n); });
      });
    } else {
      f->read_at(local(), bytes, layout_.byte_offset(me));
    }
  });
  f.reset();
  agree_on_outcome(t, fn, read);
  // What each rank read is visible to all after this call.
  t.barrier();
}

}  // namespace dao::detail::whole
