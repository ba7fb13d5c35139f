//===- Checkpoint.h - a model's weights as Hugging Face publishes them -*- C++ -*-===//
//
// A checkpoint is one .safetensors file, or shards listed by
// model.safetensors.index.json ({"weight_map": {tensor: shard file}}), or a
// model folder holding either (the index first, then model.safetensors),
// or a GGUF file (Gguf.h: its tensors under GGUF's names, shapes with the
// contiguous dimension last, of the types ggmlReadable names; any other
// type is refused naming the tensor).
// Every file is memory-mapped and validated by SafetensorsFile; the index
// and the shards must agree exactly: a shard that is missing, a tensor the
// index puts in a shard that lacks it, a tensor in two shards or in none the
// index names are errors that say which tensor and file.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_RUNTIME_CHECKPOINT_H
#define ATTN_RUNTIME_CHECKPOINT_H

#include "attn/runtime/Gguf.h"
#include "attn/runtime/Safetensors.h"

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace attn::runtime {

class Checkpoint {
public:
  /// Opens `path` (a file, an index or a folder); on failure `checkpoint` is
  /// left empty and the status names the file and tensor at fault.
  static Status open(const std::string &path, Checkpoint &checkpoint);

  /// Null when no shard holds `name`.
  const TensorView *find(const std::string &name) const;
  /// Every tensor of every shard, by name.
  const std::map<std::string, const TensorView *> &tensors() const {
    return tensors_;
  }
  /// The file that holds `name` (for messages); empty when none does.
  std::string fileOf(const std::string &name) const;
  /// The mapped files, in the index's order; one for a single file.
  const std::vector<std::string> &files() const { return paths_; }
  /// Each file's header (SafetensorsFile::header, GgufFile::header), in
  /// files()' order.
  std::string_view header(size_t file) const;
  /// Bytes of tensor data over all files.
  size_t tensorBytes() const;
  /// Drops the pages of `tensor` the process has read (they count towards
  /// its resident memory while mapped); the view stays valid, and reading
  /// it again pages the file back in. A loader calls it once a tensor is
  /// laid out for its kernels, so peak memory stays near the weights.
  void release(const TensorView &tensor) const;
  /// Releases every mapping; the views become invalid.
  void close();
  /// The GGUF file, where the checkpoint is one; else null.
  const GgufFile *gguf() const { return gguf_.get(); }

private:
  Status openGguf(const std::string &path);

  std::vector<std::string> paths_;
  // unique_ptr: views point into each file's tensor list.
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::map<std::string, const TensorView *> tensors_;
  std::map<std::string, size_t> fileOfTensor_;
  std::unique_ptr<GgufFile> gguf_;
  std::vector<TensorView> ggufViews_; // its tensors, in its order
};

/// Checks that `checkpoint` holds exactly `expected` (names, shapes, types
/// readableAs the expected ones); one error lists every problem by tensor
/// name. `tolerated`: names it may hold beyond `expected` (copies of tied
/// weights a checkpoint stores under another name too, buffers such as
/// rotary_emb.inv_freq that change nothing).
Status checkTensors(const Checkpoint &checkpoint,
                    const std::vector<ExpectedTensor> &expected,
                    const std::set<std::string> &tolerated = {});

/// Writes a checkpoint in Hugging Face's layout into the folder `dir`
/// (which must exist): model.safetensors for one shard, else
/// model-0000I-of-0000N.safetensors, tensors split in order into `shards`
/// runs of about equal bytes, and model.safetensors.index.json. Tensor
/// types as writeSafetensors.
Status writeCheckpoint(const std::string &dir,
                       const std::vector<ExpectedTensor> &tensors,
                       const std::vector<const float *> &data, int shards);

} // namespace attn::runtime

#endif // ATTN_RUNTIME_CHECKPOINT_H
