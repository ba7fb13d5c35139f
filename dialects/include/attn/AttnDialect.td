//===- AttnDialect.td - the attn dialect -------------------*- tablegen -*-===//
//
// The `attn` dialect describes attention layers the way a model author thinks of
// them (heads, KV heads, head size, mask, scale) so that attnc can verify, plan
// and specialize them before they become Halide pipelines.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_DIALECT_TD
#define ATTN_DIALECT_TD

include "mlir/IR/OpBase.td"

def Attn_Dialect : Dialect {
  let name = "attn";
  let summary = "Attention layers for ahead-of-time kernel generation";
  let description = [{
    The `attn` dialect is attnc's intermediate representation. Its ops carry the
    full configuration of an attention computation as attributes; tensor types
    carry the dynamic extents (batch, sequence lengths). Layouts follow the
    convention `[batch, sequence, heads, head_dim]`, head_dim innermost.
  }];
  let cppNamespace = "::mlir::attn";
  let useDefaultAttributePrinterParser = 1;
  let useDefaultTypePrinterParser = 1;
  let extraClassDeclaration = [{
    void registerAttributes();
    void registerTypes();
  }];
}

class Attn_Op<string mnemonic, list<Trait> traits = []>
    : Op<Attn_Dialect, mnemonic, traits>;

#endif // ATTN_DIALECT_TD
