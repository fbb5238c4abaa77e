#include "chat_panel.h"

#include <QApplication>
#include <QCheckBox>
#include <QClipboard>
#include <QDesktopServices>
#include <QHBoxLayout>
#include <QLabel>
#include <QPlainTextEdit>
#include <QMenu>
#include <QPushButton>
#include <QScrollBar>
#include <QTextBrowser>
#include <QVBoxLayout>

#include "chat_controller.h"
#include "chat_document.h"
#include "context_budget.h"
#include "context_full_notice.h"
#include "markdown_writer.h"
#include "message_edit.h"
#include "prompt_counter.h"
#include "theme.h"

ChatPanel::ChatPanel(ChatController* controller, QWidget* parent) : QWidget(parent), m_controller(controller) {
    // Two lines show by default and it scrolls beyond; Tab leaves it, as in the message box.
    const QFontMetrics fm = fontMetrics();
    m_systemPrompt = new QPlainTextEdit(this);
    m_systemPrompt->setObjectName(QStringLiteral("systemPromptEdit"));
    m_systemPrompt->setPlaceholderText(tr("System prompt (optional; applies from the next reply)"));
    m_systemPrompt->setAccessibleName(tr("System prompt"));
    m_systemPrompt->setTabChangesFocus(true);
    m_systemPrompt->setFixedHeight(fm.lineSpacing() * 2 + 2 * (m_systemPrompt->frameWidth() + 4));

    m_view = new QTextBrowser(this);
    m_view->setOpenLinks(false);
    m_view->setContextMenuPolicy(Qt::CustomContextMenu);
    m_view->setAccessibleName(tr("Conversation"));
    m_document = new ChatDocument(m_view->document());

    m_editLabel = new QLabel(this);
    m_editLabel->setVisible(false);
    m_editLabel->setWordWrap(true);

    m_input = new MessageEdit(this);
    m_input->setMaximumHeight(fm.lineSpacing() * 6);
    m_input->setObjectName(QStringLiteral("messageEdit"));
    m_input->setAccessibleName(tr("Message"));

    m_sendButton = new QPushButton(tr("Send"), this);
    m_stopButton = new QPushButton(tr("Stop"), this);
    m_stopButton->setToolTip(tr("Stop the reply (Esc)"));
    m_regenerateButton = new QPushButton(tr("Regenerate"), this);
    m_newChatButton = new QPushButton(tr("New chat"), this);
    m_copyButton = new QPushButton(tr("Copy"), this);
    m_copyButton->setToolTip(tr("Copy the conversation as text"));
    m_colorBox = new QCheckBox(tr("Colour tokens by probability"), this);

    // The colour switch is a view option: it sits above the box, the actions below it.
    auto* above = new QHBoxLayout;
    above->addWidget(m_editLabel, 1);
    above->addStretch(0);
    above->addWidget(m_colorBox);
    m_noticeLabel = new QLabel(this);
    m_noticeLabel->setObjectName(QStringLiteral("sendNotice"));
    m_noticeLabel->setWordWrap(true);
    m_noticeLabel->setVisible(false);
    m_contextFull = new ContextFullNotice(m_controller, this);
    m_countLabel = new QLabel(this);
    m_countLabel->setObjectName(QStringLiteral("tokenCount"));
    m_counter = new PromptCounter(m_controller, m_input, m_countLabel, this);
    auto* buttons = new QHBoxLayout;
    buttons->addWidget(m_countLabel);
    buttons->addStretch(1);
    for (QPushButton* b : {m_copyButton, m_newChatButton, m_regenerateButton, m_stopButton, m_sendButton}) buttons->addWidget(b);

    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addWidget(m_systemPrompt);
    layout->addWidget(m_view, 1);
    layout->addWidget(m_contextFull);
    layout->addLayout(above);
    layout->addWidget(m_noticeLabel);
    layout->addWidget(m_input);
    layout->addLayout(buttons);

    connect(m_input, &MessageEdit::sendRequested, this, &ChatPanel::send);
    connect(m_sendButton, &QPushButton::clicked, this, &ChatPanel::send);
    connect(m_stopButton, &QPushButton::clicked, m_controller, &ChatController::stop);
    connect(m_regenerateButton, &QPushButton::clicked, m_controller, &ChatController::regenerate);
    connect(m_newChatButton, &QPushButton::clicked, m_controller, &ChatController::newChat);
    connect(m_copyButton, &QPushButton::clicked, this, &ChatPanel::copyConversation);
    connect(m_systemPrompt, &QPlainTextEdit::textChanged, this, [this] { m_controller->setSystemPrompt(m_systemPrompt->toPlainText()); });
    connect(m_colorBox, &QCheckBox::toggled, this, [this](bool on) {
        m_document->setColorByProbability(on);
        m_document->rebuild(m_controller->conversation());
    });
    connect(m_view, &QTextBrowser::anchorClicked, this, &ChatPanel::handleAnchorClicked);
    connect(m_controller, &ChatController::messageRefused, this, &ChatPanel::handleMessageRefused);
    connect(m_systemPrompt, &QPlainTextEdit::textChanged, m_counter, &PromptCounter::invalidate);
    connect(m_input, &QPlainTextEdit::textChanged, m_noticeLabel, &QWidget::hide);
    // A send waiting for its count is for the text as it was: typing on cancels it, so a slow count
    // (the worker busy loading a model) never sends half-typed text later.
    connect(m_input, &QPlainTextEdit::textChanged, this, [this] { m_sendWhenCounted = false; });
    connect(m_counter, &PromptCounter::counted, this, [this] {
        if (!m_sendWhenCounted) return;
        m_sendWhenCounted = false;
        send();
    });
    connect(m_view, &QWidget::customContextMenuRequested, this, &ChatPanel::handleContextMenu);

    connect(m_controller, &ChatController::conversationReset, this, &ChatPanel::handleConversationReset);
    connect(m_controller, &ChatController::messageAppended, this, &ChatPanel::handleMessageAppended);
    connect(m_controller, &ChatController::tokenAppended, this, &ChatPanel::handleTokenAppended);
    connect(m_controller, &ChatController::messageFinished, this, &ChatPanel::handleMessageFinished);
    connect(m_controller, &ChatController::generatingChanged, this, &ChatPanel::handleGeneratingChanged);
    connect(m_controller, &ChatController::systemPromptRestored, m_systemPrompt, [this](const QString& prompt) {
        if (prompt != m_systemPrompt->toPlainText()) m_systemPrompt->setPlainText(prompt);
    });
    connect(ThemeNotifier::instance(), &ThemeNotifier::themeChanged, this, &ChatPanel::applyTheme);
    applyTheme();
    handleGeneratingChanged(false);
}

void ChatPanel::applyTheme() {
    Theme::setTextColor(m_editLabel, Theme::Role::Warning);
    Theme::setTextColor(m_noticeLabel, Theme::Role::Warning);
    // The role names and code backgrounds are baked into the document's formats.
    m_document->rebuild(m_controller->conversation());
}

ChatPanel::~ChatPanel() {
    delete m_document;
}

void ChatPanel::send() {
    const QString text = m_input->toPlainText();
    if (text.trimmed().isEmpty() || m_controller->isGenerating()) return;
    // Refused before it enters the history when the prompt would leave the reply no room. The count
    // is the worker's; Send waits for it when the box changed since (a few milliseconds when idle).
    if (!m_counter->isFresh()) {
        m_sendWhenCounted = true;
        m_counter->countNow();
        return;
    }
    if (m_counter->error().isEmpty() && !m_counter->fits()) {
        showNotice(context_budget::refusal(m_counter->tokens(), m_counter->contextSize()));
        return;
    }
    submit(text);
}

void ChatPanel::submit(const QString& text) {
    const bool sent = m_editIndex >= 0 ? m_controller->editAndResend(m_editIndex, text) : m_controller->sendMessage(text);
    if (!sent) return;
    m_input->clear();
    cancelEdit();
}

void ChatPanel::beginEdit(int index) {
    const auto& messages = m_controller->conversation().messages;
    if (index < 0 || index >= messages.size() || messages[index].role != QLatin1String("user")) return;
    m_editIndex = index;
    m_input->setPlainText(messages[index].content);
    m_editLabel->setText(tr("Editing message %1: send makes a new version of it (the old one stays: < > switches).").arg(index + 1));
    m_editLabel->setVisible(true);
    m_counter->setEditIndex(index);
    m_input->setFocus();
}

void ChatPanel::cancelEdit() {
    m_editIndex = -1;
    m_counter->setEditIndex(-1);
    m_editLabel->setVisible(false);
}

void ChatPanel::copyConversation() {
    QStringList out;
    const Conversation& c = m_controller->conversation();
    if (!c.systemPrompt.isEmpty()) out << tr("System: %1").arg(c.systemPrompt);
    for (const ChatEntry& m : c.messages)
        out << (m.role == QLatin1String("user") ? tr("You: %1") : tr("Assistant: %1")).arg(m.content);
    QApplication::clipboard()->setText(out.join(QStringLiteral("\n\n")));
}

bool ChatPanel::isFollowing() const {
    const QScrollBar* bar = m_view->verticalScrollBar();
    return bar->value() >= bar->maximum() - 4;
}

void ChatPanel::scrollToEndIfFollowing(bool following) {
    if (following) m_view->verticalScrollBar()->setValue(m_view->verticalScrollBar()->maximum());
}

void ChatPanel::handleConversationReset() {
    m_document->clearRawText();
    m_document->rebuild(m_controller->conversation());
    scrollToEndIfFollowing(true);
}

void ChatPanel::handleMessageAppended(int index) {
    const bool follow = isFollowing();
    m_document->appendMessage(m_controller->conversation(), index);
    scrollToEndIfFollowing(follow);
}

void ChatPanel::handleTokenAppended(int messageIndex, int tokenIndex) {
    const bool follow = isFollowing();
    m_document->appendToken(m_controller->conversation(), messageIndex, tokenIndex);
    scrollToEndIfFollowing(follow);
}

void ChatPanel::handleMessageFinished(int) {
    const bool follow = isFollowing();
    m_document->finishLastMessage(m_controller->conversation());
    scrollToEndIfFollowing(follow);
}

void ChatPanel::handleGeneratingChanged(bool generating) {
    m_stopButton->setEnabled(generating);
    m_sendButton->setEnabled(!generating);
    m_regenerateButton->setEnabled(!generating);
}

void ChatPanel::handleAnchorClicked(const QUrl& url) {
    int message = 0, token = 0;
    // A code block's Copy link: "copy:<message>:<block>".
    if (MarkdownBody::parseCopyHref(url.toString(), &message, &token)) copyCodeBlock(message, token);
    if (ChatDocument::parseTokenHref(url.toString(), &message, &token)) Q_EMIT tokenClicked(message, token);
    // The version switcher of a message: "branch:<message>:prev" or ":next".
    const QStringList branch = url.toString().split(QLatin1Char(':'));
    if (branch.size() == 3 && branch[0] == QLatin1String("branch")) {
        const int index = branch[1].toInt();
        const int step = branch[2] == QLatin1String("prev") ? -1 : 1;
        m_controller->selectVersion(index, m_controller->conversation().versionIndex(index) + step);
    }
}

void ChatPanel::handleContextMenu(const QPoint& pos) {
    const int index = m_document->messageAt(m_view->cursorForPosition(pos).position());
    const auto& messages = m_controller->conversation().messages;
    QMenu* menu = m_view->createStandardContextMenu(pos);
    menu->addSeparator();
    // A Markdown link's characters are their tokens' anchors (a click inspects them): the link opens here.
    const QString link = m_view->cursorForPosition(pos).charFormat().property(markdown_format::LinkHref).toString();
    if (!link.isEmpty()) {
        const QUrl url(link);
        if (url.scheme() == QLatin1String("http") || url.scheme() == QLatin1String("https"))
            menu->addAction(tr("Open link"), this, [url] { QDesktopServices::openUrl(url); });
        menu->addAction(tr("Copy link address"), this, [link] { QApplication::clipboard()->setText(link); });
    }
    if (index >= 0 && index < messages.size()) {
        const QString content = messages[index].content;
        menu->addAction(tr("Copy message"), this, [content] { QApplication::clipboard()->setText(content); });
        if (messages[index].role == QLatin1String("assistant")) {
            const bool raw = m_document->isRawText(index);
            menu->addAction(raw ? tr("Show formatted text") : tr("Show raw text"), this, [this, index, raw] { setRawText(index, !raw); });
            if (m_traceActions) {
                const bool idle = !m_controller->isGenerating();
                menu->addAction(tr("Export sampler trace…"), this, [this, index] { Q_EMIT exportTraceRequested(index); })
                    ->setEnabled(idle);
                menu->addAction(tr("Compare with another model…"), this, [this, index] { Q_EMIT compareRequested(index); })
                    ->setEnabled(idle);
            }
        }
        if (messages[index].role == QLatin1String("user"))
            menu->addAction(tr("Edit and resend…"), this, [this, index] { beginEdit(index); })
                ->setEnabled(!m_controller->isGenerating());
    }
    menu->addAction(tr("Regenerate last reply"), m_controller, &ChatController::regenerate)->setEnabled(!m_controller->isGenerating());
    menu->setAttribute(Qt::WA_DeleteOnClose);
    menu->popup(m_view->viewport()->mapToGlobal(pos));
}

void ChatPanel::showNotice(const QString& text) {
    m_noticeLabel->setText(text);
    m_noticeLabel->setVisible(true);
}

void ChatPanel::handleMessageRefused(const QString& text, const QString& reason) {
    // Nothing the user wrote is lost: the message goes back to the box (before anything typed since).
    if (!text.isEmpty()) {
        const QString now = m_input->toPlainText();
        if (now != text) m_input->setPlainText(now.isEmpty() ? text : text + QStringLiteral("\n") + now);
    }
    showNotice(reason);
}

void ChatPanel::setRawText(int index, bool raw) {
    m_document->setRawText(m_controller->conversation(), index, raw);
}

void ChatPanel::copyCodeBlock(int messageIndex, int blockIndex) {
    const auto& messages = m_controller->conversation().messages;
    if (messageIndex < 0 || messageIndex >= messages.size()) return;
    QApplication::clipboard()->setText(MarkdownBody::codeBlockText(messages[messageIndex].content, blockIndex));
}
