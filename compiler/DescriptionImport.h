//===- DescriptionImport.h - model descriptions to attn IR ------*- C++ -*-===//

#ifndef ATTNC_DESCRIPTIONIMPORT_H
#define ATTNC_DESCRIPTIONIMPORT_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

namespace llvm {
class SourceMgr;
} // namespace llvm

namespace attnc {

/// Imports the JSON model description in `sourceMgr`'s main buffer as a
/// module of attn ops; every op is located at the JSON object it came from.
/// `modelName` overrides the description's "name". Errors are emitted through
/// `context` at their file:line:col; returns null after one.
mlir::OwningOpRef<mlir::ModuleOp>
importJsonDescription(llvm::SourceMgr &sourceMgr, mlir::MLIRContext &context,
                      llvm::StringRef modelName);

} // namespace attnc

#endif // ATTNC_DESCRIPTIONIMPORT_H
