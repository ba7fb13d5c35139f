//===- ContextBuffers.h - an execution context's buffers --------*- C++ -*-===//
//
// Private to the runtime: what an ExecutionContext (Model.h) holds. Each
// buffer is rows of a width fixed from the model's plan (the widest op that
// uses it), grown to the rows of a pass before the pass starts
// (Buffers::reserve); on a GPU model each activation owns its device copy,
// so host/device coherence is the buffer's business (DeviceCopy.h). The
// forward pass (ModelRunner.cpp) hands each helper the group it uses.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_RUNTIME_CONTEXTBUFFERS_H
#define ATTN_RUNTIME_CONTEXTBUFFERS_H

#include "DeviceCopy.h"

#include "attn/runtime/KernelCall.h"
#include "attn/runtime/Model.h"

#include <algorithm>
#include <memory>
#include <new>
#include <vector>

namespace attn::runtime {

/// An allocator at the alignment a projection with the cache append fused in
/// requires of its output (attnc_library.h).
template <class T> struct KernelAlignedAllocator {
  using value_type = T;
  static constexpr std::align_val_t alignment{ATTNC_APPEND_OUTPUT_ALIGNMENT};
  KernelAlignedAllocator() = default;
  template <class U>
  KernelAlignedAllocator(const KernelAlignedAllocator<U> &) noexcept {}
  T *allocate(size_t n) {
    return static_cast<T *>(::operator new(n * sizeof(T), alignment));
  }
  void deallocate(T *p, size_t) noexcept { ::operator delete(p, alignment); }
  template <class U> bool operator==(const KernelAlignedAllocator<U> &) const {
    return true;
  }
  template <class U> bool operator!=(const KernelAlignedAllocator<U> &) const {
    return false;
  }
};

/// Rows of `width` T, [rows][width], grown by reserve() and never shrunk;
/// with `device`, the device copy kernels use (reallocated when the rows
/// grow: a pass reserves before it writes anything).
template <class T, class Allocator = std::allocator<T>> class RowBuffer {
public:
  RowBuffer(int64_t width, const DeviceApi *device)
      : width_(width), device_(device) {
    if (device)
      copy_ = std::make_unique<DeviceCopy>();
  }
  /// Room for `rows` rows.
  Status reserve(int64_t rows) {
    const size_t n = size_t(rows) * size_t(width_);
    if (host_.size() < n)
      host_.resize(n);
    if (!copy_ || host_.empty())
      return Status::ok();
    return copy_->allocate(*device_, host_.data(), host_.size() * sizeof(T),
                           /*hostHasData=*/false);
  }
  T *data() { return host_.data(); }
  /// The rows as a kernel argument (on the device where they live there).
  Placed<T> placed() { return {host_.data(), copy_.get()}; }
  /// Host code is about to read the rows a kernel wrote.
  void hostReads() {
    if (copy_)
      copy_->hostReads();
  }

private:
  int64_t width_;
  const DeviceApi *device_;
  std::vector<T, Allocator> host_;
  std::unique_ptr<DeviceCopy> copy_; // null: host memory
};

using Activations = RowBuffer<float>;
/// The output of a projection that may append K/V to the cache.
using ProjectionRows = RowBuffer<float, KernelAlignedAllocator<float>>;
using IndexRows = RowBuffer<int32_t>; // host memory only

/// The residual stream and what the blocks compute into it.
struct StreamBuffers {
  Activations x, residual, normed; ///< [tokens][dModel]
  Activations hidden; ///< [tokens][widest FFN hidden: gate | up when gated]
};

/// What a latent attention layer (LatentAttention.h) computes beside the
/// attention buffers; host memory, grown by each call.
struct LatentBuffers {
  std::vector<float> down;      ///< [tokens][query rank]: q_a's output
  std::vector<float> downNormed; ///< [tokens][query rank]
  std::vector<float> query;     ///< [tokens][heads][rope + nope], rotated
  std::vector<float> keyLatent; ///< [tokens][rope + rank]: the key rotated,
                                ///< the latent before its norm
  std::vector<float> latent;    ///< [tokens][rank]: the latent, dense; then
                                ///< a head's gathered rows (W_uk, W_uv)
  std::vector<float> normed;    ///< [tokens][rank]: the latent normed; then
                                ///< a head's products (W_uk)
  std::vector<float> nope;      ///< [tokens · heads][nope or rank]: the
                                ///< rows W_ukᵀ or W_uv multiplies
  std::vector<float> absorbed;  ///< [tokens · heads][rank]: W_uk_hᵀ · q
  std::vector<int32_t> heads;   ///< [tokens · heads]: each row's head
};

/// What an attention layer computes between its input and its output.
struct AttentionBuffers {
  /// [tokens][widest Q, or Q | K | V where fused]: RoPE applied.
  ProjectionRows projected;
  /// [tokens, or encoder tokens][2 · Hkv · D]: K | V of unfused self layers
  /// and of cross layers.
  ProjectionRows keyValue;
  Activations query;  ///< [tokens][Hq · D]: the dense query decode reads
  Activations output; ///< [tokens][Hq · D]
  /// [keys][Hkv · D] each: dense K and V for the prefill kernels where they
  /// cannot read a projection's columns (a GPU's whole allocations; a
  /// prompt's chunk read back from the cache).
  Activations keys, values;
  IndexRows blockTable; ///< [tokens][pages], width 1: sized per layer
  IndexRows lengths;    ///< [tokens]: keys each query row sees
  IndexRows slots;      ///< [tokens]: a fused cache append's slots
  /// [1][Hkv · D]: the one-slot pool of fused-append kernels that store
  /// nothing (prefill without a cache).
  Activations noCachePool;
  LatentBuffers latent;
};

/// One expert a token runs and the weight of its output.
struct ExpertChoice {
  int32_t expert;
  float weight;
};

/// What a mixture of experts computes between its input and its output.
/// A grouped step (every chosen expert once, Experts.h) runs a row per
/// choice: at most min(tokens · per token, count) rows, `groupedRows`.
struct ExpertBuffers {
  Activations logits;   ///< [tokens][widest expert count]: the router's
  Activations gathered; ///< [max(tokens, grouped rows)][dModel]: the rows
                        ///< one expert runs, or a grouped step's inputs
  Activations output;   ///< [max(tokens, grouped rows)][dModel]: their
                        ///< outputs
  Activations hidden;   ///< [grouped rows][widest expert up]: a grouped
                        ///< step's (gate | up) rows
  IndexRows expertOfRow; ///< [grouped rows]: a grouped step's experts
  std::vector<ExpertChoice> choices; ///< [tokens][per token]
  /// Entries of `choices` by expert (a counting sort: each expert's rows
  /// consecutive, in token order), and where each expert's begin
  /// [experts + 1].
  std::vector<int32_t> byExpert, firstOfExpert;
  /// The plan's largest expert count and experts per token.
  int64_t count = 0, perToken = 0;
  int64_t groupedRows(int64_t tokens) const {
    return std::min(tokens * perToken, count);
  }
};

/// The output head's input rows and their greedy tokens.
struct HeadBuffers {
  Activations rows; ///< [head rows][dModel]: the rows whose logits are asked
  IndexRows greedy; ///< [head rows]: each row's argmax
};

/// The rows of one pass, which its buffers are grown to before it starts.
struct PassRows {
  int64_t tokens;       ///< rows of the residual stream
  int64_t memoryTokens; ///< encoder tokens cross layers project (else 0)
  int64_t denseKeys;    ///< keys of AttentionBuffers::keys / values
  int64_t headRows;     ///< rows the output head takes
};

/// Each buffer's row width: the widest op of the plan that uses it
/// (ExecutionContext.cpp).
struct BufferWidths;

struct ExecutionContext::Buffers {
  explicit Buffers(const Model &model);
  Status reserve(const PassRows &rows);

  StreamBuffers stream;
  AttentionBuffers attention;
  ExpertBuffers experts;
  HeadBuffers head;
  /// [encoder tokens][2 · Hkv · D]: K | V of a plan without a fused append,
  /// written into the cross cache by the host.
  RowBuffer<float> crossRows;

private:
  /// `device`: the model's GPU, where the activations get device copies;
  /// null: the CPU.
  Buffers(const BufferWidths &widths, const DeviceApi *device);
};

} // namespace attn::runtime

#endif // ATTN_RUNTIME_CONTEXTBUFFERS_H
