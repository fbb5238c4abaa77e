#include "trace_actions.h"

#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QMainWindow>
#include <QMessageBox>
#include <QSaveFile>
#include <QStatusBar>

#include "attention_store.h"
#include "chat_controller.h"
#include "compare_dialog.h"
#include "engine/inspection_replay.h"
#include "util/error.h"

namespace {

QString capitalized(const std::string& text) {
    QString s = QString::fromStdString(text);
    if (!s.isEmpty()) s[0] = s[0].toUpper();
    return s;
}

}  // namespace

bool traceOfReply(const ChatEntry& reply, const QString& modelSha256, wb::GenerationTrace* trace, QString* error) {
    const auto fail = [error](const QString& why) {
        if (error) *error = why;
        return false;
    };
    if (reply.role != QLatin1String("assistant")) return fail(QObject::tr("Only a reply has a sampler trace."));
    const ReplyRun* run = reply.run.get();
    if (!run)
        return fail(QObject::tr("This reply has no recorded prompt: only replies generated since WhiteBox started can be "
                                "exported (a saved conversation keeps their text and tokens, not the prompt's ids)."));
    if (!run->unreplayable.isEmpty())
        return fail(QObject::tr("This reply cannot be exported for a replay: %1.").arg(run->unreplayable));
    if (reply.tokens.size() <= run->given) return fail(QObject::tr("This reply has no generated tokens."));
    if (modelSha256.isEmpty())
        return fail(QObject::tr("The SHA-256 of the model file (%1) is not known yet: it is still being read, or it could "
                                "not be. Try again in a moment.").arg(QFileInfo(run->modelPath).fileName()));
    wb::GenerationTrace t;
    t.model_sha256 = modelSha256.toStdString();
    t.backend = run->backend.toStdString();
    t.engine = run->engine;
    t.params = run->params;
    t.seed_in_use = run->seed;
    t.prompt = run->prompt;
    t.prompt_cached = run->cached;
    for (int i = run->given; i < reply.tokens.size(); ++i) {
        const TokenRecord& r = reply.tokens[i];
        if (r.trace.empty()) return fail(QObject::tr("Token %1 of this reply has no sampler trace.").arg(i));
        t.steps.push_back({int32_t(r.id), r.trace});
    }
    // The chat recorded as many candidates as its capture asked for; the longest record says at least
    // that many to a replay (the CLI's included), which then records the same.
    t.trace_candidates = wb::replay_trace_candidates(t);
    // Stopped by the user: the file says how many tokens there were, or a replay would go on past them.
    if (reply.stopReason == QLatin1String("stopped")) t.params.max_tokens = int32_t(t.steps.size());
    *trace = std::move(t);
    return true;
}

std::vector<wb::TraceStepInspection> inspectionOfReply(const ChatEntry& reply) {
    std::vector<wb::TraceStepInspection> out;
    const int given = reply.run ? reply.run->given : 0;
    for (int i = given; i < reply.tokens.size(); ++i) {
        wb::TraceStepInspection s;
        if (const TokenInspectionPtr& in = reply.tokens[i].inspection) {
            s.lens = in->lens;
            s.heads = in->heads;
        }
        out.push_back(std::move(s));
    }
    return out;
}

QString replayReport(const wb::InspectedTrace& file, const wb::InspectedTrace& replayed, bool* same) {
    const wb::GenerationTrace& recorded = file.trace;
    const wb::GenerationTrace& now = replayed.trace;
    const wb::TraceDivergence d = wb::compare_traces(recorded, now);
    // Up to the first different token: its lens and heads still come from the file's context.
    const wb::InspectionDivergence di =
        wb::compare_inspection(file.inspection, replayed.inspection, d.same ? now.steps.size() : d.step + 1);
    *same = d.same && di.same;
    const QString inspection = QString::fromStdString(wb::describe_inspection_divergence(di));
    const std::string records = wb::describe_inspection_records(file.inspection);
    QString text;
    if (d.same && di.same) {
        text = QObject::tr("Same: the %1 tokens and their sampler trace are the ones in the file.").arg(now.steps.size());
        if (!records.empty()) text += QLatin1Char(' ') + capitalized("the same " + records + ", bit for bit") + QLatin1Char('.');
    } else if (d.same) {
        text = QObject::tr("Differs: the %1 tokens and their sampler trace are the ones in the file, but %2.")
                   .arg(now.steps.size()).arg(inspection);
    } else {
        text = QObject::tr("Differs at token %1%2: %3.")
                   .arg(d.step)
                   .arg(d.stage.empty() ? QString() : QObject::tr(" (stage %1)").arg(QString::fromStdString(d.stage)))
                   .arg(QString::fromStdString(d.what));
        if (!di.same) text += QLatin1Char(' ') + capitalized(inspection.toStdString()) + QLatin1Char('.');
    }
    if (!*same && recorded.prompt_cached > 0)
        text += QObject::tr(" The recorded reply's prompt reused %1 positions cached from an earlier turn, whose keys and "
                            "values were computed one token at a time while that turn was generated; the replay prefills "
                            "the whole prompt, which can change the logits a little. A reply after New chat replays exactly.")
                    .arg(recorded.prompt_cached);
    if (!recorded.backend.empty() && recorded.backend != now.backend)
        text += QObject::tr(" Recorded on %1, replayed on %2.")
                    .arg(QString::fromStdString(recorded.backend), QString::fromStdString(now.backend));
    return text;
}

TraceActions::TraceActions(ChatController* controller, QWidget* window)
    : QObject(window), m_controller(controller), m_window(window) {
    connect(controller, &ChatController::replayFinished, this, &TraceActions::handleReplayFinished);
}

int TraceActions::lastReply() const {
    const auto& messages = m_controller->conversation().messages;
    for (int i = int(messages.size()) - 1; i >= 0; --i)
        if (messages[i].role == QLatin1String("assistant")) return i;
    return -1;
}

bool TraceActions::refuseWhileBusy(QString* error) const {
    if (!m_controller->hasModel() || m_controller->isLoading()) *error = tr("Load a model first.");
    else if (m_controller->isGenerating()) *error = tr("Wait for the reply to finish (or stop it) first.");
    else if (m_replayJob != 0) *error = tr("A replay is still running.");
    else return false;
    return true;
}

bool TraceActions::addAttentionRows(int messageIndex, std::vector<wb::TraceStepInspection>& steps, QString* error) const {
    const AttentionStore& store = *m_controller->attentionStore();
    if (messageIndex != lastReply()) {
        *error = tr("Only the last reply's attention rows are held (a later message's prompt replaced them).");
        return false;
    }
    if (store.cut().dropped > 0) {
        *error = tr("The context was cut in this conversation: the captured rows' positions are no longer the reply's.");
        return false;
    }
    const ChatEntry& reply = m_controller->conversation().messages[messageIndex];
    size_t rows = 0;
    for (size_t i = 0; i < steps.size(); ++i) {
        // The row of the position before the token: its logits drew it.
        const int query = reply.tokens[reply.run->given + int(i)].position - 1;
        for (int layer = 0; query >= 0 && layer < store.layerCount(); ++layer)
            for (int head = 0; store.hasLayer(layer) && head < store.headCount(); ++head)
                if (const std::vector<float>* row = store.row(layer, head, query)) {
                    steps[i].attention.push_back({layer, head, *row});
                    ++rows;
                }
    }
    if (rows == 0) {
        *error = tr("No attention rows of this reply were captured: the Attention panel captures them while it is "
                    "shown (within its memory budget).");
        return false;
    }
    return true;
}

bool TraceActions::exportReply(int messageIndex, const QString& path, QString* error, bool withAttention) {
    const auto& messages = m_controller->conversation().messages;
    if (messageIndex < 0 || messageIndex >= messages.size()) {
        *error = tr("There is no such reply.");
        return false;
    }
    const ChatEntry& reply = messages[messageIndex];
    wb::GenerationTrace trace;
    const QString sha = reply.run ? m_controller->fileSha256(reply.run->modelPath) : QString();
    if (!traceOfReply(reply, sha, &trace, error)) return false;
    std::vector<wb::TraceStepInspection> inspection = inspectionOfReply(reply);
    if (withAttention && !addAttentionRows(messageIndex, inspection, error)) return false;
    QSaveFile file(path);  // the old file or the new one, never half of one
    QByteArray text;
    try {
        text = QByteArray::fromStdString(wb::write_inspected_trace_json(trace, inspection)) + '\n';
    } catch (const wb::Error& e) {
        *error = QString::fromUtf8(e.what());
        return false;
    }
    if (!file.open(QIODevice::WriteOnly) || file.write(text) != text.size() || !file.commit()) {
        *error = tr("Cannot write %1: %2").arg(path, file.errorString());
        return false;
    }
    return true;
}

quint64 TraceActions::replayFile(const QString& path, QString* error) {
    if (refuseWhileBusy(error)) return 0;
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly)) {
        *error = tr("Cannot read %1: %2").arg(path, file.errorString());
        return 0;
    }
    // Refused before it is read: the whole file is held, then parsed (sampling/trace_file.h).
    if (file.size() > wb::kMaxTraceFileBytes) {
        *error = tr("%1: the trace file has %2 bytes, more than the %3 MiB a trace may have.")
                     .arg(QFileInfo(path).fileName()).arg(file.size()).arg(wb::kMaxTraceFileBytes >> 20);
        return 0;
    }
    wb::InspectedTrace recorded;
    try {
        recorded = wb::read_inspected_trace_json(file.readAll().toStdString());
    } catch (const wb::Error& e) {
        *error = tr("%1: %2").arg(QFileInfo(path).fileName(), QString::fromUtf8(e.what()));
        return 0;
    } catch (const std::bad_alloc&) {
        *error = tr("%1: not enough memory to read the trace file.").arg(QFileInfo(path).fileName());
        return 0;
    } catch (const std::exception& e) {
        *error = tr("%1: cannot read the trace file: %2").arg(QFileInfo(path).fileName(), QString::fromUtf8(e.what()));
        return 0;
    }
    // Another file gives other numbers from the first token on: saying so beats a first difference.
    if (!recorded.trace.model_sha256.empty()) {
        const QString loaded = m_controller->modelSha256();
        if (loaded.isEmpty()) {
            *error = tr("The SHA-256 of the loaded model's file is still being read; try again in a moment.");
            return 0;
        }
        if (loaded.toStdString() != recorded.trace.model_sha256) {
            *error = tr("The trace was made with another model file (SHA-256 %1); the loaded one's is %2. Load that "
                        "file to replay it.").arg(QString::fromStdString(recorded.trace.model_sha256), loaded);
            return 0;
        }
    }
    m_replaying = recorded;
    m_replayJob = m_controller->replayTrace(recorded);
    return m_replayJob;
}

void TraceActions::handleReplayFinished(quint64 job, const InspectedTracePtr& now, const QString& error) {
    if (job != m_replayJob) return;
    m_replayJob = 0;
    bool same = false;
    const QString report = now ? replayReport(m_replaying, *now, &same) : tr("The replay failed: %1").arg(error);
    Q_EMIT replayReported(job, report, same);
    if (!m_showReports) return;
    m_showReports = false;
    auto* box = new QMessageBox(same ? QMessageBox::Information : QMessageBox::Warning, tr("Replay sampler trace"), report,
                                QMessageBox::Ok, m_window);
    box->setAttribute(Qt::WA_DeleteOnClose);
    box->open();
}

CompareDialog* TraceActions::compareReply(int messageIndex, const QString& otherPath, QString* error) {
    if (refuseWhileBusy(error)) return nullptr;
    const auto& messages = m_controller->conversation().messages;
    if (messageIndex < 0 || messageIndex >= messages.size() || messages[messageIndex].role != QLatin1String("assistant")) {
        *error = tr("Choose a reply to compare.");
        return nullptr;
    }
    const ChatEntry& reply = messages[messageIndex];
    if (!reply.run || reply.run->rounds > 1 || reply.tokens.isEmpty()) {
        *error = reply.run && reply.run->rounds > 1
                     ? tr("This reply was continued after old turns were trimmed: no one prompt gives the model what it saw.")
                     : tr("This reply has no recorded prompt: only replies generated since WhiteBox started can be compared.");
        return nullptr;
    }
    if (reply.run->modelPath != m_controller->model().path) {
        *error = tr("This reply was generated with %1; load that model to compare it.").arg(QFileInfo(reply.run->modelPath).fileName());
        return nullptr;
    }
    // The rendered prompt, and the whole reply (given tokens included) as the tokens compared.
    const std::vector<int32_t>& ids = reply.run->prompt;
    const QVector<int> prompt(ids.begin(), ids.end() - reply.run->given);
    QVector<int> tokens;
    for (const TokenRecord& t : reply.tokens) tokens << t.id;
    auto* dialog = new CompareDialog(m_controller->model().name, otherPath, m_window);
    const quint64 job = m_controller->compareWithModel(otherPath, prompt, tokens);
    connect(m_controller, &ChatController::compareProgress, dialog, [dialog, job](quint64 j, int done, int total) {
        if (j == job) dialog->setProgress(done, total);
    });
    connect(m_controller, &ChatController::compareFinished, dialog,
            [dialog, job](quint64 j, const ModelCompareResultPtr& result, const QString& why) {
                if (j != job) return;
                if (result) dialog->setResult(result);
                else dialog->setError(why);
            });
    connect(dialog, &CompareDialog::cancelRequested, m_controller, [this, job] { m_controller->cancelJob(job); });
    // Closed while it runs: the worker stops too.
    connect(dialog, &QObject::destroyed, m_controller, [this, job] { m_controller->cancelJob(job); });
    dialog->show();
    return dialog;
}

void TraceActions::exportReplyDialog(int messageIndex, bool withAttention) {
    QString error;
    const auto& messages = m_controller->conversation().messages;
    wb::GenerationTrace probe;
    // Refused before a file is chosen when it cannot be exported anyway.
    if (messageIndex < 0 || messageIndex >= messages.size() ||
        !traceOfReply(messages[messageIndex], messages[messageIndex].run ? m_controller->fileSha256(messages[messageIndex].run->modelPath) : QString(),
                      &probe, &error)) {
        QMessageBox::warning(m_window, tr("Export sampler trace"), error.isEmpty() ? tr("There is no reply to export.") : error);
        return;
    }
    const QString path = QFileDialog::getSaveFileName(m_window, tr("Export sampler trace"), QStringLiteral("reply-trace.json"),
                                                      tr("Sampler traces (*.json);;All files (*)"));
    if (path.isEmpty()) return;
    if (!exportReply(messageIndex, path, &error, withAttention)) QMessageBox::warning(m_window, tr("Export sampler trace"), error);
}

void TraceActions::replayDialog() {
    QString error;
    if (refuseWhileBusy(&error)) {
        QMessageBox::warning(m_window, tr("Replay sampler trace"), error);
        return;
    }
    const QString path = QFileDialog::getOpenFileName(m_window, tr("Replay sampler trace"), QString(),
                                                      tr("Sampler traces (*.json);;All files (*)"));
    if (path.isEmpty()) return;
    if (replayFile(path, &error) == 0) {
        QMessageBox::warning(m_window, tr("Replay sampler trace"), error);
        return;
    }
    m_showReports = true;
    if (auto* main = qobject_cast<QMainWindow*>(m_window)) main->statusBar()->showMessage(tr("Replaying %1…").arg(QFileInfo(path).fileName()), 5000);
}

void TraceActions::compareDialog(int messageIndex) {
    const QString path = QFileDialog::getOpenFileName(m_window, tr("Compare with another model file"), QString(),
                                                      tr("GGUF models (*.gguf);;All files (*)"));
    if (path.isEmpty()) return;
    QString error;
    if (!compareReply(messageIndex, path, &error)) QMessageBox::warning(m_window, tr("Compare with another model"), error);
}
