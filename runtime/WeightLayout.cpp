//===- WeightLayout.cpp - a checkpoint laid out for the kernels ----------===//
//
// Model::layOut: each op's tensors (TensorNames.h) checked against the
// file, then read a panel at a time and packed for its kernels
// (WeightMatrix.cpp: the layout Linear.cpp's kernels read); GPTQ and AWQ
// layers repacked from their own packing (Int4Checkpoint.h).
//
//===----------------------------------------------------------------------===//

#include "ModelWeights.h"
#include "TensorNames.h"

#include "attn/runtime/Checkpoint.h"
#include "attn/runtime/Int4Checkpoint.h"

#include <algorithm>
#include <memory>
#include <set>

namespace attn::runtime {

Status Model::layOut(const ModelPlan &plan, WeightNaming naming,
                     const std::string &weightsPath, const Checkpoint &file,
                     std::vector<std::shared_ptr<const Weights>> &weights) {
  std::vector<OpTensorNames> names = tensorNames(plan, naming);
  if (const GgufFile *gguf = file.gguf()) {
    std::string architecture;
    (void)gguf->getString("general.architecture", architecture);
    if (Status status = ggufNames(plan, naming, architecture, names); !status)
      return Status(status.code(),
                    "'" + weightsPath + "': " + status.message());
  }
  // Every linear kernel of a GPTQ or AWQ model reads zero points: the
  // checkpoint's, and 8 where loading quantizes (the output head).
  const bool zeros = plan.weightFormat.has_value();
  // The model's weights, as every linear kernel reads them but those with
  // weights of their own (a head, experts, a GGUF file's mixed blocks).
  const MatrixLayout modelLayout{plan.weightType, plan.weightPanel,
                                 plan.weightGroup};
  Status failure = Status::ok(); // of a quantized layer's tensors
  // Where the file lacks a tensor but holds one of its alternatives (a tied
  // copy), the alternative stands in; unused alternatives may stay in the
  // file (a checkpoint that stores both copies).
  std::set<std::string> tolerated;
  for (OpTensorNames &op : names)
    for (OpTensorNames::Entry &entry : op.entries) {
      if (!file.find(entry.tensor))
        for (const auto &[alternative, shape] : entry.alternatives)
          if (file.find(alternative)) {
            entry.tensor = alternative;
            entry.shape = shape;
            break;
          }
      for (const auto &alternative : entry.alternatives)
        tolerated.insert(alternative.first);
    }
  if (Status status = checkSharedShapes(plan, names); !status)
    return status;
  std::vector<std::string> present;
  for (const auto &[tensor, view] : file.tensors())
    present.push_back(tensor);
  for (const std::string &tensor : harmlessTensors(plan, naming, present))
    tolerated.insert(tensor);
  // A GGUF file's RoPE factors (Llama 3's, Phi-3's LongRoPE): attnc
  // compiled them into the projection kernels from this file (the model
  // cache keys on them).
  if (file.gguf())
    tolerated.insert({"rope_freqs.weight", "rope_factors_long.weight",
                      "rope_factors_short.weight"});
  if (Status status = checkTensors(file, distinctTensors(names), tolerated);
      !status)
    return Status(status.code(), std::string(name(naming)) + " weights in '" +
                                     weightsPath + "': " + status.message());

  // GGUF's Q and K rows of Llama-family files in Hugging Face's order:
  // in each head of `head` rows, row k·(head / 2) + j is the file's row
  // 2j + k (TensorNames.h's pairedRopeHeadRows). Rows of `in` inputs, in
  // int4 groups of `group`.
  auto pairedRopeRows = [](WeightRows source, int64_t head, int64_t in,
                           int64_t group) {
    auto fileRow = [head](int64_t row) {
      const int64_t within = row % head, half = head / 2;
      return row - within + 2 * (within % half) + within / half;
    };
    WeightRows result;
    result.count = source.count;
    result.symmetricInt4 = source.symmetricInt4;
    result.read = [source, fileRow, in](int64_t first, int64_t count,
                                        float *out) {
      for (int64_t r = 0; r < count; r++)
        source.read(fileRow(first + r), 1, out + r * in);
    };
    if (source.readInt8)
      result.readInt8 = [source, fileRow, in, group](int64_t first,
                                                     int64_t count, int8_t *q,
                                                     float *scales) {
        for (int64_t r = 0; r < count; r++)
          source.readInt8(fileRow(first + r), 1, q + r * in,
                          scales + r * (in / group));
      };
    if (source.readInt4Mins)
      result.readInt4Mins = [source, fileRow, in, group](
                                int64_t first, int64_t count, uint8_t *u,
                                float *scales, float *mins) {
        const int64_t groups = in / group;
        for (int64_t r = 0; r < count; r++)
          source.readInt4Mins(fileRow(first + r), 1, u + r * in,
                              scales + r * groups, mins + r * groups);
      };
    if (source.readInt4)
      result.readInt4 = [source, fileRow, in, group](
                            int64_t first, int64_t count, uint8_t *u,
                            float *scales, uint8_t *zeros) {
        const int64_t groups = in / group;
        for (int64_t r = 0; r < count; r++)
          source.readInt4(fileRow(first + r), 1, u + r * in,
                          scales + r * groups, zeros + r * groups);
      };
    return result;
  };
  // Columns begin + step·o (o < count) of `in` rows of `columns` elements
  // from `tensor`'s element `first` on, transposed: [count][in] floats.
  auto stackedColumns = [](const TensorView &tensor, int64_t first,
                           int64_t in, int64_t columns, int64_t begin,
                           int64_t count, int64_t step, float *out) {
    const size_t element = byteSize(tensor.type);
    const int64_t span = (count - 1) * step + 1; // the columns read per row
    std::vector<float> row(static_cast<size_t>(span));
    for (int64_t k = 0; k < in; k++) {
      TensorView slice = tensor;
      slice.data = static_cast<const char *>(tensor.data) +
                   size_t(first + k * columns + begin) * element;
      slice.bytes = size_t(span) * element;
      readFloats(slice, row.data());
      for (int64_t o = 0; o < count; o++)
        out[o * in + k] = row[size_t(o * step)];
    }
  };
  auto get = [&](const OpTensorNames &n, const char *role) {
    const OpTensorNames::Entry *entry = n.find(role);
    if (!entry)
      return PooledVector<float>();
    const TensorView &tensor = *file.find(entry->tensor);
    if (entry->stackIndex >= 0) { // a bias [E][columns]: one slice's columns
      const int64_t columns = entry->shape.back();
      PooledVector<float> values(size_t(entry->columnCount));
      stackedColumns(tensor, entry->stackIndex * columns, 1, columns,
                     entry->columnBegin, entry->columnCount, entry->columnStep,
                     values.data());
      return values;
    }
    PooledVector<float> values(elementCount(tensor));
    readFloats(tensor, values.data());
    file.release(tensor);
    if (!entry->conv1d)
      return values;
    // [in][out] (or [out] for a bias), columns [begin, begin + count).
    const int64_t out = entry->shape.back(), begin = entry->columnBegin,
                  count = entry->columnCount ? entry->columnCount : out;
    if (entry->shape.size() == 1)
      return PooledVector<float>(values.begin() + begin,
                                 values.begin() + begin + count);
    const int64_t in = entry->shape[0];
    PooledVector<float> transposed(size_t(count * in));
    for (int64_t o = 0; o < count; o++)
      for (int64_t k = 0; k < in; k++)
        transposed[size_t(o * in + k)] = values[size_t(k * out + begin + o)];
    return transposed;
  };
  // A linear weight's rows, read from the file a panel at a time (GPT-2's
  // Conv1D slices, [in][out] in the file, are transposed whole first).
  // `done` releases the tensors' pages once packed.
  std::vector<const TensorView *> packed;
  // `target`: how the kernel reads the matrix, which decides whether a
  // GGUF file's blocks are read as they are.
  auto rowsAs = [&](const OpTensorNames &n, const char *role,
                    const MatrixLayout &target) -> WeightRows {
    const OpTensorNames::Entry *entry = n.find(role);
    const std::string quantizedRole =
        std::string(role).substr(0, std::string(role).rfind('.')) + ".qweight";
    if (const OpTensorNames::Entry *q = n.find(quantizedRole);
        !entry && q && plan.weightFormat) {
      // [in/8][out] (GPTQ) or [in][out/8] (AWQ): the layer's shape.
      const bool awq = *plan.weightFormat == Int4Format::Awq;
      const int64_t out = awq ? q->shape[1] * 8 : q->shape[1],
                    in = awq ? q->shape[0] : q->shape[0] * 8;
      std::shared_ptr<const Int4Layer> layer;
      const std::string base = q->tensor.substr(
          0, q->tensor.size() - std::string(".qweight").size());
      if (Status opened = Int4Layer::open(file, base, *plan.weightFormat, out,
                                          in, plan.weightGroup, layer);
          !opened) {
        if (failure) // the first problem is the one reported
          failure = opened;
        return {};
      }
      WeightRows result;
      result.count = out;
      result.readInt4 = [layer](int64_t first, int64_t count, uint8_t *u,
                                float *scales, uint8_t *zeros) {
        layer->read(first, count, u, scales, zeros);
      };
      return result;
    }
    if (!entry)
      return {};
    if (entry->stackIndex >= 0) { // [E][in][columns]: expert e's columns
      const TensorView *tensor = file.find(entry->tensor);
      packed.push_back(tensor);
      const int64_t in = entry->shape[1], columns = entry->shape[2],
                    first = entry->stackIndex * in * columns,
                    begin = entry->columnBegin, step = entry->columnStep;
      return {entry->columnCount,
              [tensor, first, in, columns, begin, step,
               stackedColumns](int64_t row, int64_t count, float *out) {
                stackedColumns(*tensor, first, in, columns, begin + row * step,
                               count, step, out);
              }};
    }
    if (entry->conv1d) {
      auto values = std::make_shared<PooledVector<float>>(get(n, role));
      const int64_t in = entry->shape[0];
      return {int64_t(values->size()) / in,
              [values, in](int64_t first, int64_t count, float *out) {
                std::copy_n(values->data() + first * in, count * in, out);
              }};
    }
    const TensorView *tensor = file.find(entry->tensor);
    packed.push_back(tensor);
    const int64_t in = tensor->shape[1];
    const size_t rowBytes = storedBytes(tensor->type, in);
    // A fused tensor's rows [rowBegin, rowBegin + rowCount) (checked
    // against the file's shape by checkTensors: the entry's shape is it).
    const int64_t begin = entry->rowBegin,
                  count = entry->rowCount ? entry->rowCount : tensor->shape[0];
    WeightRows result{count,
                      [tensor, rowBytes, begin](int64_t first, int64_t count,
                                                float *out) {
                        TensorView slice = *tensor;
                        slice.data = static_cast<const char *>(tensor->data) +
                                     size_t(begin + first) * rowBytes;
                        slice.bytes = size_t(count) * rowBytes;
                        readFloats(slice, out);
                      }};
    // A GGUF tensor's blocks, rows from `begin` (a fused tensor's slice).
    const GgufTensor *blocks =
        file.gguf() ? file.gguf()->tensor(entry->tensor) : nullptr;
    // GGUF's Q4_0 rows for int4 kernels in groups of 32: the same values
    // as they are, (u - 8) · d (Gguf.h), never requantized.
    if (tensor->type == TensorType::Q4_0 && target.type == DType::I4 &&
        target.group == 32 && !plan.weightFormat && !plan.weightMins) {
      result.symmetricInt4 = true;
      result.readInt4 = [blocks, in, begin](int64_t first, int64_t count,
                                            uint8_t *u, float *scales,
                                            uint8_t *zeros) {
        readQ4_0Rows(*blocks, begin + first, count, u, scales);
        std::fill_n(zeros, count * in / 32, kInt4SymmetricZero);
      };
    }
    // Q4_1 and Q4_K rows for int4 kernels with minimums in groups of 32:
    // u · scale + min as they are.
    if ((tensor->type == TensorType::Q4_1 ||
         tensor->type == TensorType::Q4_K) &&
        target.type == DType::I4 && target.group == 32 && plan.weightMins) {
      result.readInt4Mins = [blocks, begin](int64_t first, int64_t count,
                                            uint8_t *u, float *scales,
                                            float *mins) {
        readQ4MinRows(*blocks, begin + first, count, u, scales, mins);
      };
    }
    // Q8_0, Q5_0 and Q6_K rows for int8 kernels in groups of 32, 32 and
    // 16: q · scale as they are (readInt8Rows).
    if (blocks && target.type == DType::I8 && target.group &&
        ggmlInt8Group(blocks->type) == target.group) {
      result.readInt8 = [blocks, begin](int64_t first, int64_t count,
                                        int8_t *q, float *scales) {
        readInt8Rows(*blocks, begin + first, count, q, scales);
      };
    }
    if (const int64_t head = entry->pairedRopeHeadRows)
      return pairedRopeRows(std::move(result), head, in,
                            target.group ? target.group : 32);
    return result;
  };
  // Rows as the model's weights are read.
  auto rows = [&](const OpTensorNames &n, const char *role) {
    return rowsAs(n, role, modelLayout);
  };
  // `matrix` [in][...] laid out as `layout` says; i4 with the model's
  // offsets (a GPTQ/AWQ checkpoint's zero points, or GGUF's minimums).
  auto pack = [&](WeightMatrix &matrix, std::vector<WeightRows> parts,
                  int64_t in, const MatrixLayout &layout) {
    const bool int4 = layout.type == DType::I4;
    matrix.pack(std::move(parts), in, layout.panel, layout.type, layout.group,
                int4 && zeros, int4 && plan.weightMins);
  };
  // MXFP4 rows of a stack of experts as published (`base`.blocks and
  // `base`.scales: TensorNames' addStackedRows), read as they are: each
  // row's bytes split into its codes (the low nibble first), and its
  // exponent bytes.
  auto mxRows = [&](const OpTensorNames &n,
                    const std::string &base) -> WeightRows {
    const OpTensorNames::Entry *blocks = n.find(base + ".blocks"),
                               *scales = n.find(base + ".scales");
    if (!blocks || !scales)
      return {};
    const TensorView *codes = file.find(blocks->tensor),
                     *exponents = file.find(scales->tensor);
    packed.push_back(codes);
    packed.push_back(exponents);
    const int64_t rows = blocks->shape[1], groups = blocks->shape[2],
                  first = blocks->stackIndex * rows + blocks->rowBegin,
                  step = blocks->rowStep, in = groups * kMxBlock;
    WeightRows result;
    result.count = blocks->rowCount;
    result.readMx = [codes, exponents, first, step, groups,
                     in](int64_t row, int64_t count, uint8_t *u, uint8_t *e) {
      const auto *bytes = static_cast<const uint8_t *>(codes->data);
      const auto *scale = static_cast<const uint8_t *>(exponents->data);
      for (int64_t r = 0; r < count; r++) {
        const int64_t source = first + (row + r) * step;
        const uint8_t *from = bytes + source * (in / 2);
        for (int64_t i = 0; i < in / 2; i++) {
          u[r * in + 2 * i] = from[i] & 15;
          u[r * in + 2 * i + 1] = from[i] >> 4;
        }
        std::copy_n(scale + source * groups, groups, e + r * groups);
      }
    };
    return result;
  };
  auto done = [&] {
    for (const TensorView *tensor : packed)
      file.release(*tensor);
    packed.clear();
  };
  const int64_t d = plan.dModel;
  // RMS norm weights as the kernels multiply by them: the stored w plus the
  // checkpoint's offset (Gemma's (1 + w)), once. llama.cpp's converter
  // stores them with the offset added: a GGUF file's are as multiplied.
  const float normOffset = file.gguf() ? 0.0f : plan.normWeightOffset;
  auto rmsWeight = [&](const OpTensorNames &n, const char *role) {
    PooledVector<float> weight = get(n, role);
    for (float &v : weight)
      v += normOffset;
    return weight;
  };
  // A latent layer's (PlanOp::Latent, ModelWeights.h): its RoPE channels
  // de-interleaved (DeepSeek stores the pairs (0, 1), (2, 3) …; the kernels
  // rotate channel i with i + rope/2, and the dot products do not see the
  // order), and kv_b_proj's rows split into each head's W_uk (transposed)
  // and W_uv.
  auto layOutLatent = [&](const PlanOp &op, const OpTensorNames &n,
                          Weights &w) -> Status {
    const PlanOp::Latent &l = op.latent;
    if (plan.weightFormat)
      return Status(StatusCode::InvalidArgument,
                    "layer " + op.name +
                        ": latent attention of GPTQ or AWQ checkpoints is "
                        "not read yet");
    const int64_t heads = op.queryHeads, rope = l.ropeDim, nope = l.nopeDim,
                  value = l.valueDim, rank = l.rank, panel = plan.weightPanel;
    auto rotated = [rope](int64_t channel) {
      return channel < rope / 2 ? 2 * channel : 2 * (channel - rope / 2) + 1;
    };
    // `source`'s rows in the order `order` lists them, `in` floats each.
    auto reordered = [](WeightRows source, std::vector<int64_t> order,
                        int64_t in) {
      auto rowsOf = std::make_shared<std::vector<int64_t>>(std::move(order));
      WeightRows result;
      result.count = int64_t(rowsOf->size());
      result.read = [source, rowsOf, in](int64_t first, int64_t count,
                                         float *out) {
        for (int64_t r = 0; r < count; r++)
          source.read((*rowsOf)[size_t(first + r)], 1, out + r * in);
      };
      return result;
    };
    // The query: each head's [nope | rope] rows as [rope (de-interleaved) |
    // nope].
    const int64_t queryIn = l.queryRank ? l.queryRank : plan.dModel;
    std::vector<int64_t> order;
    for (int64_t h = 0; h < heads; h++) {
      const int64_t head = h * (nope + rope);
      for (int64_t c = 0; c < rope; c++)
        order.push_back(head + nope + rotated(c));
      for (int64_t c = 0; c < nope; c++)
        order.push_back(head + c);
    }
    w.query.pack({reordered(rows(n, "q.weight"), order, queryIn)}, queryIn,
                 panel, plan.weightType, plan.weightGroup, false,
                   plan.weightMins);
    if (l.queryRank) {
      w.queryDown.pack({rows(n, "q_a.weight")}, plan.dModel, panel,
                       plan.weightType, plan.weightGroup, false,
                   plan.weightMins);
      w.queryDownNorm = rmsWeight(n, "q_a_norm.weight");
    }
    // [latent | rope] rows as [rope (de-interleaved) | latent].
    order.clear();
    for (int64_t c = 0; c < rope; c++)
      order.push_back(rank + rotated(c));
    for (int64_t c = 0; c < rank; c++)
      order.push_back(c);
    w.keyValue.pack({reordered(rows(n, "kv_a.weight"), order, plan.dModel)},
                    plan.dModel, panel, plan.weightType, plan.weightGroup, false,
                   plan.weightMins);
    w.latentNorm = rmsWeight(n, "kv_a_norm.weight");
    // kv_b_proj [heads][nope + value][rank]: head h's rows [0, nope) are
    // W_uk_h, its rows [nope, nope + value) W_uv_h.
    auto up = std::make_shared<PooledVector<float>>(get(n, "kv_b.weight"));
    WeightRows absorb; // output (h, c) of W_ukᵀ: column c of W_uk_h
    absorb.count = heads * rank;
    absorb.read = [up, rank, nope, value](int64_t first, int64_t count,
                                          float *out) {
      for (int64_t r = 0; r < count; r++) {
        const int64_t h = (first + r) / rank, c = (first + r) % rank;
        for (int64_t k = 0; k < nope; k++)
          out[r * nope + k] =
              (*up)[size_t((h * (nope + value) + k) * rank + c)];
      }
    };
    WeightRows unabsorb; // output (h, j) of W_uv: row j of W_uv_h
    unabsorb.count = heads * value;
    unabsorb.read = [up, rank, nope, value](int64_t first, int64_t count,
                                            float *out) {
      for (int64_t r = 0; r < count; r++) {
        const int64_t h = (first + r) / value, j = (first + r) % value;
        std::copy_n(up->data() + (h * (nope + value) + nope + j) * rank,
                    rank, out + r * rank);
      }
    };
    w.absorb.pack({absorb}, nope, panel, plan.weightType, plan.weightGroup, false,
                   plan.weightMins);
    w.unabsorb.pack({unabsorb}, rank, panel, plan.weightType, plan.weightGroup, false,
                   plan.weightMins);
    w.output.pack({rows(n, "out.weight")}, heads * value, panel,
                  plan.weightType, plan.weightGroup, false,
                   plan.weightMins);
    return Status::ok();
  };
  for (size_t i = 0; i < plan.ops.size(); i++) {
    const PlanOp &op = plan.ops[i];
    const OpTensorNames &n = names[i];
    auto w = std::make_shared<Weights>();
    switch (op.kind) {
    case OpKind::Embedding:
      w->table = get(n, "table");
      w->positionTable = get(n, "positions");
      break;
    case OpKind::Norm:
      w->normWeight = op.layerNorm ? get(n, "weight") : rmsWeight(n, "weight");
      w->normBias = get(n, "bias");
      break;
    case OpKind::Attention: {
      if (op.latent.rank) {
        if (Status s = layOutLatent(op, n, *w); !s)
          return s;
        done();
        break;
      }
      const int64_t q = int64_t(op.queryHeads) * op.headDim,
                    kv = int64_t(op.kvHeads) * op.headDim;
      // Fused: Q | K | V. Else Q, and K | V, or K and V apart (`value`:
      // stored at another precision than K).
      const MatrixLayout &keyLayout =
          op.fusedProjections ? op.query.weights : op.keyValue.weights;
      const MatrixLayout &valueLayout =
          op.value ? op.value.weights : keyLayout;
      const WeightRows wq = rowsAs(n, "q.weight", op.query.weights),
                       wk = rowsAs(n, "k.weight", keyLayout),
                       wv = rowsAs(n, "v.weight", valueLayout);
      const PooledVector<float> bq = get(n, "q.bias"), bk = get(n, "k.bias"),
                                bv = get(n, "v.bias");
      if (op.fusedProjections) {
        pack(w->query, {wq, wk, wv}, d, op.query.weights);
      } else {
        pack(w->query, {wq}, d, op.query.weights);
        if (op.value) {
          pack(w->keyValue, {wk}, d, keyLayout);
          pack(w->value, {wv}, d, valueLayout);
        } else {
          pack(w->keyValue, {wk, wv}, d, keyLayout);
        }
      }
      if (op.bias) {
        w->queryBias = bq;
        PooledVector<float> &kvBias =
            (op.fusedProjections ? w->queryBias : w->keyValueBias).edit();
        kvBias.insert(kvBias.end(), bk.begin(), bk.end());
        PooledVector<float> &vBias = op.value ? w->valueBias.edit() : kvBias;
        vBias.insert(vBias.end(), bv.begin(), bv.end());
      }
      if (op.qkNorm != PlanOp::QkNorm::None) {
        // The kernels' per-feature weights: the query norm's repeated over
        // the query heads, the key norm's over the key heads (once each
        // when they span the whole projection).
        const bool whole = op.qkNorm == PlanOp::QkNorm::Projection;
        const PooledVector<float> qNorm = rmsWeight(n, "q_norm.weight"),
                                  kNorm = rmsWeight(n, "k_norm.weight");
        auto repeat = [](PooledVector<float> &to, const PooledVector<float> &w,
                         int heads) {
          for (int h = 0; h < heads; h++)
            to.insert(to.end(), w.begin(), w.end());
        };
        PooledVector<float> &queryNorm = w->queryNorm.edit();
        repeat(queryNorm, qNorm, whole ? 1 : op.queryHeads);
        repeat(op.fusedProjections ? queryNorm : w->keyValueNorm.edit(), kNorm,
               whole ? 1 : op.kvHeads);
      }
      pack(w->output, {rowsAs(n, "out.weight", op.output.weights)}, q,
           op.output.weights);
      done();
      w->outputBias = get(n, "out.bias");
      if (op.sinks)
        w->sinks = get(n, "sinks");
      break;
    }
    case OpKind::Ffn: {
      // Gated: up is gate | up, the halves the down kernel pairs.
      const int64_t f = op.intermediateSize;
      if (op.experts.count) {
        // Every expert's, stacked along the outputs (each a whole number
        // of panels: the verifier's multiples of 32), and the router.
        std::vector<WeightRows> ups, downs;
        PooledVector<float> &upBias = w->upBias.edit(),
                            &downBias = w->downBias.edit();
        const bool mx = op.experts.weightType == DType::MXFP4;
        if (mx && naming != WeightNaming::GptOss)
          return Status(StatusCode::InvalidArgument,
                        "op '" + op.name + "': MXFP4 experts are read from "
                        "gpt-oss checkpoints (their _blocks and _scales "
                        "tensors), not from " + name(naming) + " ones");
        for (int e = 0; e < op.experts.count; e++) {
          auto role = [&](const char *r) { return expertRole(e, r); };
          auto weight = [&](const char *r) {
            return mx ? mxRows(n, role(r))
                      : rows(n, (role(r) + ".weight").c_str());
          };
          if (op.gated)
            ups.push_back(weight("gate"));
          ups.push_back(weight("up"));
          downs.push_back(weight("down"));
          for (const char *r : {"gate", "up", "down"}) {
            if (!op.gated && std::string(r) == "gate")
              continue;
            const PooledVector<float> bias = get(n, (role(r) + ".bias").c_str());
            PooledVector<float> &to = std::string(r) == "down" ? downBias
                                                               : upBias;
            to.insert(to.end(), bias.begin(), bias.end());
          }
        }
        w->router.pack({rowsAs(n, "router.weight",
                             {op.experts.routerType, op.experts.routerPanel, 0})},
                       d, op.experts.routerPanel, op.experts.routerType);
        w->routerBias = get(n, "router.bias");
        w->selectionBias = get(n, "router.selection_bias");
        // The experts' own type (a checkpoint's MXFP4) or the model's.
        const int64_t group = kernelWeightGroup(
            op.experts.weightType, plan.weightType, plan.weightGroup);
        w->up.pack(ups, d, op.experts.weightPanel, op.experts.weightType,
                   group, zeros, plan.weightMins);
        w->down.pack(downs, f, op.experts.weightPanel, op.experts.weightType,
                     group, zeros, plan.weightMins);
        if (const int64_t s = op.experts.shared.intermediateSize) {
          std::vector<WeightRows> sharedUp;
          if (op.gated)
            sharedUp.push_back(rows(n, "shared.gate.weight"));
          sharedUp.push_back(rows(n, "shared.up.weight"));
          w->sharedUp.pack(sharedUp, d, plan.weightPanel, plan.weightType,
                           plan.weightGroup, zeros,
                   plan.weightMins);
          w->sharedDown.pack({rows(n, "shared.down.weight")}, s,
                             plan.weightPanel, plan.weightType,
                             plan.weightGroup, zeros,
                   plan.weightMins);
          PooledVector<float> &bias = w->sharedUpBias.edit();
          for (const char *r : {"shared.gate.bias", "shared.up.bias"}) {
            if (!op.gated && std::string(r) == "shared.gate.bias")
              continue;
            const PooledVector<float> b = get(n, r);
            bias.insert(bias.end(), b.begin(), b.end());
          }
          w->sharedDownBias = get(n, "shared.down.bias");
          w->sharedGate = get(n, "shared_gate.weight");
        }
        done();
        break;
      }
      // Each projection as its kernel reads it (a GGUF file's mixed
      // blocks: the down projection in Q6_K beside Q4_K gate and up).
      const WeightRows gate = rowsAs(n, "gate.weight", op.up.weights),
                       up = rowsAs(n, "up.weight", op.up.weights),
                       down = rowsAs(n, "down.weight", op.down.weights);
      if (op.gated) {
        pack(w->up, {gate, up}, d, op.up.weights);
        w->upBias = get(n, "gate.bias");
      } else {
        pack(w->up, {up}, d, op.up.weights);
      }
      const PooledVector<float> upBias = get(n, "up.bias");
      PooledVector<float> &bias = w->upBias.edit();
      bias.insert(bias.end(), upBias.begin(), upBias.end());
      pack(w->down, {down}, f, op.down.weights);
      done();
      w->downBias = get(n, "down.bias");
      break;
    }
    case OpKind::OutputHead: {
      // In its own type where it has one (a checkpoint's float head).
      const MatrixLayout headLayout{op.headType, op.headPanel,
                                    int(op.headGroup)};
      pack(w->head, {rowsAs(n, "weight", headLayout)}, d, headLayout);
      done();
      w->headBias = get(n, "bias");
      break;
    }
    }
    if (!failure)
      return failure;
    weights.push_back(std::move(w));
  }
  return Status::ok();
}

} // namespace attn::runtime
