//===- KernelBuffers.cpp - a kernel's declared buffers as Halide params ---===//

#include "KernelBuffers.h"

#include <stdexcept>

using namespace Halide;

namespace attn {

Type halideType(BufferElement element) {
  switch (element) {
  case BufferElement::F32:
    return Float(32);
  case BufferElement::F16:
    return Float(16);
  case BufferElement::BF16:
    return BFloat(16);
  case BufferElement::U16:
    return UInt(16);
  case BufferElement::U32:
    return UInt(32);
  case BufferElement::I8:
    return Int(8);
  case BufferElement::U8:
    return UInt(8);
  case BufferElement::I32:
    return Int(32);
  }
  return Float(32);
}

bool KernelBuffers::has(const std::string &name) const {
  for (const KernelBuffer &buffer : declared_)
    if (buffer.name == name)
      return true;
  return false;
}

ImageParam KernelBuffers::input(const std::string &name) {
  if (auto it = taken_.find(name); it != taken_.end())
    return it->second;
  for (const KernelBuffer &buffer : declared_)
    if (buffer.name == name && !buffer.isOutput())
      return taken_
          .emplace(name,
                   ImageParam(halideType(buffer.element), buffer.rank(), name))
          .first->second;
  throw std::logic_error("kernel input '" + name +
                         "' is not declared for this spec (KernelAbi.cpp)");
}

KernelPipeline KernelBuffers::finish(const std::vector<Func> &outputs) const {
  KernelPipeline result;
  std::vector<Func> ordered;
  for (const KernelBuffer &buffer : declared_) {
    if (!buffer.isOutput()) {
      auto it = taken_.find(buffer.name);
      if (it == taken_.end())
        throw std::logic_error("declared kernel input '" + buffer.name +
                               "' is not used by its pipeline");
      result.inputs.push_back(it->second);
      continue;
    }
    // Halide makes Func names unique in a process ("output$3"); the
    // argument keeps that name (the runtime strips the suffix too).
    const Func *found = nullptr;
    for (const Func &output : outputs)
      if (output.name().substr(0, output.name().find('$')) == buffer.name)
        found = &output;
    if (!found) {
      std::string names;
      for (const Func &output : outputs)
        names += " '" + output.name() + "'";
      throw std::logic_error("declared kernel output '" + buffer.name +
                             "' is not an output of its pipeline (it has" +
                             names + ")");
    }
    if (found->dimensions() != buffer.rank() ||
        found->output_types().size() != 1 ||
        found->output_types()[0] != halideType(buffer.element))
      throw std::logic_error(
          "kernel output '" + buffer.name + "' differs from its declaration (" +
          bufferElementName(buffer.element) + ", " + buffer.shape + ")");
    ordered.push_back(*found);
  }
  if (ordered.size() != outputs.size())
    throw std::logic_error("a pipeline has an output its kernel does not "
                           "declare (KernelAbi.cpp)");
  result.pipeline = Pipeline(ordered);
  return result;
}

} // namespace attn
