//===- Sdpa.h - scaled dot-product attention in Halide ----------*- C++ -*-===//

#ifndef ATTN_SCHEDULES_SDPA_H
#define ATTN_SCHEDULES_SDPA_H

#include "attn/schedules/KernelSpec.h"

#include "Halide.h"

#include <vector>

namespace attn {

/// A Halide pipeline with the arguments of its generated function, in order.
struct KernelPipeline {
  Halide::Pipeline pipeline;
  std::vector<Halide::Argument> arguments;
};

/// Builds the fused attention pipeline for `spec` with its schedule for
/// `target`. Arguments: query, key, value (inputs), then the output.
KernelPipeline buildSdpaPipeline(const SdpaSpec &spec,
                                 const Halide::Target &target);

} // namespace attn

#endif // ATTN_SCHEDULES_SDPA_H
