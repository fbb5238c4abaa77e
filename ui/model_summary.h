#pragma once
// What the Model info panel shows about a loaded model, gathered on the inference thread (where the
// Model lives) into plain Qt values, so the GUI never touches engine objects another thread owns.
#include <QMetaType>
#include <QPair>
#include <QString>
#include <QVector>

#include "kv/kv_types.h"

namespace wb {
class Model;
class Backend;
}

struct TensorRow {
    QString name;
    QString type;    // ggml type name, e.g. "q4_1"
    QString shape;   // "[576, 49152]"
    quint64 bytes = 0;
};

struct ModelSummary {
    QString path;
    QString name;            // display name (general.name or the file name)
    QString arch;
    quint64 fileSize = 0;
    int ggufVersion = 0;
    QVector<QPair<QString, QString>> metadata;    // key, short rendering of the value
    QVector<QPair<QString, QString>> architecture; // hyperparameter name, value
    QVector<TensorRow> tensors;
    QVector<QPair<QString, int>> tensorTypes;      // type name, tensor count
    quint64 weightBytes = 0;
    quint64 kvBytesPerToken = 0;    // layers x kv_heads x (bytes of a head's K row + V row) in the cache's types
    QString kvTypes;                // "f16", or "K q8_0, V f16" when they differ
    wb::KvType kvTypeK = wb::KvType::F16;  // the keys' type (a context shift needs f16 keys)
    int contextSize = 0;            // the session's n_ctx
    int contextTrain = 0;           // the model's training context (the largest n_ctx it accepts); 0 = unknown
    int nLayer = 0;
    int nHead = 0;
    int nHeadKv = 0;
    int headDim = 0;
    QString chatTemplate;           // template family
    QString warnings;               // chat template / tokenizer compromises, one per line
    QString backendName;            // "cpu", "cuda"
    QString backendDescription;
    QString backendNote;            // why the GPU is not used (empty when it is, or when CPU was asked for)

    // Fills everything except the backend fields.
    static ModelSummary fromModel(const wb::Model& model, const QString& path, int contextSize,
                                  wb::KvType typeK = wb::KvType::F16, wb::KvType typeV = wb::KvType::F16);
};

Q_DECLARE_METATYPE(ModelSummary)
