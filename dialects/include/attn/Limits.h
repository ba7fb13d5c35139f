//===- Limits.h - the largest sizes attnc accepts ---------------*- C++ -*-===//
//
// One place for the bounds every input format inherits: the JSON importer
// reads within them and the dialect's verifiers enforce them, so a .mlir
// file cannot carry what a description could not. They keep every size
// attnc computes (bytes of a cache, of a weight, of a kernel's buffer)
// within int64 and every kernel extent within Halide's int32 indexing.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_LIMITS_H
#define ATTN_LIMITS_H

#include <cstdint>

namespace mlir::attn::limits {
constexpr int64_t kHeads = int64_t(1) << 16;     ///< query or KV heads
constexpr int64_t kHeadDim = int64_t(1) << 16;   ///< channels per head
constexpr int64_t kDModel = int64_t(1) << 20;    ///< model width
constexpr int64_t kBatch = int64_t(1) << 16;     ///< sequences planned for
constexpr int64_t kLength = int64_t(1) << 30;    ///< tokens in a sequence
constexpr int64_t kPageSize = int64_t(1) << 20;  ///< tokens per cache page
constexpr int64_t kVocabulary = int64_t(1) << 24;
constexpr int64_t kPositions = int64_t(1) << 24; ///< learned position rows
constexpr int64_t kFfn = int64_t(1) << 24;       ///< FFN hidden width
constexpr int64_t kExperts = 4096;               ///< experts of one FFN
constexpr int64_t kRepeat = 4096;                ///< layers or blocks repeated
/// Output or input features of one projection (a fused QKV's
/// (query + 2 · KV heads) · head_dim, a vocabulary, an FFN): 2^26 keeps a
/// weight's element count, and any tensor's, within Halide's int32 indexing
/// per dimension.
constexpr int64_t kFeatures = int64_t(1) << 26;
} // namespace mlir::attn::limits

#endif // ATTN_LIMITS_H
