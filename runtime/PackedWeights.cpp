//===- PackedWeights.cpp - laid-out weights kept in a file, mapped later --===//

#include "PackedWeights.h"

#include "attn/runtime/Version.h"

// XXH3 at the widest vectors the CPU has (xxHash's run-time dispatch, x86
// only); elsewhere its portable build.
#if defined(__x86_64__)
#include <xxh_x86dispatch.h>
#else
#include <xxhash.h>
#endif

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <sys/mman.h>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

namespace attn::runtime {

namespace {

constexpr char kMagic[8] = {'A', 'T', 'T', 'N', 'P', 'A', 'C', 'K'};
// Each array's offset: 4 KiB, and 2 MiB for arrays of 2 MiB or more, which
// the mapping places on 2 MiB boundaries in memory too, so that the kernel
// may map the page cache's large folios with 2 MiB entries (decode streams
// every weight: one TLB miss per 2 MiB instead of per 4 KiB).
constexpr uint64_t kAlignment = 4096;
constexpr uint64_t kLargeAlignment = uint64_t(2) << 20;

struct Header {
  char magic[8];
  uint32_t version;
  uint32_t reserved;
  uint64_t key;
  uint64_t fileBytes;
  uint64_t tableWords;
  uint64_t tableChecksum; // XXH3 of the table
  uint64_t headerChecksum; // XXH3 of the fields above
};
static_assert(sizeof(Header) == 56, "the header is the file's first bytes");

uint64_t headerChecksum(const Header &h) {
  return XXH3_64bits(&h, offsetof(Header, headerChecksum));
}

uint64_t alignUp(uint64_t n, uint64_t bytes) {
  const uint64_t alignment = bytes >= kLargeAlignment ? kLargeAlignment
                                                      : kAlignment;
  return (n + alignment - 1) / alignment * alignment;
}

std::string systemError() { return std::strerror(errno); }

/// A read-only mapping of a whole file, unmapped with its last user.
struct Mapping {
  void *data = MAP_FAILED;
  size_t bytes = 0;
  ~Mapping() {
    if (data != MAP_FAILED)
      munmap(data, bytes);
  }
};

/// `bytes` of `fd` mapped read-only and shared at a 2 MiB-aligned address,
/// advised MADV_HUGEPAGE; MAP_FAILED when the system refuses.
void *mapAligned(int fd, size_t bytes) {
  // Reserve room to slide to a boundary, map the file over it, return the
  // rest.
  const size_t reserved = bytes + kLargeAlignment;
  char *area = static_cast<char *>(
      mmap(nullptr, reserved, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  if (area == MAP_FAILED)
    return MAP_FAILED;
  char *aligned = reinterpret_cast<char *>(
      (reinterpret_cast<uintptr_t>(area) + kLargeAlignment - 1) &
      ~uintptr_t(kLargeAlignment - 1));
  void *data =
      mmap(aligned, bytes, PROT_READ, MAP_SHARED | MAP_FIXED, fd, 0);
  if (data == MAP_FAILED) {
    munmap(area, reserved);
    return MAP_FAILED;
  }
  if (aligned > area)
    munmap(area, size_t(aligned - area));
  const size_t pages = (bytes + kAlignment - 1) & ~size_t(kAlignment - 1);
  const size_t tail = size_t(area + reserved - (aligned + pages));
  if (tail)
    munmap(aligned + pages, tail);
#ifdef MADV_HUGEPAGE
  madvise(data, bytes, MADV_HUGEPAGE); // advice: failure changes nothing
#endif
  return data;
}

/// Checksums `ranges` (data, bytes, expected) on up to one thread per core,
/// each taking about the same bytes; the index of the first that disagrees,
/// or -1.
int64_t firstMismatch(
    const std::vector<std::tuple<const void *, size_t, uint64_t>> &ranges) {
  size_t total = 0;
  for (const auto &range : ranges)
    total += std::get<1>(range);
  const size_t threads = std::clamp<size_t>(
      std::min<size_t>(std::thread::hardware_concurrency(), total >> 26), 1, 8);
  std::vector<int64_t> bad(threads, -1);
  auto check = [&](size_t part) {
    // Ranges whose first byte falls in this thread's share of the total.
    size_t at = 0;
    for (size_t i = 0; i < ranges.size(); i++) {
      const auto &[data, bytes, expected] = ranges[i];
      if (at * threads / std::max<size_t>(total, 1) == part &&
          XXH3_64bits(data, bytes) != expected) {
        bad[part] = int64_t(i);
        return;
      }
      at += bytes;
    }
  };
  std::vector<std::thread> pool;
  for (size_t part = 1; part < threads; part++)
    pool.emplace_back(check, part);
  check(0);
  for (std::thread &t : pool)
    t.join();
  for (int64_t i : bad)
    if (i >= 0)
      return i;
  return -1;
}

/// Whether `m`'s arrays have the sizes its type and shape give them (the
/// kernels read that many).
bool wellFormed(const WeightMatrix &m) {
  const auto size = [&](auto &array) { return uint64_t(array.size()); };
  if (m.out == 0)
    return m.empty() && m.scales.empty() && m.zeros.empty() &&
           m.mins.empty() && m.exponents.empty();
  if ((m.type != DType::MXFP4 && !m.exponents.empty()) ||
      (m.type != DType::I4 && !m.mins.empty()))
    return false;
  if (m.in <= 0 || m.out < 0 || m.panel <= 0 || m.panel % kInt4Panel)
    return false;
  const uint64_t elements = uint64_t(m.panels() * m.rows() * m.words());
  switch (m.type) {
  case DType::F32:
    return size(m.f32) == elements && m.bytes() == elements * 4 &&
           m.scales.empty() && m.zeros.empty();
  case DType::F16:
    return size(m.narrow) == elements && m.bytes() == elements * 2 &&
           m.scales.empty() && m.zeros.empty();
  case DType::BF16: // pairs: uint32 words of two
    return size(m.narrow) == 2 * elements && m.bytes() == elements * 4 &&
           m.scales.empty() && m.zeros.empty();
  case DType::I8: // a scale per feature, or per (group, feature)
    return size(m.int8) == elements && m.bytes() == elements &&
           (m.group ? isInt8Group(m.group) &&
                          size(m.scales) == m.int4Layout().scaleCount()
                    : size(m.scales) == uint64_t(m.out)) &&
           m.zeros.empty();
  case DType::I4: {
    if (!isInt4Group(m.group))
      return false;
    const Int4Layout layout = m.int4Layout();
    return size(m.int4) == layout.weightWords() &&
           m.bytes() == layout.weightWords() * 2 &&
           size(m.scales) == layout.scaleCount() &&
           (m.zeros.empty() || size(m.zeros) == layout.scaleCount()) &&
           (m.mins.empty() ||
            (m.zeros.empty() && size(m.mins) == layout.scaleCount()));
  }
  case DType::MXFP4: {
    if (m.group != kMxBlock)
      return false;
    const Int4Layout layout = m.int4Layout();
    return size(m.int4) == layout.weightWords() &&
           m.bytes() == layout.weightWords() * 2 && m.scales.empty() &&
           m.zeros.empty() && size(m.exponents) == layout.scaleCount();
  }
  }
  return false;
}

} // namespace

Status PackedWeights::key(const std::string &planJson, WeightNaming naming,
                          const Checkpoint &checkpoint, uint64_t &key) {
  XXH3_state_t *state = XXH3_createState();
  XXH3_64bits_reset(state);
  // Fields end in NUL bytes, so that no two run together.
  auto add = [&](const std::string &field) {
    XXH3_64bits_update(state, field.data(), field.size() + 1);
  };
  add("packed weights " + std::to_string(kVersion) + ", attnc " +
      ATTNC_VERSION);
  add(planJson);
  add(name(naming));
  for (size_t i = 0; i < checkpoint.files().size(); i++) {
    const std::string &file = checkpoint.files()[i];
    std::error_code ec;
    const std::filesystem::path path = std::filesystem::absolute(file, ec);
    struct stat info;
    if (ec || ::stat(file.c_str(), &info) != 0) {
      XXH3_freeState(state);
      return Status(StatusCode::IoError, "'" + file + "' cannot be read");
    }
    const std::string_view header = checkpoint.header(i);
    add(path.string());
    add(std::to_string(info.st_size) + " bytes, modified " +
        std::to_string(info.st_mtim.tv_sec) + "." +
        std::to_string(info.st_mtim.tv_nsec) + ", header " +
        std::to_string(XXH3_64bits(header.data(), header.size())));
  }
  key = XXH3_64bits_digest(state);
  XXH3_freeState(state);
  return Status::ok();
}

Status PackedWeights::map(const std::string &path, uint64_t key,
                          size_t opCount, OpWeights &weights) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return Status(errno == ENOENT ? StatusCode::NotFound : StatusCode::IoError,
                  "'" + path + "' cannot be opened: " + systemError());
  struct stat info;
  auto mapping = std::make_shared<Mapping>();
  if (::fstat(fd, &info) == 0 && uint64_t(info.st_size) >= sizeof(Header)) {
    mapping->bytes = size_t(info.st_size);
    mapping->data = mapAligned(fd, mapping->bytes);
  }
  ::close(fd);
  auto corrupt = [&](const std::string &why) {
    return Status(StatusCode::IoError,
                  "packed weights '" + path + "' are corrupt: " + why);
  };
  if (mapping->data == MAP_FAILED)
    return corrupt("shorter than a header, or not mappable");
  const char *const base = static_cast<const char *>(mapping->data);
  Header header;
  std::memcpy(&header, base, sizeof header);
  if (std::memcmp(header.magic, kMagic, sizeof kMagic) != 0 ||
      header.headerChecksum != headerChecksum(header))
    return corrupt("not a packed-weights header");
  if (header.version != kVersion || header.key != key)
    return Status(StatusCode::NotFound,
                  "'" + path + "' holds weights for another checkpoint, plan "
                  "or runtime (stale)");
  if (header.fileBytes != mapping->bytes)
    return corrupt(std::to_string(mapping->bytes) + " bytes where " +
                   std::to_string(header.fileBytes) + " were written");
  if (header.tableWords > (mapping->bytes - sizeof(Header)) / 8)
    return corrupt("its table runs past the end");
  const uint64_t *table =
      reinterpret_cast<const uint64_t *>(base + sizeof(Header));
  if (XXH3_64bits(table, header.tableWords * 8) != header.tableChecksum)
    return corrupt("its table's checksum disagrees");

  // Rebuild each op's Weights from the table, arrays as views.
  size_t next = 0;
  bool truncatedTable = false;
  auto word = [&]() -> uint64_t {
    if (next >= header.tableWords) {
      truncatedTable = true;
      return 0;
    }
    return table[next++];
  };
  if (word() != opCount)
    return corrupt("written for " + std::to_string(table[0]) + " ops, not " +
                   std::to_string(opCount));
  std::vector<std::tuple<const void *, size_t, uint64_t>> ranges;
  std::string badArray;
  OpWeights loaded;
  for (size_t op = 0; op < opCount; op++) {
    auto w = std::make_shared<Model::Weights>();
    Model::Weights::walk(
        *w,
        [&](WeightMatrix &m) {
          const uint64_t type = word();
          m.type = type <= uint64_t(kLastDType) ? DType(type) : DType::F32;
          if (type > uint64_t(kLastDType))
            badArray = "a matrix of an unknown type";
          m.in = int64_t(word()), m.out = int64_t(word());
          m.panel = int64_t(word()), m.group = int64_t(word());
        },
        [&](auto &array) {
          using T = std::decay_t<decltype(array[0])>;
          const uint64_t offset = word(), bytes = word(), checksum = word();
          if (bytes == 0)
            return;
          if (offset % kAlignment || offset > mapping->bytes ||
              bytes > mapping->bytes - offset || bytes % sizeof(T)) {
            badArray = "an array outside the file";
            return;
          }
          array = WeightArray<T>::mapped(
              mapping, reinterpret_cast<const T *>(base + offset),
              bytes / sizeof(T));
          ranges.emplace_back(base + offset, size_t(bytes), checksum);
        });
    auto matrixBad = [](const Model::Weights &w) {
      bool bad = false;
      Model::Weights::walk(
          w, [&](const WeightMatrix &m) { bad = bad || !wellFormed(m); },
          [](const auto &) {});
      return bad;
    };
    if (badArray.empty() && !truncatedTable && matrixBad(*w))
      badArray = "a matrix whose arrays disagree with its shape";
    if (truncatedTable)
      return corrupt("its table ends early");
    if (!badArray.empty())
      return corrupt("op " + std::to_string(op) + " has " + badArray);
    loaded.push_back(std::move(w));
  }
  if (next != header.tableWords)
    return corrupt("its table has words left over");
  if (int64_t bad = firstMismatch(ranges); bad >= 0)
    return corrupt("the checksum of the array at byte " +
                   std::to_string(static_cast<const char *>(
                                      std::get<0>(ranges[size_t(bad)])) -
                                  base) +
                   " disagrees");
  weights = std::move(loaded);
  return Status::ok();
}

Status PackedWeights::write(const std::string &path, uint64_t key,
                            const OpWeights &weights) {
  // Lay the file out: the table, then the arrays at aligned offsets; the
  // file ends with the last array (no trailing hole).
  uint64_t tableWords = 1;
  for (const auto &w : weights)
    Model::Weights::walk(
        *w, [&](const WeightMatrix &) { tableWords += 5; },
        [&](const auto &) { tableWords += 3; });
  std::vector<uint64_t> table = {weights.size()};
  std::vector<std::tuple<const void *, size_t, uint64_t>> arrays; // at offset
  uint64_t fileBytes = sizeof(Header) + tableWords * 8;
  for (const auto &w : weights)
    Model::Weights::walk(
        *w,
        [&](const WeightMatrix &m) {
          table.insert(table.end(),
                       {uint64_t(m.type), uint64_t(m.in), uint64_t(m.out),
                        uint64_t(m.panel), uint64_t(m.group)});
        },
        [&](const auto &array) {
          const size_t bytes = array.size() * sizeof(array[0]);
          const uint64_t offset = bytes ? alignUp(fileBytes, bytes) : 0;
          table.insert(table.end(), {offset, uint64_t(bytes),
                                     XXH3_64bits(array.data(), bytes)});
          if (bytes) {
            arrays.emplace_back(array.data(), bytes, offset);
            fileBytes = offset + bytes;
          }
        });
  Header header{};
  std::memcpy(header.magic, kMagic, sizeof kMagic);
  header.version = kVersion;
  header.key = key;
  header.fileBytes = fileBytes;
  header.tableWords = tableWords;
  header.tableChecksum = XXH3_64bits(table.data(), table.size() * 8);
  header.headerChecksum = headerChecksum(header);

  const std::string partial = path + ".partial-" + std::to_string(getpid());
  const int fd =
      ::open(partial.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return Status(StatusCode::IoError,
                  "cannot write '" + path + "': " + systemError());
  auto writeAt = [&](const void *data, size_t bytes, uint64_t offset) {
    const char *p = static_cast<const char *>(data);
    while (bytes > 0) {
      const ssize_t n = ::pwrite(fd, p, std::min<size_t>(bytes, 1 << 30),
                                 off_t(offset));
      if (n <= 0)
        return false;
      p += n, bytes -= size_t(n), offset += uint64_t(n);
    }
    return true;
  };
  bool ok = writeAt(&header, sizeof header, 0) &&
            writeAt(table.data(), table.size() * 8, sizeof header);
  for (const auto &[data, bytes, offset] : arrays)
    ok = ok && writeAt(data, bytes, offset);
  const std::string why = ok ? "" : systemError();
  ok = ::close(fd) == 0 && ok;
  if (!ok || std::rename(partial.c_str(), path.c_str()) != 0) {
    const std::string reason = why.empty() ? systemError() : why;
    std::remove(partial.c_str());
    return Status(StatusCode::IoError,
                  "cannot write '" + path + "': " + reason);
  }
  return Status::ok();
}

} // namespace attn::runtime
