// Export, Replay and Compare in the app (issue 16 item 7) with the real default model: an exported
// reply's trace file loads back equal to what the chat recorded of the reply; replaying it reports
// "same", and after a setting in the file is changed, the first token and stage that differ; another
// model file, a bad file and a context too small are refused with messages; Compare shows exactly the
// numbers compare_models produced (SmolLM2 against itself: KL 0, no flips; against a copy whose final
// norm is scaled: the same numbers as a direct compare_models of the two files), can be cancelled
// with the chat going on, and refuses a model with another vocabulary. The memory ledger has rows of
// what Compare holds while it runs: the second model's, and the chat model's own second cache when the
// reply went on past the chat's context.
#include <QDockWidget>
#include <QFile>
#include <QLabel>
#include <QPushButton>
#include <QScopeGuard>
#include <QSignalSpy>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>
#include <qcustomplot.h>

#include "attention_panel.h"
#include "attention_store.h"
#include "chat_controller.h"
#include "compare_dialog.h"
#include "engine/backend.h"
#include "engine/model_compare.h"
#include "engine/context_policy.h"
#include "kv/kv_types.h"
#include "sampling/trace_file.h"
#include "gguf/gguf_file.h"
#include "gui_test_support.h"
#include "main_window.h"
#include "model_info_panel.h"
#include "model_summary.h"
#include "model/model_paths.h"
#include "trace_actions.h"
#include "util/sha256.h"

namespace {

constexpr int kTimeoutMs = 180000;

// Sampled, not greedy: a replay that reproduces the reply has to reproduce the seed's draws too.
wb::SamplingParams sampled() {
    wb::SamplingParams p;
    p.temperature = 0.9f;
    p.top_k = 40;
    p.top_p = 0.95f;
    p.min_p = 0.05f;
    p.seed = 4242;
    p.max_tokens = 12;
    return p;
}

QString defaultModel() { return QString::fromStdString(wb::default_model_path()); }

bool bitsEqual(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

}  // namespace

class TestTraceActions : public QObject {
    Q_OBJECT

    std::unique_ptr<MainWindow> m_window;
    QTemporaryDir m_dir;
    PromptInfo m_prompt;
    GenerationSummary m_summary;
    QString m_exported;  // the trace file of the first reply
    int m_exportedSteps = 0;

    ChatController* controller() const { return m_window->controller(); }
    TraceActions* actions() const { return m_window->traceActions(); }
    int lastIndex() const { return int(controller()->conversation().messages.size()) - 1; }

    bool reply(const QString& message) {
        controller()->newChat();
        QSignalSpy prompt(controller(), &ChatController::promptReady);
        QSignalSpy finished(controller(), &ChatController::generationFinished);
        if (!controller()->sendMessage(message) || !finished.wait(kTimeoutMs) || prompt.isEmpty()) return false;
        QCoreApplication::processEvents();
        m_prompt = prompt.last().at(0).value<PromptInfo>();
        m_summary = finished.last().at(0).value<GenerationSummary>();
        return m_summary.reason != wb::StopReason::ERROR && controller()->conversation().messages.last().tokens.size() >= 3;
    }

    // The report of a replay of `path`, or the refusal when it did not start.
    QString replay(const QString& path, bool* same, bool* started = nullptr) {
        QSignalSpy reported(actions(), &TraceActions::replayReported);
        QString error;
        const quint64 job = actions()->replayFile(path, &error);
        if (started) *started = job != 0;
        *same = false;
        if (job == 0) return error;
        if (!reported.wait(kTimeoutMs)) return QStringLiteral("(no report)");
        *same = reported.last().at(2).toBool();
        return reported.last().at(1).toString();
    }

    QString writeEdited(const QString& name, const std::function<void(nlohmann::json&)>& edit, const QString& source = {}) {
        QFile in(source.isEmpty() ? m_exported : source);
        if (!in.open(QIODevice::ReadOnly)) return {};
        nlohmann::json j = nlohmann::json::parse(in.readAll().toStdString());
        edit(j);
        const QString path = m_dir.filePath(name);
        QFile out(path);
        if (!out.open(QIODevice::WriteOnly)) return {};
        out.write(QByteArray::fromStdString(j.dump()));
        return path;
    }

    // The finished dialog of a comparison of the last reply with `other`.
    CompareDialog* compare(const QString& other) {
        QString error;
        CompareDialog* d = actions()->compareReply(lastIndex(), other, &error);
        if (!d) qWarning("%s", qPrintable(error));
        if (d && !QTest::qWaitFor([d] { return !d->isRunning(); }, kTimeoutMs)) return nullptr;
        return d;
    }

    // The dialog draws the result as compare_models gave it: one point per token at its KL, a flip
    // mark at each flipped token, the summary's numbers and one table row per token.
    void verifyDialogShows(CompareDialog* d) {
        const wb::ModelComparison& c = d->result()->comparison;
        QCOMPARE(d->klGraph()->data()->size(), int(c.tokens.size()));
        int flips = 0;
        for (size_t i = 0; i < c.tokens.size(); ++i) {
            QCOMPARE(d->klGraph()->data()->at(int(i))->key, double(i));
            QCOMPARE(d->klGraph()->data()->at(int(i))->value, c.tokens[i].kl);
            QCOMPARE(d->table()->item(int(i), 2)->text(), QString::number(c.tokens[i].kl, 'g', 6));
            if (!c.tokens[i].flip()) continue;
            QCOMPARE(d->flipGraph()->data()->at(flips)->key, double(i));
            QCOMPARE(d->flipGraph()->data()->at(flips)->value, c.tokens[i].kl);
            ++flips;
        }
        QCOMPARE(d->flipGraph()->data()->size(), flips);
        QCOMPARE(flips, c.flips);
        QCOMPARE(d->table()->rowCount(), int(c.tokens.size()));
        const QString summary = d->summaryLabel()->text();
        QVERIFY2(summary.contains(QStringLiteral("KL mean %1 nats").arg(QString::number(c.kl_mean, 'g', 6))), qPrintable(summary));
        QVERIFY2(summary.contains(QStringLiteral("max %1").arg(QString::number(c.kl_max, 'g', 6))), qPrintable(summary));
        QVERIFY2(summary.contains(QStringLiteral("top-1 flips: %1 of %2 tokens").arg(c.flips).arg(c.tokens.size())), qPrintable(summary));
    }

    // A comparison's memory report and the ledger's rows of it right after it came.
    struct Seen {
        ComparisonMemory memory;
        qint64 weightsPredicted, weightsMeasured, kvPredicted, kvMeasured;
        qint64 chatKvPredicted = -1, chatKvMeasured = -1;  // the row of the chat model's own cache for Compare
    };

    // Records each comparison memory report with the ledger's rows of it right after it came (the
    // ledger shown, in the Model info dock).
    QMetaObject::Connection watchLedger(QVector<Seen>& seen) {
        QDockWidget* infoDock = m_window->dock(QStringLiteral("modelInfoDock"));
        if (!infoDock) return {};
        infoDock->show();
        infoDock->raise();
        ModelInfoPanel* info = m_window->modelInfoPanel();
        info->tabs()->setCurrentWidget(info->ledgerTable());
        if (!QTest::qWaitFor([info] { return info->ledgerTable()->isVisible(); }, kTimeoutMs)) return {};
        return connect(controller(), &ChatController::comparisonMemoryChanged, this, [&seen, info](const ComparisonMemory& m) {
            seen.append({m, info->ledgerBytes("compare_weights", ModelInfoPanel::PredictedColumn),
                         info->ledgerBytes("compare_weights", ModelInfoPanel::MeasuredColumn),
                         info->ledgerBytes("compare_kv", ModelInfoPanel::PredictedColumn),
                         info->ledgerBytes("compare_kv", ModelInfoPanel::MeasuredColumn),
                         info->ledgerBytes("compare_chat_kv", ModelInfoPanel::PredictedColumn),
                         info->ledgerBytes("compare_chat_kv", ModelInfoPanel::MeasuredColumn)});
        });
    }

    // The ledger's rows of a comparison's second model (issue 16 item 5 with item 7), as they were when
    // each report came (what `seen` holds): its weights are the file's tensor bytes as a summary of the
    // file gives them, with the backend's own copies of them measured (the CPU's repacked matrices,
    // counted here by a backend that loads the file alone); its KV cache holds prompt and reply at the
    // end, the cache's own count beside the formula's; the last report releases it and the rows go.
    void verifyComparisonLedger(const QVector<Seen>& seen, const QString& other, int tokens) {
        QVERIFY(seen.size() >= 3);  // loaded, the end of the evaluation, released
        const auto otherModel = wb::Model::load(other.toStdString());
        const ModelSummary expected = ModelSummary::fromModel(*otherModel, other, controller()->model().contextSize);
        wb::BackendChoice alone = wb::create_backend(wb::BackendKind::CPU, 2);
        wb::SessionOptions so;
        so.n_ctx = 64;
        const wb::Session holder(*otherModel, *alone.backend, so);  // the copies live while a session uses them
        qint64 copies = 0;
        for (const auto& [type, bytes] : alone.backend->repacked_weights()) copies += qint64(bytes);
        for (int i = 0; i + 1 < seen.size(); ++i) {
            const Seen& s = seen[i];
            QVERIFY(s.memory.loaded);
            QCOMPARE(s.memory.summary.weightBytes, expected.weightBytes);
            QCOMPARE(s.weightsPredicted, qint64(expected.weightBytes));
            QCOMPARE(s.memory.weightCopies, copies > 0 ? copies : qint64(-1));
            QCOMPARE(s.weightsMeasured, s.memory.weightCopies);
            QCOMPARE(s.kvMeasured, qint64(s.memory.kv.bytes_used));
            QCOMPARE(s.kvPredicted, qint64(expected.predictedKvBytes(s.memory.kv.n_tokens, s.memory.kv.type_k, s.memory.kv.type_v)));
            // The reply fits the chat's context: its own session served, no cache of the chat model was added.
            QVERIFY(!s.memory.chatResized);
            QCOMPARE(s.chatKvMeasured, qint64(-1));
        }
        const Seen& end = seen[seen.size() - 2];
        QCOMPARE(end.memory.kv.n_tokens, tokens);
        QVERIFY(end.kvMeasured > 0);
        QCOMPARE(end.kvMeasured, end.kvPredicted);  // SmolLM2, f16, no window: the formula is exact
        QVERIFY(!seen.last().memory.loaded);
        QCOMPARE(seen.last().weightsPredicted, qint64(-1));
        QCOMPARE(seen.last().kvMeasured, qint64(-1));
    }

private Q_SLOTS:
    void initTestCase() {
        wb_gui_test::isolateSettings("test_trace_actions");
        if (!QFileInfo::exists(defaultModel())) QFAIL("default model missing: run scripts/fetch-models.sh");
        QVERIFY(m_dir.isValid());
        m_window = std::make_unique<MainWindow>();
        m_window->resize(1366, 768);
        m_window->show();
        QVERIFY(QTest::qWaitForWindowExposed(m_window.get()));
        QVERIFY(actions());
        QSignalSpy loaded(controller(), &ChatController::modelLoaded);
        m_window->start();
        QVERIFY(loaded.wait(kTimeoutMs));
        controller()->setSamplingParams(sampled());
        QTRY_VERIFY_WITH_TIMEOUT(!controller()->modelSha256().isEmpty(), kTimeoutMs);
        QCOMPARE(controller()->modelSha256().toStdString(), wb::sha256_file(wb::default_model_path()));
    }

    void cleanupTestCase() { m_window.reset(); }

    void exportThenLoadEqualsTheRecordedTrace() {
        QVERIFY(reply(QStringLiteral("Name three colours.")));
        m_exported = m_dir.filePath(QStringLiteral("reply.json"));
        QString error;
        QVERIFY2(actions()->exportReply(lastIndex(), m_exported, &error), qPrintable(error));
        QFile f(m_exported);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const wb::GenerationTrace t = wb::read_trace_json(f.readAll().toStdString());

        const ChatEntry& r = controller()->conversation().messages.last();
        QCOMPARE(t.model_sha256, wb::sha256_file(wb::default_model_path()));
        QCOMPARE(QString::fromStdString(t.backend), controller()->model().backendName);
        QCOMPARE(t.seed_in_use, quint64(m_summary.seed));
        QCOMPARE(t.prompt, std::vector<int32_t>(m_prompt.ids.begin(), m_prompt.ids.end()));
        QCOMPARE(t.params.top_k, sampled().top_k);
        QVERIFY(bitsEqual(t.params.temperature, sampled().temperature));
        QCOMPARE(t.params.seed, sampled().seed);
        // How the engine ran it, as the CLI's exports record it (a CLI replay takes these settings).
        QVERIFY(t.engine.recorded);
        QCOMPARE(t.engine.n_ctx, controller()->model().contextSize);
        QVERIFY(t.engine.n_ctx > 0);
        QCOMPARE(t.engine.cache_type_k, std::string(wb::kv_type_name(controller()->model().kvTypeK)));
        QCOMPARE(t.engine.cache_type_v, std::string(wb::kv_type_name(controller()->model().kvTypeV)));
        QCOMPARE(t.engine.context_policy, std::string(wb::context_policy_name(controller()->contextPolicy())));
        QVERIFY(t.engine.keep > 0);  // the template's prefix a shift would keep
        // The chat records 20 candidates per stage (the first stage, penalties, keeps the whole vocabulary):
        // the file says so, or whitebox-cli's replay, which records what the file says, would differ.
        QCOMPARE(t.trace_candidates, 20);
        QCOMPARE(int(t.steps.size()), int(r.tokens.size()));
        m_exportedSteps = int(t.steps.size());
        for (size_t i = 0; i < t.steps.size(); ++i) {
            const TokenRecord& rec = r.tokens[int(i)];
            QCOMPARE(t.steps[i].token, int32_t(rec.id));
            QCOMPARE(t.steps[i].stages.size(), rec.trace.size());
            QVERIFY(!rec.trace.empty());
            for (size_t k = 0; k < rec.trace.size(); ++k) {
                const wb::SamplerStageTrace& a = t.steps[i].stages[k];
                const wb::SamplerStageTrace& b = rec.trace[k];
                QCOMPARE(a.stage, b.stage);
                QCOMPARE(a.n_before, b.n_before);
                QCOMPARE(a.n_after, b.n_after);
                QVERIFY(bitsEqual(a.threshold, b.threshold) || (std::isnan(a.threshold) && std::isnan(b.threshold)));
                QCOMPARE(a.top_after.size(), b.top_after.size());
                for (size_t c = 0; c < a.top_after.size(); ++c) {
                    QCOMPARE(a.top_after[c].id, b.top_after[c].id);
                    QVERIFY(bitsEqual(a.top_after[c].logit, b.top_after[c].logit));
                    QVERIFY(bitsEqual(a.top_after[c].p, b.top_after[c].p));
                }
            }
        }
    }

    void replayOfTheExportIsTheSame() {
        bool same = false;
        const QString report = replay(m_exported, &same);
        QVERIFY2(same, qPrintable(report));
        QVERIFY2(report.startsWith(QStringLiteral("Same: the %1 tokens").arg(controller()->conversation().messages.last().tokens.size())),
                 qPrintable(report));
        // The chat goes on after it (its session now holds the replay's context).
        QVERIFY(reply(QStringLiteral("Say hello.")));
    }

    // The logit lens and head statistics the chat recorded of a reply travel in its export, bit for
    // bit, and the file replays as the same reply with every one of them recomputed bit for bit; one
    // value altered in the file is named at exactly its token and layer; a reply without them exports none.
    void exportCarriesTheRecordedLensAndHeadStats() {
        QString error;
        const QString plain = m_dir.filePath(QStringLiteral("plain.json"));
        QVERIFY2(actions()->exportReply(lastIndex(), plain, &error), qPrintable(error));
        QFile pf(plain);
        QVERIFY(pf.open(QIODevice::ReadOnly));
        for (const wb::TraceStepInspection& s : wb::read_inspected_trace_json(pf.readAll().toStdString()).inspection)
            QVERIFY(s.empty());

        m_window->setRecordInspection(true);
        const bool replied = reply(QStringLiteral("Name a fruit."));
        m_window->setRecordInspection(false);
        QVERIFY(replied);
        const QString path = m_dir.filePath(QStringLiteral("inspected.json"));
        QVERIFY2(actions()->exportReply(lastIndex(), path, &error), qPrintable(error));
        QFile f(path);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const wb::InspectedTrace t = wb::read_inspected_trace_json(f.readAll().toStdString());
        const ChatEntry& r = controller()->conversation().messages.last();
        QCOMPARE(int(t.inspection.size()), int(r.tokens.size()));
        for (int i = 0; i < r.tokens.size(); ++i) {
            const TokenInspectionPtr& rec = r.tokens[i].inspection;
            QVERIFY(rec);
            const wb::TraceStepInspection& s = t.inspection[size_t(i)];
            QCOMPARE(s.lens.size(), rec->lens.size());
            QVERIFY(!s.lens.empty());
            for (size_t l = 0; l < s.lens.size(); ++l) {
                QCOMPARE(s.lens[l].layer, rec->lens[l].layer);
                QCOMPARE(s.lens[l].top_ids, rec->lens[l].top_ids);
                for (size_t k = 0; k < s.lens[l].top_p.size(); ++k) QVERIFY(bitsEqual(s.lens[l].top_p[k], rec->lens[l].top_p[k]));
                QVERIFY(bitsEqual(s.lens[l].entropy, rec->lens[l].entropy));
                QVERIFY(bitsEqual(s.lens[l].p_drawn, rec->lens[l].p_drawn));
            }
            QCOMPARE(s.heads.size(), rec->heads.size());
            QVERIFY(!s.heads.empty());
            for (size_t h = 0; h < s.heads.size(); ++h) {
                QCOMPARE(s.heads[h].layer, rec->heads[h].layer);
                QCOMPARE(s.heads[h].head, rec->heads[h].head);
                QCOMPARE(s.heads[h].kv_head, rec->heads[h].kv_head);
                QVERIFY(bitsEqual(s.heads[h].entropy, rec->heads[h].entropy));
                QVERIFY(bitsEqual(s.heads[h].sink, rec->heads[h].sink));
                QVERIFY(bitsEqual(s.heads[h].distance, rec->heads[h].distance));
            }
        }
        bool same = false;
        const QString report = replay(path, &same);
        QVERIFY2(same, qPrintable(report));
        const size_t layers = t.inspection[0].lens.size(), heads = t.inspection[0].heads.size();
        QVERIFY2(report.endsWith(QStringLiteral(" The same logit lens (%1 layer records) and head statistics (%2 head records), "
                                                "bit for bit.").arg(layers * size_t(r.tokens.size())).arg(heads * size_t(r.tokens.size()))),
                 qPrintable(report));

        const QString lensEdited = writeEdited(QStringLiteral("lens-edited.json"), [](nlohmann::json& j) {
            j["steps"][1]["lens"][5]["p_drawn"] = 0.125;
        }, path);
        QString edited = replay(lensEdited, &same);
        QVERIFY(!same);
        QVERIFY2(edited.startsWith(QStringLiteral("Differs: the %1 tokens and their sampler trace are the ones in the file, but "
                                                  "the logit lens differs at token 1, layer 5: p_drawn 0.125 vs ").arg(r.tokens.size())),
                 qPrintable(edited));
        const QString headsEdited = writeEdited(QStringLiteral("heads-edited.json"), [](nlohmann::json& j) {
            j["steps"][2]["heads"][4]["distance"] = 1000.5;
        }, path);
        edited = replay(headsEdited, &same);
        QVERIFY(!same);
        QVERIFY2(edited.contains(QStringLiteral(", but the head statistics differ at token 2, layer %1, head %2: distance 1000.5 vs ")
                                     .arg(t.inspection[2].heads[4].layer).arg(t.inspection[2].heads[4].head)),
                 qPrintable(edited));
    }

    // Export with attention rows, against what is known without the export's own mapping: with the
    // Attention panel on layer 2 alone, token i of a reply to a fresh chat of P prompt tokens was drawn by
    // the logits of position P - 1 + i, so its step carries exactly that layer's rows of every query
    // head, each over the P + i keys 0 .. P - 1 + i, a softmax (sums to 1), equal value for value to
    // the store's row of that position; the file replays as the same reply.
    void exportWithAttentionCarriesTheStoresRows() {
        constexpr int kLayer = 2;
        AttentionPanel* panel = m_window->attentionPanel();
        // The window is shared by the tests after this one: they get its panel back as it was.
        const auto restore = qScopeGuard([panel, layer = panel->layer(), all = panel->captureAllLayersBox()->isChecked()] {
            panel->setLayer(layer);
            panel->captureAllLayersBox()->setChecked(all);
        });
        panel->captureAllLayersBox()->setChecked(false);
        panel->setLayer(kLayer);
        QVERIFY(reply(QStringLiteral("Name a colour.")));
        const AttentionStore& store = *controller()->attentionStore();
        const ChatEntry& r = controller()->conversation().messages.last();
        const int promptTokens = int(m_prompt.ids.size());
        const int heads = controller()->model().nHead;
        QVERIFY(promptTokens > 1 && heads > 0);
        const QString path = m_dir.filePath(QStringLiteral("attention.json"));
        QString error;
        QVERIFY2(actions()->exportReply(lastIndex(), path, &error, true), qPrintable(error));
        QFile f(path);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const wb::InspectedTrace t = wb::read_inspected_trace_json(f.readAll().toStdString());
        QCOMPARE(int(t.inspection.size()), r.tokens.size());
        for (int i = 0; i < r.tokens.size(); ++i) {
            const int query = promptTokens - 1 + i;
            const std::vector<wb::AttentionRow>& got = t.inspection[size_t(i)].attention;
            QCOMPARE(int(got.size()), heads);
            for (int h = 0; h < heads; ++h) {
                const wb::AttentionRow& row = got[size_t(h)];
                QCOMPARE(row.layer, kLayer);
                QCOMPARE(row.head, h);
                QCOMPARE(int(row.probs.size()), query + 1);
                double sum = 0.0;
                for (float p : row.probs) sum += p;
                QVERIFY2(std::abs(sum - 1.0) < 1e-3, qPrintable(QString("token %1 head %2: sum %3").arg(i).arg(h).arg(sum)));
                const std::vector<float>* want = store.row(kLayer, h, query);
                QVERIFY(want);
                QCOMPARE(want->size(), row.probs.size());
                QVERIFY(std::memcmp(row.probs.data(), want->data(), want->size() * sizeof(float)) == 0);
            }
        }
        bool same = false;
        const QString report = replay(path, &same);
        QVERIFY2(same, qPrintable(report));
    }

    void replayAfterASettingChangeNamesTheFirstDifference() {
        // top_k 40 -> 2 in the file: the first token's top_k stage keeps 2, not 40.
        const QString edited = writeEdited(QStringLiteral("top_k.json"), [](nlohmann::json& j) { j["params"]["top_k"] = 2; });
        bool same = true;
        const QString report = replay(edited, &same);
        QVERIFY(!same);
        QVERIFY2(report.startsWith(QStringLiteral("Differs at token 0 (stage top_k): n_after")), qPrintable(report));
    }

    void replayRefusesWhatItCannotReplay() {
        bool same = false, started = true;
        QString report = replay(writeEdited(QStringLiteral("sha.json"), [](nlohmann::json& j) { j["model_sha256"] = std::string(64, 'a'); }),
                                &same, &started);
        QVERIFY(!started);
        QVERIFY2(report.startsWith(QStringLiteral("The trace was made with another model file (SHA-256 aaaa")), qPrintable(report));

        const QString bad = m_dir.filePath(QStringLiteral("bad.json"));
        QFile f(bad);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("{not json");
        f.close();
        report = replay(bad, &same, &started);
        QVERIFY(!started);
        QCOMPARE(report, QStringLiteral("bad.json: trace file: not valid JSON"));

        // A file above the size limit is refused before it is read (sparse: no 256 MiB is written).
        const QString huge = m_dir.filePath(QStringLiteral("huge.json"));
        QFile h(huge);
        QVERIFY(h.open(QIODevice::WriteOnly));
        QVERIFY(h.resize(wb::kMaxTraceFileBytes + 1));
        h.close();
        report = replay(huge, &same, &started);
        QVERIFY(!started);
        QCOMPARE(report, QStringLiteral("huge.json: the trace file has 268435457 bytes, more than the 256 MiB a trace may have."));
        QFile::remove(huge);

        // A hostile attention row is refused by name, and the app goes on.
        report = replay(writeEdited(QStringLiteral("row.json"),
                                    [](nlohmann::json& j) {
                                        j["steps"][0]["attention"] = {{{"layer", 0}, {"head", 0}, {"probs", {0.5, 2.0}}}};
                                    }),
                        &same, &started);
        QVERIFY(!started);
        QCOMPARE(report, QStringLiteral("row.json: trace file: steps[0].attention[0].probs[1] must be a probability in [0, 1] or "
                                        "\"nan\", got number 2.0"));

        // A prompt as long as the whole context: no room for the reply's tokens.
        const int nCtx = controller()->model().contextSize;
        report = replay(writeEdited(QStringLiteral("long.json"),
                                    [nCtx](nlohmann::json& j) { j["prompt"] = std::vector<int32_t>(size_t(nCtx), 28); }),
                        &same, &started);
        QVERIFY(started);
        QVERIFY(!same);
        QVERIFY2(report.startsWith(QStringLiteral("The replay failed: The trace needs a context of %1 tokens (a prompt of %2")
                                       .arg(nCtx + m_exportedSteps)
                                       .arg(nCtx)),
                 qPrintable(report));
        QVERIFY2(report.contains(QStringLiteral("holds %1").arg(nCtx)), qPrintable(report));
    }

    void compareWithItselfGivesKlZeroAndNoFlips() {
        QVERIFY(reply(QStringLiteral("Name three colours.")));
        CompareDialog* d = compare(defaultModel());
        QVERIFY(d && d->result());
        const wb::ModelComparison& c = d->result()->comparison;
        QCOMPARE(int(c.tokens.size()), int(controller()->conversation().messages.last().tokens.size()));
        for (const wb::TokenComparison& t : c.tokens) {
            QCOMPARE(t.kl, 0.0);
            QCOMPARE(t.top_a, t.top_b);
        }
        QCOMPARE(c.flips, 0);
        verifyDialogShows(d);
        d->close();
    }

    // A second file of the same vocabulary: SmolLM2 with its final norm's weights scaled by 1.5.
    void compareWithAnotherFileShowsCompareModelsNumbers() {
        const QString other = m_dir.filePath(QStringLiteral("smollm2-scaled-norm.gguf"));
        {
            QVERIFY(QFile::copy(defaultModel(), other));
            const auto gguf = wb::GgufFile::open(wb::default_model_path());
            const wb::GgufTensor* norm = gguf->find_tensor("output_norm.weight");
            QVERIFY(norm && norm->type == wb::GgmlType::F32);
            std::vector<float> w(size_t(norm->n_elements()));
            std::memcpy(w.data(), norm->data, w.size() * sizeof(float));
            for (float& v : w) v *= 1.5f;
            QFile f(other);
            QVERIFY(f.open(QIODevice::ReadWrite));
            QVERIFY(f.seek(qint64(gguf->data_offset() + norm->offset)));
            QCOMPARE(f.write(reinterpret_cast<const char*>(w.data()), qint64(w.size() * sizeof(float))), qint64(w.size() * sizeof(float)));
        }
        QVERIFY(reply(QStringLiteral("Write a short sentence about the sea.")));
        const auto run = controller()->conversation().messages.last().run;
        QVERIFY(run);
        // The memory ledger while the second file is loaded: what each report put in its rows.
        QVector<Seen> seen;
        const QMetaObject::Connection watch = watchLedger(seen);
        QVERIFY(watch);
        CompareDialog* d = compare(other);
        disconnect(watch);
        QVERIFY(d && d->result());
        verifyDialogShows(d);
        verifyComparisonLedger(seen, other, int(run->prompt.size()) + int(controller()->conversation().messages.last().tokens.size()));
        const wb::ModelComparison& shown = d->result()->comparison;
        QVERIFY(shown.kl_max > 0.0);  // the copy is another model

        // compare_models on the two files directly: the same numbers.
        std::vector<int32_t> tokens;
        for (const TokenRecord& t : controller()->conversation().messages.last().tokens) tokens.push_back(t.id);
        const auto a = wb::Model::load(wb::default_model_path());
        const auto b = wb::Model::load(other.toStdString());
        wb::BackendChoice cpu = wb::create_backend(wb::BackendKind::CPU, 2);
        wb::SessionOptions so;
        so.n_ctx = int32_t(run->prompt.size() + tokens.size());
        wb::Session sa(*a, *cpu.backend, so), sb(*b, *cpu.backend, so);
        const wb::ModelComparison direct = wb::compare_models(sa, sb, run->prompt, tokens);
        QCOMPARE(shown.tokens.size(), direct.tokens.size());
        for (size_t i = 0; i < direct.tokens.size(); ++i) {
            QCOMPARE(shown.tokens[i].token, direct.tokens[i].token);
            QCOMPARE(shown.tokens[i].top_a, direct.tokens[i].top_a);
            QCOMPARE(shown.tokens[i].top_b, direct.tokens[i].top_b);
            QVERIFY2(std::abs(shown.tokens[i].kl - direct.tokens[i].kl) <= 1e-6 * std::max(1.0, direct.tokens[i].kl),
                     qPrintable(QStringLiteral("token %1: %2 vs %3").arg(i).arg(shown.tokens[i].kl).arg(direct.tokens[i].kl)));
        }
        QCOMPARE(shown.flips, direct.flips);
        d->close();
    }

    void compareCanBeCancelledAndTheChatGoesOn() {
        QString error;
        CompareDialog* d = actions()->compareReply(lastIndex(), defaultModel(), &error);
        QVERIFY2(d, qPrintable(error));
        QVERIFY(d->isRunning());
        d->cancelButton()->click();  // before the worker has loaded the file: it stops after the load
        QTRY_VERIFY_WITH_TIMEOUT(!d->isRunning(), kTimeoutMs);
        QVERIFY(!d->result());
        QCOMPARE(d->summaryLabel()->text(), QStringLiteral("The comparison was cancelled."));
        d->close();
        QVERIFY(reply(QStringLiteral("Say hello.")));
    }

    void compareRefusesAnotherVocabulary() {
        const QString gemma = QFileInfo(defaultModel()).dir().filePath(QStringLiteral("gemma-3-270m-Q4_K_M.gguf"));
        if (!QFileInfo::exists(gemma)) QSKIP("gemma-3-270m-Q4_K_M.gguf is not in the model cache");
        CompareDialog* d = compare(gemma);
        QVERIFY(d);
        QVERIFY(!d->result());
        QVERIFY2(d->summaryLabel()->text().startsWith(QStringLiteral("compare: the models' vocabularies differ")),
                 qPrintable(d->summaryLabel()->text()));
        d->close();
    }

    // A reply that went on past context shifts is longer than the chat's context: Compare runs the chat
    // model in a session of its own sized to hold prompt and reply, and the ledger has a row of that
    // second cache of the chat model while Compare runs: the formula's bytes for its tokens (SmolLM2's
    // f16 K and V rows: layers x kv heads x head dim x 2 x 2 bytes a token, from the model's shape)
    // beside its own count, exactly those at the end, when it holds prompt and reply; it goes with
    // the rest of Compare's rows. It reloads the model on a 128-token context, and the model as it was
    // when it ends.
    void compareOfAReplyLongerThanTheContextShowsTheChatModelsSecondCache() {
        constexpr int kSmallContext = 128;
        QSignalSpy loaded(controller(), &ChatController::modelLoaded);
        const auto restore = qScopeGuard([this, context = controller()->contextSize(), policy = controller()->contextPolicy(),
                                          sampling = controller()->samplingParams()] {
            QSignalSpy again(controller(), &ChatController::modelLoaded);
            controller()->setContextSize(context);
            controller()->loadModel(defaultModel());
            if (!again.wait(kTimeoutMs)) qWarning("the model did not load again on its %d-token context", context);
            controller()->setContextPolicy(policy);
            controller()->setSamplingParams(sampling);
        });
        controller()->setContextSize(kSmallContext);
        controller()->loadModel(defaultModel());
        QVERIFY(loaded.wait(kTimeoutMs));
        controller()->setContextPolicy(wb::ContextPolicy::SHIFT);
        wb::SamplingParams p;
        p.temperature = 0.0f;
        p.ignore_eos = true;
        p.max_tokens = kSmallContext + 32;  // with the prompt, well past the context
        controller()->setSamplingParams(p);
        QSignalSpy cuts(controller(), &ChatController::contextCut);
        QVERIFY(reply(QStringLiteral("Tell me a long story.")));
        QVERIFY(!cuts.isEmpty());
        const ModelSummary& chat = controller()->model();
        const int tokens = int(m_prompt.ids.size()) + int(controller()->conversation().messages.last().tokens.size());
        QVERIFY(tokens > kSmallContext);
        const quint64 perToken = quint64(chat.nLayer) * quint64(chat.nHeadKv) * quint64(chat.headDim) * 2 * 2;
        QVector<Seen> seen;
        const QMetaObject::Connection watch = watchLedger(seen);
        QVERIFY(watch);
        CompareDialog* d = compare(defaultModel());
        disconnect(watch);
        QVERIFY(d && d->result());
        QVERIFY(seen.size() >= 3);  // loaded, the end of the evaluation, released
        for (int i = 0; i + 1 < seen.size(); ++i) {
            const Seen& s = seen[i];
            QVERIFY(s.memory.chatResized);
            QCOMPARE(s.memory.chatKv.capacity, tokens);
            QCOMPARE(s.chatKvMeasured, qint64(s.memory.chatKv.bytes_used));
            QCOMPARE(s.chatKvPredicted, qint64(perToken * quint64(s.memory.chatKv.n_tokens)));
        }
        const Seen& end = seen[seen.size() - 2];
        QCOMPARE(end.memory.chatKv.n_tokens, tokens);
        QCOMPARE(end.chatKvMeasured, qint64(perToken * quint64(tokens)));
        QCOMPARE(end.chatKvPredicted, end.chatKvMeasured);
        QVERIFY(!seen.last().memory.loaded);
        QCOMPARE(seen.last().chatKvPredicted, qint64(-1));
        d->close();
    }
};

QTEST_MAIN(TestTraceActions)
#include "test_trace_actions.moc"
