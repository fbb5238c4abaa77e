#pragma once
// The chat panel: the conversation (streaming replies, code blocks, tokens optionally coloured by
// probability and clickable), the system prompt (several lines) and the message box with send, stop,
// regenerate, new chat and copy. Edit and resend: right-click a message of yours, edit it in the box,
// send. Its buttons sit in one short row so the chat never forces the window's width.
#include <QWidget>

class ChatController;
class ChatDocument;
class ContextFullNotice;
class MessageEdit;
class PromptCounter;
class QCheckBox;
class QLabel;
class QPlainTextEdit;
class QPushButton;
class QTextBrowser;

class ChatPanel : public QWidget {
    Q_OBJECT

public:
    explicit ChatPanel(ChatController* controller, QWidget* parent = nullptr);
    ~ChatPanel() override;

    MessageEdit* input() const { return m_input; }
    QTextBrowser* view() const { return m_view; }
    QPlainTextEdit* systemPromptEdit() const { return m_systemPrompt; }
    QPushButton* sendButton() const { return m_sendButton; }
    QCheckBox* colorByProbabilityBox() const { return m_colorBox; }
    int editingIndex() const { return m_editIndex; }
    ChatDocument* chatDocument() const { return m_document; }
    PromptCounter* promptCounter() const { return m_counter; }
    QLabel* tokenCountLabel() const { return m_countLabel; }
    // Why the last message was not sent (its numbers and the remedies); hidden when there is none.
    QLabel* noticeLabel() const { return m_noticeLabel; }
    // Under the conversation when a reply stopped with a full context: shift, trim or a new chat.
    ContextFullNotice* contextFullNotice() const { return m_contextFull; }
    // Shows reply `index` as its raw text or as Markdown (also in the view's context menu).
    void setRawText(int index, bool raw);
    // Puts user message `index` into the message box; the next send replaces it and what followed.
    void beginEdit(int index);
    void cancelEdit();

public Q_SLOTS:
    void send();
    void copyConversation();

    // The reply context menu's Export sampler trace and Compare with another model (issue 16 item 7),
    // offered only when the window has them (a build with trace files).
    void setTraceActionsOffered(bool on) { m_traceActions = on; }

Q_SIGNALS:
    void tokenClicked(int messageIndex, int tokenIndex);
    void exportTraceRequested(int messageIndex);
    void compareRequested(int messageIndex);

private Q_SLOTS:
    void handleConversationReset();
    void handleMessageAppended(int index);
    void handleTokenAppended(int messageIndex, int tokenIndex);
    void handleMessageFinished(int index);
    void handleGeneratingChanged(bool generating);
    void handleAnchorClicked(const QUrl& url);
    void handleContextMenu(const QPoint& pos);
    void handleMessageRefused(const QString& text, const QString& reason);
    void applyTheme();

private:
    bool m_traceActions = false;
    void scrollToEndIfFollowing(bool following);
    bool isFollowing() const;
    void submit(const QString& text);
    void showNotice(const QString& text);
    void copyCodeBlock(int messageIndex, int blockIndex);

    ChatController* m_controller;
    QTextBrowser* m_view;
    ChatDocument* m_document;
    MessageEdit* m_input;
    QPlainTextEdit* m_systemPrompt;
    QCheckBox* m_colorBox;
    QLabel* m_editLabel;
    QPushButton* m_sendButton;
    QPushButton* m_stopButton;
    QPushButton* m_regenerateButton;
    QPushButton* m_newChatButton;
    QPushButton* m_copyButton;
    int m_editIndex = -1;
    QLabel* m_countLabel;
    QLabel* m_noticeLabel;
    ContextFullNotice* m_contextFull;
    PromptCounter* m_counter;
    bool m_sendWhenCounted = false;  // Send waits for the count of what the box holds
};
