#pragma once
// PromptCounter: the message box's "1,234 / 8,192 tokens". After a pause in typing (or a change of
// the conversation, the system prompt or the model) it asks the worker thread for the length of the
// prompt the next send would build (ChatController::countPrompt: the model's chat template and
// tokenizer, the same build_chat_prompt a reply uses), one request at a time, so the GUI thread never
// tokenizes. The chat panel refuses a message whose fresh count leaves the reply no room
// (context_budget.h) before it enters the history.
#include <QObject>
#include <QString>
#include <QTimer>

class ChatController;
class QLabel;
class QPlainTextEdit;

class PromptCounter : public QObject {
    Q_OBJECT

public:
    PromptCounter(ChatController* controller, QPlainTextEdit* input, QLabel* label, QObject* parent = nullptr);

    // The send replaces user message `index` (edit and resend); -1: a new message.
    void setEditIndex(int index);
    // The last count is for exactly the box's text and the conversation as it is now.
    bool isFresh() const { return m_fresh; }
    int tokens() const { return m_tokens; }
    int contextSize() const { return m_contextSize; }
    QString error() const { return m_error; }  // e.g. no model: nothing to count with
    bool fits() const;

public Q_SLOTS:
    // Something the prompt is built from changed: count again after the pause.
    void invalidate();
    // Counts now (no pause); counted() follows.
    void countNow();

Q_SIGNALS:
    void counted();

private:
    void handleCounted(quint64 id, int tokens, int contextSize, const QString& error);
    void showCount();

    ChatController* m_controller;
    QPlainTextEdit* m_input;
    QLabel* m_label;
    QTimer m_pause;
    int m_editIndex = -1;
    quint64 m_inFlight = 0;          // the request being answered; 0 when none
    bool m_changedSinceRequest = true;
    bool m_fresh = false;
    int m_tokens = 0;
    int m_contextSize = 0;
    QString m_error;
};
