//===- KernelBuffers.h - declared buffers as Halide params -----*- C++ -*-===//
//
// Each pipeline builder takes its inputs from here and hands its outputs
// back by name, so the generated function's arguments are exactly the
// declaration in KernelAbi.h: an input taken that is not declared, a
// declared one never taken, or an output of another name, type or rank is
// a std::logic_error while building the pipeline (a bug in the builder,
// caught by every kernel test), never a library that disagrees with its
// header.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_SCHEDULES_KERNELBUFFERS_H
#define ATTN_SCHEDULES_KERNELBUFFERS_H

#include "attn/schedules/KernelAbi.h"
#include "attn/schedules/Pipelines.h"

#include "Halide.h"

#include <map>
#include <string>
#include <vector>

namespace attn {

Halide::Type halideType(BufferElement element);

class KernelBuffers {
public:
  explicit KernelBuffers(std::vector<KernelBuffer> declared)
      : declared_(std::move(declared)) {}

  /// The declared input `name` as a parameter of its declared type and rank
  /// (the same parameter on every call).
  Halide::ImageParam input(const std::string &name);

  /// Whether `name` is a declared argument (an optional one of this spec).
  bool has(const std::string &name) const;

  /// The pipeline of `outputs` (each Func named as its declared output; any
  /// order), its inputs in declared order.
  KernelPipeline finish(const std::vector<Halide::Func> &outputs) const;

private:
  std::vector<KernelBuffer> declared_;
  std::map<std::string, Halide::ImageParam> taken_;
};

} // namespace attn

#endif // ATTN_SCHEDULES_KERNELBUFFERS_H
