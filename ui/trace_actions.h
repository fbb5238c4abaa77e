#pragma once
// TraceActions (issue 16 item 7): Export sampler trace, Replay sampler trace and Compare with another
// model in the app. Export writes a reply of this session as a trace file (docs/trace-format.md);
// Replay reads one, refuses what cannot be replayed here (another model file, a context too small)
// and has the worker rerun it, then says "same" or the first token and stage where the new run
// differs; Compare has the worker run compare_models against a second GGUF and shows CompareDialog.
// The engine runs only on the worker thread; every failure is a message, never a crash or a wait.
#include <QObject>
#include <QPointer>

#include "conversation.h"
#include "engine/trace_inspection.h"

class ChatController;
class CompareDialog;
class QWidget;

// The trace file of reply `reply` (its ReplyRun and its tokens' sampler traces): the prompt ids with
// any given tokens, the drawn tokens after them, the settings and seed, the model file's SHA-256. A
// reply the user stopped records max_tokens = its length, so that a replay stops where it did. False
// with *error saying why the reply cannot be exported.
bool traceOfReply(const ChatEntry& reply, const QString& modelSha256, wb::GenerationTrace* trace, QString* error);

// Per drawn token of reply `reply`, its logit lens and head statistics when their panels recorded
// them (TokenRecord::inspection): the trace file's optional "lens" and "heads". All empty when none
// were recorded.
std::vector<wb::TraceStepInspection> inspectionOfReply(const ChatEntry& reply);

// "Same: ..." or where `now` first differs from `recorded` (compare_traces), in words; then whether the
// logit lens and head statistics the file recorded are the same (compare_inspection), when it has any.
QString replayReport(const wb::InspectedTrace& recorded, const wb::InspectedTrace& now, bool* same);

class TraceActions : public QObject {
    Q_OBJECT

public:
    TraceActions(ChatController* controller, QWidget* window);

    // The actions without their file dialogs (the dialogs call these; tests too). withAttention: the
    // Attention panel's captured rows of each drawn token go in too (the trace file's optional
    // "attention", megabytes per token): only for the conversation's last reply, whose positions the
    // store still holds, with no context cut since the conversation began; refused when it holds none.
    bool exportReply(int messageIndex, const QString& path, QString* error, bool withAttention = false);
    // The job id, or 0 with *error when the file is refused before anything runs.
    quint64 replayFile(const QString& path, QString* error);
    // The dialog it opened (non-modal, deleted on close), or null with *error.
    CompareDialog* compareReply(int messageIndex, const QString& otherPath, QString* error);

    // With their file dialogs and message boxes.
    void exportReplyDialog(int messageIndex, bool withAttention = false);
    void replayDialog();
    void compareDialog(int messageIndex);
    // The last reply of the conversation on screen (-1 when there is none): the File menu's target.
    int lastReply() const;

Q_SIGNALS:
    // A replay ended: its report (same, the first difference, or the error), shown in a message box.
    void replayReported(quint64 job, const QString& report, bool same);

private:
    void handleReplayFinished(quint64 job, const InspectedTracePtr& now, const QString& error);
    bool refuseWhileBusy(QString* error) const;
    // Adds the store's rows of reply `messageIndex` to `steps` (one per drawn token); false with *error.
    bool addAttentionRows(int messageIndex, std::vector<wb::TraceStepInspection>& steps, QString* error) const;

    ChatController* m_controller;
    QWidget* m_window;
    quint64 m_replayJob = 0;
    wb::InspectedTrace m_replaying;   // the file of m_replayJob
    bool m_showReports = false;       // message boxes only for the dialogs' own replays
};
