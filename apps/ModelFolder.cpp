//===- ModelFolder.cpp - a Hugging Face model folder, ready to generate ---===//

#include "ModelFolder.h"

#include <chrono>

namespace attn::apps {

using namespace attn::runtime;

llvm::Error loadModelFolder(const std::string &dir,
                            const CompileOptions &options,
                            llvm::raw_ostream &log, ModelFolder &folder) {
  auto fail = [](const std::string &message) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
  };
  bool compiled = false;
  llvm::Expected<std::string> path = findOrCompile(dir, options, log, compiled);
  if (!path)
    return path.takeError();
  auto start = std::chrono::steady_clock::now();
  if (Status s = ModelLibrary::open(*path, folder.library); !s)
    return fail(s.message());
  LoadOptions load;
  if (options.packedWeights)
    load.packedWeights = packedWeightsPath(*path, dir);
  if (Status s = Model::load(folder.library, dir, folder.model, load); !s)
    return fail(s.message());
  log << "attn-run: weights " << folder.model->weightSource() << "\n";
  if (Status s = Tokenizer::load(dir, folder.tokenizer); !s)
    return fail(s.message());
  // A model's vocabulary may be padded past the tokenizer's, never smaller.
  if (folder.tokenizer.vocabularySize() > folder.model->targetVocabulary())
    return fail("the tokenizer has " +
                std::to_string(folder.tokenizer.vocabularySize()) +
                " tokens, the model's vocabulary " +
                std::to_string(folder.model->targetVocabulary()) +
                ": they are not one model's");
  folder.loadSeconds = std::chrono::duration<double>(
                           std::chrono::steady_clock::now() - start)
                           .count();
  return llvm::Error::success();
}

} // namespace attn::apps
