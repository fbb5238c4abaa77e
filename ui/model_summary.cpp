#include "model_summary.h"

#include <algorithm>

#include <QFileInfo>
#include <QMap>

#include "engine/backend.h"
#include "engine/model.h"
#include "gguf/gguf_file.h"

namespace {

// One line per metadata value: arrays as their element type and length (the vocabulary has ~50k
// entries and would make the table useless), strings cut at 200 characters.
QString valueSummary(const wb::GgufValue& v) {
    switch (v.type) {
        case wb::GgufValueType::STRING: {
            QString s = QString::fromStdString(v.s);
            return s.size() > 200 ? s.left(200) + QStringLiteral("…") : s;
        }
        case wb::GgufValueType::ARRAY: {
            QString s = QStringLiteral("[%1 × %2]").arg(wb::gguf_value_type_name(v.elem_type)).arg(v.array_len);
            if (v.array_len <= 8) {
                QStringList items;
                for (const auto& x : v.strings) items << QString::fromStdString(x);
                for (auto x : v.ints) items << QString::number(x);
                for (auto x : v.floats) items << QString::number(x);
                s += QLatin1Char(' ') + items.join(QStringLiteral(", "));
            }
            return s;
        }
        case wb::GgufValueType::BOOL: return v.i ? QStringLiteral("true") : QStringLiteral("false");
        case wb::GgufValueType::FLOAT32:
        case wb::GgufValueType::FLOAT64: return QString::number(v.f);
        default: return QString::number(v.i);
    }
}

}  // namespace

ModelSummary ModelSummary::fromModel(const wb::Model& model, const QString& path, int contextSize, wb::KvType typeK,
                                     wb::KvType typeV, int batchTokens) {
    ModelSummary s;
    const wb::GgufFile& f = model.file();
    const wb::ModelConfig& c = model.config();
    s.path = path;
    s.name = QString::fromStdString(model.display_name());
    s.arch = QString::fromStdString(c.arch);
    s.fileSize = f.file_size();
    s.ggufVersion = int(f.version());
    for (const auto& [k, v] : f.metadata()) s.metadata.append({QString::fromStdString(k), valueSummary(v)});
    auto arch = [&s](const char* k, const QString& v) { s.architecture.append({QString::fromLatin1(k), v}); };
    arch("architecture", s.arch);
    arch("layers", QString::number(c.n_layer));
    arch("embedding width", QString::number(c.n_embd));
    arch("feed-forward width", QString::number(c.n_ff));
    arch("query heads", QString::number(c.n_head));
    arch("key/value heads", QString::number(c.n_head_kv));
    arch("head dim", QString::number(c.head_dim));
    arch("vocabulary", QString::number(c.n_vocab));
    arch("training context", QString::number(c.n_ctx_train));
    arch("RoPE base", QString::number(c.rope_base));
    arch("RoPE mode", c.rope_mode == wb::RopeMode::NEOX ? QStringLiteral("neox") : QStringLiteral("normal"));
    arch("activation", c.ffn_act == wb::Activation::SILU ? QStringLiteral("SiLU") : QStringLiteral("GELU (tanh)"));
    arch("sliding window", c.sliding_window > 0 ? QString::number(c.sliding_window) : QStringLiteral("none"));
    arch("tied output", c.tied_output ? QStringLiteral("yes") : QStringLiteral("no"));
    arch("tokenizer", QString::fromStdString(model.tokenizer().model_name() + " / " + model.tokenizer().pre_name()));
    QMap<QString, int> types;
    QMap<QString, quint64> typeBytes;
    for (const auto& t : f.tensors()) {
        QStringList dims;
        for (uint32_t d = 0; d < t.n_dims; ++d) dims << QString::number(t.ne[d]);
        const QString type = QString::fromStdString(wb::ggml_type_name(t.type));
        s.tensors.append({QString::fromStdString(t.name), type, QLatin1Char('[') + dims.join(QStringLiteral(", ")) + QLatin1Char(']'),
                          t.n_bytes});
        s.weightBytes += t.n_bytes;
        types[type] += 1;
        typeBytes[type] += t.n_bytes;
    }
    for (auto it = types.cbegin(); it != types.cend(); ++it) s.tensorTypes.append({it.key(), it.value()});
    for (auto it = typeBytes.cbegin(); it != typeBytes.cend(); ++it) s.weightBytesByType.append({it.key(), it.value()});
    s.nLayer = c.n_layer;
    s.nHead = c.n_head;
    s.nHeadKv = c.n_head_kv;
    s.headDim = c.head_dim;
    s.nRot = c.n_rot;
    // As the cache reads them (KvCacheConfig): without a window no layer is local.
    for (int32_t il = 0; il < c.n_layer; ++il)
        s.layerIsLocal.append(c.sliding_window > 0 && size_t(il) < c.layer_is_swa.size() && c.layer_is_swa[size_t(il)]);
    s.slidingWindow = c.sliding_window;
    s.batchTokens = batchTokens;
    s.scratchPredicted = batchTokens > 0 ? predictedScratchBytes(c, batchTokens) : 0;
    s.kvBytesPerToken = quint64(c.n_layer) * quint64(c.n_head_kv) *
                        quint64(wb::kv_type_row_bytes(typeK, c.head_dim) + wb::kv_type_row_bytes(typeV, c.head_dim));
    s.kvTypeK = typeK;
    s.kvTypeV = typeV;
    s.kvTypes = typeK == typeV ? QString::fromLatin1(wb::kv_type_name(typeK))
                               : QStringLiteral("K %1, V %2").arg(QString::fromLatin1(wb::kv_type_name(typeK)),
                                                                  QString::fromLatin1(wb::kv_type_name(typeV)));
    s.contextSize = contextSize;
    s.contextTrain = int(c.n_ctx_train);
    s.chatTemplate = QString::fromLatin1(wb::chat_template_kind_name(model.chat_template().kind()));
    QStringList warnings;
    if (!model.chat_template().warning().empty()) warnings << QString::fromStdString(model.chat_template().warning());
    if (!model.tokenizer().warning().empty()) warnings << QString::fromStdString(model.tokenizer().warning());
    s.warnings = warnings.join(QLatin1Char('\n'));
    if (s.name.isEmpty()) s.name = QFileInfo(path).fileName();
    return s;
}

quint64 ModelSummary::predictedKvBytes(int tokens, wb::KvType typeK, wb::KvType typeV, QVector<quint64>* perLayer) const {
    const quint64 position = quint64(nHeadKv) * quint64(wb::kv_type_row_bytes(typeK, headDim) + wb::kv_type_row_bytes(typeV, headDim));
    quint64 total = 0;
    if (perLayer) perLayer->clear();
    for (int il = 0; il < nLayer; ++il) {
        const bool local = il < layerIsLocal.size() && layerIsLocal[il];
        const quint64 bytes = quint64(local ? std::min(tokens, slidingWindow) : tokens) * position;
        total += bytes;
        if (perLayer) perLayer->append(bytes);
    }
    return total;
}

quint64 ModelSummary::predictedScratchBytes(const wb::ModelConfig& c, int batch) {
    const quint64 widths = 3 * quint64(c.n_embd) + 2 * quint64(c.q_dim()) + 2 * quint64(c.kv_dim()) + quint64(c.v_dim()) +
                           2 * quint64(c.n_ff) + quint64(c.n_vocab);
    return quint64(batch) * widths * sizeof(float);
}

void ModelSummary::measureBackend(const wb::Backend& backend) {
    scratchMeasured = backend.tensor_bytes();
    repackedBytesByType.clear();
    for (const auto& [type, bytes] : backend.repacked_weights())
        repackedBytesByType.append({QString::fromStdString(wb::ggml_type_name(type)), quint64(bytes)});
    backendName = QString::fromStdString(backend.name());
    backendDescription = QString::fromStdString(backend.description());
    backendShiftsK = backend.can_shift_kv(kvTypeK);
}
