//===- KernelAbi.h - the buffers every generated kernel takes ---*- C++ -*-===//
//
// The one statement of each kernel family's arguments: every buffer's name,
// element type, shape and role, in the order of the generated C function.
// Everything else is derived from it:
//   - the pipelines take their Halide parameters from it and hand their
//     outputs back by name (KernelBuffers, Pipelines.h), which refuses a
//     pipeline whose arguments differ from the declaration;
//   - attnc declares the functions in <model>_kernels.h from it;
//   - the runtime passes buffers by these names, matched against the
//     kernel's Halide metadata (generated from the pipeline, so from this).
// Adding an argument is one line here plus its use in the pipeline and in
// the runtime. No Halide here: the compiler's C header writer uses it too.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_SCHEDULES_KERNELABI_H
#define ATTN_SCHEDULES_KERNELABI_H

#include "attn/schedules/KernelSpec.h"

#include <string>
#include <vector>

namespace attn {

/// The element type of a kernel buffer as the kernel reads it.
enum class BufferElement {
  F32,
  F16,
  BF16,
  U16, ///< bf16 bit patterns (GPU kernels: Halide 14 has no bf16 there)
  U32, ///< bf16 weight pairs (KernelSpec.h, LinearSpec)
  I8,
  U8, ///< int4 weight nibbles and zero points (KernelSpec.h, LinearSpec)
  I32,
};

enum class BufferRole { Input, Output };

/// One argument of a generated kernel.
struct KernelBuffer {
  std::string name;
  BufferElement element;
  /// C order, outermost first, e.g. "[tokens][features]"; the rank is the
  /// number of brackets.
  std::string shape;
  BufferRole role = BufferRole::Input;

  int rank() const;
  bool isOutput() const { return role == BufferRole::Output; }
};

/// Where a kernel runs: GPU kernels keep bf16 buffers as their bits.
enum class KernelPlace { Cpu, Gpu };

/// The arguments of each family's kernel for `spec`, in order (inputs, then
/// outputs). The semantics of each buffer are documented with the spec
/// (KernelSpec.h).
std::vector<KernelBuffer> kernelBuffers(const SdpaSpec &spec);
std::vector<KernelBuffer> kernelBuffers(const DecodeSpec &spec,
                                        KernelPlace place);
std::vector<KernelBuffer> kernelBuffers(const LinearSpec &spec,
                                        KernelPlace place);
std::vector<KernelBuffer> kernelBuffers(const NormSpec &spec);
std::vector<KernelBuffer> kernelBuffers(const EmbeddingSpec &spec);

/// The element a KV cache of `element` is read and written as at `place`.
BufferElement cacheBufferElement(DType element, KernelPlace place);

/// "float32", "bfloat16", ...: for messages and generated comments.
const char *bufferElementName(BufferElement element);

} // namespace attn

#endif // ATTN_SCHEDULES_KERNELABI_H
