// The memory ledger (issue #16 item 5) with the real SmolLM2 and Gemma 3 files: the KV bytes the
// summary predicts (sliding window counted) equal what the cache measures after a prompt longer than
// Gemma's window, layer by layer and for quantized caches too; the global layers reserve whole blocks
// of what they hold; the weights' total equals the file's tensor data (the gaps between tensors are
// the file's alignment padding and nothing more); the scratch the formula predicts is what the CPU
// backend's allocator holds. Model info's ledger and the KV panel show those figures; the ledger
// follows a streamed reply without rebuilding its rows, and not at all while it is hidden; its notes
// wrap within the dock; the device memory row shows a GPU backend's own count and nothing on the CPU.
#include <algorithm>

#include <QTabWidget>
#include <QTableWidget>
#include <QtTest>

#include <qcustomplot.h>

#include "engine/backend.h"
#include "engine/model.h"
#include "engine/session.h"
#include "engine_types.h"
#include "gui_test_support.h"
#include "gguf/gguf_file.h"
#include "kv_cache_panel.h"
#include "model/model_paths.h"
#include "model_info_panel.h"
#include "model_summary.h"
#include "quant/quant.h"

namespace {

constexpr int kContext = 1024;
constexpr qint64 kAttentionBudget = qint64(256) << 20;

struct Loaded {
    std::unique_ptr<wb::Model> model;
    wb::BackendChoice backend;
    std::unique_ptr<wb::Session> session;
    ModelSummary summary;
};

Loaded load(const char* file, wb::KvType k, wb::KvType v) {
    Loaded l;
    const std::string path = wb::models_dir() + "/" + file;
    l.model = wb::Model::load(path);
    l.backend = wb::create_backend(wb::BackendKind::CPU, 2, k, v);
    wb::SessionOptions o;
    o.n_ctx = kContext;
    o.kv_type_k = k;
    o.kv_type_v = v;
    l.session = std::make_unique<wb::Session>(*l.model, *l.backend.backend, o);
    l.summary = ModelSummary::fromModel(*l.model, QString::fromStdString(path), l.session->n_ctx(), k, v, std::min(o.n_batch, kContext));
    l.summary.measureBackend(*l.backend.backend);
    return l;
}

QVector<QPair<QString, quint64>> repackedByType(const wb::Backend& b) {
    QVector<QPair<QString, quint64>> out;
    for (const auto& [type, bytes] : b.repacked_weights()) out.append({QString::fromStdString(wb::ggml_type_name(type)), quint64(bytes)});
    return out;
}

// A prompt of about `tokens` tokens, one token generated after it.
void run(Loaded& l, int tokens) {
    std::string text;
    std::vector<int32_t> ids;
    while (int(ids.size()) < tokens) {
        text += "The quick brown fox jumps over the lazy dog while the river runs on. ";
        ids = l.model->tokenizer().encode(text, true, false);
    }
    wb::SamplingParams p;
    p.temperature = 0.0f;
    p.max_tokens = 1;
    const wb::GenerateResult r = l.session->generate(ids, wb::LiveSamplingParams(p));
    QVERIFY2(r.reason != wb::StopReason::ERROR, r.error.c_str());
}

// The cell's text is on screen whole: wrapped to its column (less the delegate's margins), no word
// wider than the column and every line inside the row.
bool showsWhole(const QTableWidget* t, int row, int column) {
    const QString text = t->item(row, column)->text();
    const int margin = t->style()->pixelMetric(QStyle::PM_FocusFrameHMargin, nullptr, t) + 1;
    const int width = t->columnWidth(column) - 2 * margin;
    const QRect need = t->fontMetrics().boundingRect(QRect(0, 0, width, 1 << 20), Qt::AlignLeft | Qt::TextWordWrap, text);
    if (need.width() <= width && need.height() <= t->rowHeight(row)) return true;
    qWarning("row %d column %d (%d x %d) needs %d x %d: %s", row, column, width, t->rowHeight(row), need.width(),
             need.height(), qPrintable(text));
    return false;
}

// The ledger on screen: the panel shown with its Memory tab current (a hidden ledger is not kept up to date).
bool showLedger(ModelInfoPanel& info) {
    info.show();
    info.tabs()->setCurrentWidget(info.ledgerTable());
    return info.ledgerTable()->isVisible();
}

}  // namespace

class TestMemoryLedger : public QObject {
    Q_OBJECT

    // The prediction against the cache's measurement after a prompt of `tokens`.
    void verifyKv(const char* file, wb::KvType k, wb::KvType v, int tokens, bool expectLocal) {
        Loaded l = load(file, k, v);
        const ModelSummary& s = l.summary;
        QCOMPARE(s.localLayerCount() > 0, expectLocal);
        run(l, tokens);
        const wb::KvStats st = l.session->kv_stats();
        QVERIFY(st.n_tokens >= tokens);
        QVector<quint64> perLayer;
        const quint64 predicted = s.predictedKvBytes(st.n_tokens, k, v, &perLayer);
        QCOMPARE(predicted, quint64(st.bytes_used));
        QCOMPARE(perLayer.size(), int(st.layers.size()));
        const quint64 position = quint64(s.nHeadKv) * quint64(wb::kv_type_row_bytes(k, s.headDim) + wb::kv_type_row_bytes(v, s.headDim));
        const quint64 blocks = quint64((st.n_tokens + st.block_tokens - 1) / st.block_tokens);
        for (int il = 0; il < perLayer.size(); ++il) {
            const wb::KvLayerStats& m = st.layers[size_t(il)];
            QCOMPARE(perLayer[il], quint64(m.bytes_used));
            QCOMPARE(s.layerIsLocal[il], m.sliding_window);
            // A global layer holds the blocks of every position, no more.
            if (!m.sliding_window) QCOMPARE(quint64(m.bytes_reserved), blocks * quint64(st.block_tokens) * position);
        }
        if (expectLocal) {
            // The window matters here: the textbook product over all layers is more than the cache holds.
            QVERIFY(st.n_tokens > s.slidingWindow);
            QVERIFY(predicted < quint64(s.nLayer) * position * quint64(st.n_tokens));
        }

        // Model info's ledger and the KV panel show the same numbers.
        ModelInfoPanel info;
        QVERIFY(showLedger(info));
        info.setModel(s);
        info.setKvStats(st);
        QCOMPARE(info.ledgerBytes("kv_now", ModelInfoPanel::PredictedColumn), qint64(st.bytes_used));
        QCOMPARE(info.ledgerBytes("kv_now", ModelInfoPanel::MeasuredColumn), qint64(st.bytes_used));
        QCOMPARE(info.ledgerBytes("kv_full", ModelInfoPanel::PredictedColumn), qint64(s.predictedKvBytes(kContext, k, v)));
        KvCachePanel kv;
        kv.setModel(s);
        kv.handleStats(st);
        QVERIFY2(kv.estimateText().endsWith(formatBytes(double(st.bytes_used))), qPrintable(kv.estimateText()));
        QVERIFY2(kv.measuredText().startsWith(formatBytes(double(st.bytes_used)) + " used"), qPrintable(kv.measuredText()));
        if (expectLocal) {
            QVERIFY2(kv.layersText().contains(QString("%1 local").arg(s.localLayerCount())), qPrintable(kv.layersText()));
            QVERIFY2(kv.evictionText().startsWith(QString::number(st.n_tokens - s.slidingWindow) + " oldest positions"),
                     qPrintable(kv.evictionText()));
            QCOMPARE(kv.localUsedBars()->data()->size(), s.localLayerCount());
            QCOMPARE(kv.usedBars()->data()->size(), s.nLayer - s.localLayerCount());
        } else {
            QVERIFY2(kv.layersText().startsWith(QString("%1 global").arg(s.nLayer)), qPrintable(kv.layersText()));
            QCOMPARE(kv.localUsedBars()->data()->size(), 0);
        }
    }

    void verifyWeightsAndScratch(const char* file) {
        Loaded l = load(file, wb::KvType::F16, wb::KvType::F16);
        const ModelSummary& s = l.summary;
        const wb::GgufFile& f = l.model->file();
        // The file's layout: tensors back to back in the data section, each gap the padding to the
        // file's alignment; the tensor bytes are the data section without that padding.
        std::vector<wb::GgufTensor> t = f.tensors();
        std::sort(t.begin(), t.end(), [](const wb::GgufTensor& a, const wb::GgufTensor& b) { return a.offset < b.offset; });
        quint64 padding = 0;
        for (size_t i = 0; i + 1 < t.size(); ++i) {
            QVERIFY(t[i + 1].offset >= t[i].offset + t[i].n_bytes);
            const quint64 gap = t[i + 1].offset - (t[i].offset + t[i].n_bytes);
            QVERIFY2(gap < f.alignment(), t[i].name.c_str());
            padding += gap;
        }
        const quint64 end = t.back().offset + t.back().n_bytes;
        QVERIFY(f.data_offset() + end <= f.file_size());
        QCOMPARE(s.weightBytes, end - padding);
        quint64 byType = 0;
        for (const auto& [type, bytes] : s.weightBytesByType) byType += bytes;
        QCOMPARE(byType, s.weightBytes);
        ModelInfoPanel info;
        QVERIFY(showLedger(info));
        info.setModel(s);
        QCOMPARE(info.ledgerBytes("weights", ModelInfoPanel::PredictedColumn), qint64(s.weightBytes));
        for (const auto& [type, bytes] : s.weightBytesByType)
            QCOMPARE(info.ledgerBytes("weights:" + type, ModelInfoPanel::PredictedColumn), qint64(bytes));
        // A type the CPU backend repacked at load shows its copy's bytes, the backend's count, as
        // measured; the others have no measured figure (read in place).
        QCOMPARE(s.repackedBytesByType, repackedByType(*l.backend.backend));
        if (std::string(wb::quant_kernel_name()) == "avx512" && std::string(file).find("Q4_K") != std::string::npos)
            QVERIFY2(!s.repackedBytesByType.isEmpty(), "the avx512 family repacks Q4_K");
        for (const auto& [type, bytes] : s.weightBytesByType) {
            qint64 repacked = -1;
            for (const auto& [t, n] : s.repackedBytesByType)
                if (t == type) repacked = qint64(n);
            QCOMPARE(info.ledgerBytes("weights:" + type, ModelInfoPanel::MeasuredColumn), repacked);
        }

        // Scratch: the allocator rounds each of the 11 buffers up to 64 bytes.
        QVERIFY(s.scratchPredicted > 0);
        QVERIFY(s.scratchMeasured >= s.scratchPredicted);
        QVERIFY(s.scratchMeasured - s.scratchPredicted < 11 * 64);
        QCOMPARE(info.ledgerBytes("scratch", ModelInfoPanel::MeasuredColumn), qint64(s.scratchMeasured));
        // A generation without the logit lens allocates nothing that outlives it.
        run(l, 40);
        QCOMPARE(quint64(l.backend.backend->tensor_bytes()), s.scratchMeasured);
    }

private Q_SLOTS:
    void initTestCase() {
        wb_gui_test::isolateSettings("test_memory_ledger");
        for (const char* f : {"SmolLM2-135M-Instruct.Q4_1.gguf", "gemma-3-270m-Q4_K_M.gguf"})
            if (!QFileInfo::exists(QString::fromStdString(wb::models_dir() + "/" + f)))
                QFAIL(qPrintable(QString("%1 missing: run scripts/fetch-models.sh").arg(f)));
    }

    void smolLm2KvPredictedEqualsMeasured() {
        verifyKv("SmolLM2-135M-Instruct.Q4_1.gguf", wb::KvType::F16, wb::KvType::F16, 300, false);
    }
    void smolLm2QuantizedKvPredictedEqualsMeasured() {
        verifyKv("SmolLM2-135M-Instruct.Q4_1.gguf", wb::KvType::Q8_0, wb::KvType::Q4_0, 300, false);
    }
    // 600 positions: past the 512-position window of Gemma 3's local layers.
    void gemma3KvPredictedEqualsMeasuredWithTheWindow() {
        verifyKv("gemma-3-270m-Q4_K_M.gguf", wb::KvType::F16, wb::KvType::F16, 600, true);
    }
    // A reply streams KV statistics (~30 Hz) and the attention store's size (per token) into the
    // ledger. Hidden, it is not rebuilt at all; shown, it is rebuilt once with the latest values;
    // visible, the updates change its cells and never rebuild its rows; new rows (another model, the
    // first KV figure) do rebuild it.
    void streamedUpdatesRebuildNoRows() {
        Loaded l = load("SmolLM2-135M-Instruct.Q4_1.gguf", wb::KvType::F16, wb::KvType::F16);
        run(l, 40);
        const wb::KvStats base = l.session->kv_stats();
        ModelInfoPanel info;
        info.setModel(l.summary);
        wb::KvStats last = base;
        qint64 attention = 0;
        auto stream = [&](int tokens) {
            for (int i = 0; i < tokens; ++i) {
                ++last.n_tokens;
                last.bytes_used += 100000;
                attention += 300000;
                info.setKvStats(last);
                info.setAttentionMemory(attention, kAttentionBudget);
            }
        };
        auto showsLast = [&] {
            return info.ledgerBytes("kv_now", ModelInfoPanel::MeasuredColumn) == qint64(last.bytes_used) &&
                   info.ledgerBytes("attention", ModelInfoPanel::MeasuredColumn) == attention &&
                   info.ledgerBytes("attention", ModelInfoPanel::PredictedColumn) == kAttentionBudget;
        };
        stream(100);
        QCOMPARE(info.ledgerRebuilds(), 0);
        QVERIFY(showLedger(info));
        QCOMPARE(info.ledgerRebuilds(), 1);
        QVERIFY(showsLast());

        stream(100);
        QCOMPARE(info.ledgerRebuilds(), 1);
        QVERIFY(showsLast());
        const QTableWidget* t = info.ledgerTable();
        bool kvRow = false;
        for (int r = 0; r < t->rowCount(); ++r) {
            if (t->item(r, ModelInfoPanel::ComponentColumn)->data(ModelInfoPanel::KeyRole).toString() != "kv_now") continue;
            kvRow = true;
            QVERIFY2(t->item(r, ModelInfoPanel::ComponentColumn)->text().contains(QString("(%1 tokens)").arg(last.n_tokens)),
                     qPrintable(t->item(r, ModelInfoPanel::ComponentColumn)->text()));
            QCOMPARE(t->item(r, ModelInfoPanel::MeasuredColumn)->text(), formatBytes(double(last.bytes_used)));
            // Its longer text fits (wrapped, in a taller row), never left cut.
            QVERIFY(showsWhole(t, r, ModelInfoPanel::ComponentColumn));
            QVERIFY(showsWhole(t, r, ModelInfoPanel::MeasuredColumn));
        }
        QVERIFY(kvRow);

        info.tabs()->setCurrentIndex(0);  // the Summary tab: the ledger is hidden again
        QVERIFY(!info.ledgerTable()->isVisible());
        stream(50);
        QCOMPARE(info.ledgerRebuilds(), 1);
        QVERIFY(showLedger(info));
        QCOMPARE(info.ledgerRebuilds(), 2);
        QVERIFY(showsLast());

        info.setModel(l.summary);  // a model loaded: its rows, no KV figure yet
        QCOMPARE(info.ledgerRebuilds(), 3);
        QCOMPARE(info.ledgerBytes("kv_now", ModelInfoPanel::MeasuredColumn), qint64(-1));
        info.setKvStats(base);
        QCOMPARE(info.ledgerRebuilds(), 4);
        QCOMPARE(info.ledgerBytes("kv_now", ModelInfoPanel::MeasuredColumn), qint64(base.bytes_used));
    }

    // The notes are sentences wider than the dock: at the Model info dock's width on a 1366x768 and a
    // 1920x1080 screen (and wider) each note and name wraps inside the visible width, every row is tall
    // enough for its lines, and a note's tooltip holds it whole.
    void notesWrapWithinTheDockAndTooltipsHoldThem_data() {
        QTest::addColumn<int>("width");
        QTest::newRow("dock at 1366x768") << 408;
        QTest::newRow("dock at 1920x1080") << 544;
        QTest::newRow("wide window") << 1400;
    }
    void notesWrapWithinTheDockAndTooltipsHoldThem() {
        QFETCH(int, width);
        Loaded l = load("SmolLM2-135M-Instruct.Q4_1.gguf", wb::KvType::F16, wb::KvType::F16);
        run(l, 40);
        ModelInfoPanel info;
        info.resize(width, 420);
        QVERIFY(showLedger(info));
        info.setModel(l.summary);
        info.setKvStats(l.session->kv_stats());
        info.setAttentionMemory(300000, kAttentionBudget);
        QCoreApplication::processEvents();
        const QTableWidget* t = info.ledgerTable();
        QVERIFY(t->rowCount() >= 6);
        const int right = t->columnViewportPosition(ModelInfoPanel::NoteColumn) + t->columnWidth(ModelInfoPanel::NoteColumn);
        QVERIFY2(right <= t->viewport()->width(), qPrintable(QString("%1 > %2").arg(right).arg(t->viewport()->width())));
        int wrapped = 0;
        for (int r = 0; r < t->rowCount(); ++r) {
            const QTableWidgetItem* note = t->item(r, ModelInfoPanel::NoteColumn);
            QVERIFY(!note->text().isEmpty());
            QCOMPARE(note->toolTip(), note->text());
            QVERIFY(showsWhole(t, r, ModelInfoPanel::ComponentColumn));
            QVERIFY(showsWhole(t, r, ModelInfoPanel::NoteColumn));
            if (t->rowHeight(r) >= 2 * t->fontMetrics().lineSpacing()) ++wrapped;
        }
        // In a dock the notes do not fit on one line: the test saw wrapping, not only short notes.
        if (width < 600) QVERIFY(wrapped > 0);
    }

    // The device memory row: the CPU backend has no device memory of its own and its report adds no
    // row; a CUDA backend's report (recorded figures here: no GPU on the test machines) shows its total
    // measured beside the device's share of the predictions (weights, KV cache now, scratch), its parts
    // in the note, follows later reports in place, and goes with the model it belongs to.
    void deviceRowOnlyForABackendsOwnCount() {
        Loaded l = load("SmolLM2-135M-Instruct.Q4_1.gguf", wb::KvType::F16, wb::KvType::F16);
        run(l, 40);
        const wb::KvStats st = l.session->kv_stats();
        const wb::DeviceMemory cpu = l.backend.backend->device_memory();
        QVERIFY(!cpu.counted);
        ModelInfoPanel info;
        info.resize(544, 420);
        QVERIFY(showLedger(info));
        info.setModel(l.summary);
        info.setKvStats(st);
        const int cpuRows = info.ledgerTable()->rowCount();
        info.setDeviceMemory(cpu);
        QCOMPARE(info.ledgerTable()->rowCount(), cpuRows);
        QCOMPARE(info.ledgerBytes("device", ModelInfoPanel::MeasuredColumn), qint64(-1));

        ModelSummary gpu = l.summary;
        gpu.backendName = QStringLiteral("cuda");
        info.setModel(gpu);
        info.setKvStats(st);
        wb::DeviceMemory m;
        m.counted = true;
        m.weights = 96558336;
        m.kv_cache = 4718592;
        m.scratch = 57081344;
        info.setDeviceMemory(m);
        QCOMPARE(info.ledgerTable()->rowCount(), cpuRows + 1);
        QCOMPARE(info.ledgerBytes("device", ModelInfoPanel::MeasuredColumn), qint64(m.weights + m.kv_cache + m.scratch));
        QCOMPARE(info.ledgerBytes("device", ModelInfoPanel::PredictedColumn),
                 qint64(gpu.weightBytes + gpu.predictedKvBytes(st.n_tokens, st.type_k, st.type_v) + gpu.scratchPredicted));
        const QTableWidget* t = info.ledgerTable();
        const int row = t->rowCount() - 1;
        QCOMPARE(t->item(row, ModelInfoPanel::ComponentColumn)->data(ModelInfoPanel::KeyRole).toString(), QString("device"));
        QVERIFY(t->item(row, ModelInfoPanel::ComponentColumn)->text().contains("cuda"));
        const QString note = t->item(row, ModelInfoPanel::NoteColumn)->text();
        for (uint64_t part : {m.weights, m.kv_cache, m.scratch})
            QVERIFY2(note.contains(formatBytes(double(part))), qPrintable(note));
        QVERIFY(showsWhole(t, row, ModelInfoPanel::NoteColumn));

        // A reply grows the cache: the same row, the new figure.
        const int rebuilds = info.ledgerRebuilds();
        m.kv_cache += 1 << 20;
        info.setDeviceMemory(m);
        QCOMPARE(info.ledgerRebuilds(), rebuilds);
        QCOMPARE(info.ledgerBytes("device", ModelInfoPanel::MeasuredColumn), qint64(m.weights + m.kv_cache + m.scratch));

        // Another model (here on the CPU): no device row until its backend reports one.
        info.setModel(l.summary);
        QCOMPARE(info.ledgerBytes("device", ModelInfoPanel::MeasuredColumn), qint64(-1));
        QCOMPARE(info.ledgerTable()->rowCount(), cpuRows - 1);  // no KV figure yet either
    }

    // While Compare runs on a device backend, the device row's prediction adds its rows: the second
    // model's weights and KV cache now and, when the reply went on past the chat's context, the chat
    // model's own second cache; when Compare ends it is the chat's rows alone again.
    void deviceRowPredictsCompareWhileItRuns() {
        Loaded l = load("SmolLM2-135M-Instruct.Q4_1.gguf", wb::KvType::F16, wb::KvType::F16);
        run(l, 40);
        const wb::KvStats st = l.session->kv_stats();
        ModelSummary gpu = l.summary;
        gpu.backendName = QStringLiteral("cuda");
        ModelInfoPanel info;
        info.resize(544, 420);
        QVERIFY(showLedger(info));
        info.setModel(gpu);
        info.setKvStats(st);
        wb::DeviceMemory m;
        m.counted = true;
        m.weights = 96558336;
        m.kv_cache = 4718592;
        m.scratch = 57081344;
        info.setDeviceMemory(m);
        const qint64 chat = qint64(gpu.weightBytes + gpu.predictedKvBytes(st.n_tokens, st.type_k, st.type_v) + gpu.scratchPredicted);
        QCOMPARE(info.ledgerBytes("device", ModelInfoPanel::PredictedColumn), chat);

        ComparisonMemory c;
        c.loaded = true;
        c.summary = l.summary;
        c.summary.weightBytes = 12345678;  // a second file of its own size
        c.kv = st;
        c.kv.n_tokens = 70;
        c.chatResized = true;
        c.chatKv = st;
        c.chatKv.n_tokens = 300;
        c.chatKv.capacity = 320;
        info.setComparisonMemory(c);
        const qint64 compare = qint64(c.summary.weightBytes + c.summary.predictedKvBytes(70, st.type_k, st.type_v) +
                                      gpu.predictedKvBytes(300, st.type_k, st.type_v));
        QCOMPARE(info.ledgerBytes("device", ModelInfoPanel::PredictedColumn), chat + compare);
        // Figures of a comparison model no longer loaded count for nothing.
        c.loaded = false;
        info.setComparisonMemory(c);
        QCOMPARE(info.ledgerBytes("device", ModelInfoPanel::PredictedColumn), chat);
        info.setComparisonMemory(ComparisonMemory{});
        QCOMPARE(info.ledgerBytes("device", ModelInfoPanel::PredictedColumn), chat);
    }

    void smolLm2WeightsAndScratch() { verifyWeightsAndScratch("SmolLM2-135M-Instruct.Q4_1.gguf"); }
    void gemma3WeightsAndScratch() { verifyWeightsAndScratch("gemma-3-270m-Q4_K_M.gguf"); }
};

QTEST_MAIN(TestMemoryLedger)
#include "test_memory_ledger.moc"
