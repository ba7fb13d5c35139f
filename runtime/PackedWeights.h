//===- PackedWeights.h - laid-out weights kept in a file, mapped later -*- C++ -*-===//
//
// Laying a checkpoint out for the kernels (panels, bf16 pairs, int8 / int4
// quantization) takes seconds and gives the same bytes every time. A packed-
// weights file keeps them: written once after a load, memory-mapped
// read-only on the next ones, so a start reads no checkpoint tensor, pages
// are shared by every process that maps the file (attn-serve replicas), and
// the weights cost no anonymous memory.
//
// The file, little-endian:
//   header  (Header below) magic, format version, key, file size, table size
//           and checksums of the table and of the header itself
//   table   uint64 words: the op count, then per op Model::Weights::walk's
//           order: per matrix its type, in, out, panel and group; per array
//           its offset, bytes and XXH3 checksum
//   arrays  each at a 4 KiB-aligned offset (holes between them)
// The key (packedWeightsKey) says which checkpoint and plan the weights are
// for. A file with another key is stale; one whose size, header, table or
// any array's checksum disagrees is corrupt: either way the loader lays the
// checkpoint out again and replaces the file. Checksums are against
// accidents (a half-written or truncated file, a disk error), not against
// someone who can write the cache folder: that folder also holds the model
// library the process loads and runs.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_RUNTIME_PACKEDWEIGHTS_H
#define ATTN_RUNTIME_PACKEDWEIGHTS_H

#include "ModelWeights.h"

#include "attn/runtime/Checkpoint.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace attn::runtime {

class PackedWeights {
public:
  using OpWeights = std::vector<std::shared_ptr<const Model::Weights>>;

  /// What decides a file's contents: this format's version (bumped whenever
  /// a layout in ModelWeights.h / Int4Weights.h changes), the runtime's
  /// version, the plan, the tensor naming, and per checkpoint file its
  /// absolute path, size, modification time and a hash of its header.
  static Status key(const std::string &planJson, WeightNaming naming,
                    const Checkpoint &checkpoint, uint64_t &key);

  /// Maps `path` when it holds weights for `key` and `opCount` ops, every
  /// checksum verified (in parallel: this reads the whole file once).
  /// NotFound: no such file, or one for another key (stale); IoError: it
  /// cannot be read, or it is truncated or corrupt (the message says how).
  static Status map(const std::string &path, uint64_t key, size_t opCount,
                    OpWeights &weights);

  /// Writes `weights` for `key` to `path`, through a sibling temporary file
  /// renamed over it, so that a reader never sees a partial file.
  static Status write(const std::string &path, uint64_t key,
                      const OpWeights &weights);

  /// The format's version: part of the key and of the header.
  // 2: QK-norm weights; 3: sinks; 4: routers of experts; 5: shared experts;
  // 6: latent attention's matrices and norms; 7: routers' biases; 8: int4
  // minimums; 9: V apart from K (its matrix and bias)
  static constexpr uint32_t kVersion = 9;
};

} // namespace attn::runtime

#endif // ATTN_RUNTIME_PACKEDWEIGHTS_H
