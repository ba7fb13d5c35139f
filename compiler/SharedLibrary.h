//===- SharedLibrary.h - a model library the runtime loads with dlopen -*- C++ -*-===//

#ifndef ATTNC_SHAREDLIBRARY_H
#define ATTNC_SHAREDLIBRARY_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

namespace attnc {

/// Links `<outDir>/<name>.a` (every kernel and its Halide runtime) with a
/// small generated `<name>_library.c` into `<outDir>/lib<name>.so`, which
/// exports one symbol, attnc_library() (ATTNC_LIBRARY_SYMBOL), returning
/// the header's `<name>_library`; everything else stays hidden, so several
/// model libraries can be loaded in one process. Uses the system C compiler
/// (`$CC`, else `cc`) as a linker, as other ahead-of-time compilers do to
/// make shared libraries; its failure is reported with its output.
llvm::Error linkSharedLibrary(llvm::StringRef name, llvm::StringRef outDir);

} // namespace attnc

#endif // ATTNC_SHAREDLIBRARY_H
