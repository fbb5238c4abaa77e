#pragma once
// What the Model info panel shows about a loaded model, gathered on the inference thread (where the
// Model lives) into plain Qt values, so the GUI never touches engine objects another thread owns.
#include <QMetaType>
#include <QPair>
#include <QString>
#include <QVector>

#include "kv/kv_cache.h"
#include "kv/kv_types.h"

namespace wb {
class Model;
class Backend;
struct ModelConfig;
}

struct TensorRow {
    QString name;
    QString type;    // ggml type name, e.g. "q4_1"
    QString shape;   // "[576, 49152]"
    quint64 bytes = 0;
};

struct ModelSummary {
    // A remote engine (an OpenAI-compatible server, remote_engine.h): its endpoint ("http://host:port/v1").
    // Then path is that endpoint too (hasModel and the panels key on it), name the server's model id,
    // and every field of the local engine (file, tensors, layers, cache, context) is empty or 0: the
    // server does not expose them.
    QString remoteUrl;
    bool isRemote() const { return !remoteUrl.isEmpty(); }
    QString path;
    QString name;            // display name (general.name or the file name)
    QString arch;
    quint64 fileSize = 0;
    int ggufVersion = 0;
    QVector<QPair<QString, QString>> metadata;    // key, short rendering of the value
    QVector<QPair<QString, QString>> architecture; // hyperparameter name, value
    QVector<TensorRow> tensors;
    QVector<QPair<QString, int>> tensorTypes;      // type name, tensor count
    QVector<QPair<QString, quint64>> weightBytesByType;  // type name, bytes of its tensors in the file
    quint64 weightBytes = 0;                       // every tensor's bytes in the file
    // Type name, bytes of the backend's own copies of those tensors (CPU: repacked at load; the
    // backend's figure, Backend::repacked_weights); empty where it reads them all in place.
    QVector<QPair<QString, quint64>> repackedBytesByType;
    quint64 kvBytesPerToken = 0;    // layers x kv_heads x (bytes of a head's K row + V row) in the cache's types
    QString kvTypes;                // "f16", or "K q8_0, V f16" when they differ
    wb::KvType kvTypeK = wb::KvType::F16;  // the keys' type (quantized keys shift only under a whole-head rope)
    wb::KvType kvTypeV = wb::KvType::F16;
    int contextSize = 0;            // the session's n_ctx
    int contextTrain = 0;           // the model's training context (the largest n_ctx it accepts); 0 = unknown
    int nLayer = 0;
    int nHead = 0;
    int nHeadKv = 0;
    int headDim = 0;
    int nRot = 0;  // dimensions of a head the rope turns (headDim for most models)
    // Per layer: a sliding-window (local) layer, whose cache keeps only the last slidingWindow positions.
    QVector<bool> layerIsLocal;
    int slidingWindow = 0;
    // Scratch activations: the session's buffers for batches of batchTokens prompt tokens, as the
    // formula predicts them and as the backend's allocator counted them after the load (0: not counted).
    int batchTokens = 0;
    quint64 scratchPredicted = 0;
    quint64 scratchMeasured = 0;
    QString chatTemplate;           // template family
    QString warnings;               // chat template / tokenizer compromises, one per line
    QString backendName;            // "cpu", "cuda"
    QString backendDescription;
    QString backendNote;            // why the GPU is not used (empty when it is, or when CPU was asked for)
    bool backendShiftsK = true;     // the backend can re-rope keys of kvTypeK (Backend::can_shift_kv)

    // Fills everything except the backend fields and the measured scratch.
    static ModelSummary fromModel(const wb::Model& model, const QString& path, int contextSize,
                                  wb::KvType typeK = wb::KvType::F16, wb::KvType typeV = wb::KvType::F16,
                                  int batchTokens = 0);
    // The backend fields, the measured scratch and the repacked weights from the backend a session
    // has just been made on (only that session has used it: what it holds is that session's).
    void measureBackend(const wb::Backend& backend);

    // The KV cache's bytes in use at `tokens` positions with these element types, sliding window
    // counted: a global layer holds every position, a local one at most the window's (the textbook
    // 2 x layers x kv heads x head dim x tokens x bytes holds for global layers only). perLayer: each
    // layer's share.
    quint64 predictedKvBytes(int tokens, wb::KvType typeK, wb::KvType typeV, QVector<quint64>* perLayer = nullptr) const;
    int localLayerCount() const { return int(layerIsLocal.count(true)); }
    // The session's scratch activations (model/forward.h's ForwardBuffers) for batches of `batch` tokens,
    // 4-byte floats: x, its norm, q, k (twice: rotated and raw), v, the attention's output, the
    // projection, the feed-forward's gate and up, and the logits.
    static quint64 predictedScratchBytes(const wb::ModelConfig& c, int batch);
};

// A Compare job's second model while the worker holds it (InferenceWorker::comparisonMemoryChanged):
// what the memory ledger shows of it beside the chat's model. loaded false: released, no rows.
struct ComparisonMemory {
    bool loaded = false;
    ModelSummary summary;      // the second file's (its weights; the KV formula in its cache types)
    wb::KvStats kv;            // its session's cache now, by the cache's own count
    // Bytes of the backend's own copies of its weights: uploaded to the device (DeviceMemory::weights
    // grew by them), or repacked for the CPU kernels (Backend::repacked_weights grew by them); -1: the
    // backend made none and reads them in place from the file mapping.
    qint64 weightCopies = -1;
    // When prompt and reply do not fit the chat's context (the reply went on past context shifts),
    // Compare runs the chat model in a session of its own sized to hold them: a second KV cache of the
    // chat model until Compare ends (chatKv, by the cache's own count). false: the chat's session served.
    bool chatResized = false;
    wb::KvStats chatKv;
};

Q_DECLARE_METATYPE(ModelSummary)
Q_DECLARE_METATYPE(ComparisonMemory)
