#include "prompt_counter.h"

#include <QLabel>
#include <QPlainTextEdit>

#include "chat_controller.h"
#include "context_budget.h"
#include "theme.h"

namespace {
// Long enough that typing does not send a request per key, short enough to feel live.
constexpr int kPauseMs = 250;
}  // namespace

PromptCounter::PromptCounter(ChatController* controller, QPlainTextEdit* input, QLabel* label, QObject* parent)
    : QObject(parent), m_controller(controller), m_input(input), m_label(label) {
    m_pause.setSingleShot(true);
    m_pause.setInterval(kPauseMs);
    connect(&m_pause, &QTimer::timeout, this, &PromptCounter::countNow);
    connect(input, &QPlainTextEdit::textChanged, this, &PromptCounter::invalidate);
    connect(controller, &ChatController::promptCounted, this, &PromptCounter::handleCounted);
    connect(controller, &ChatController::conversationReset, this, &PromptCounter::invalidate);
    connect(controller, &ChatController::messageAppended, this, &PromptCounter::invalidate);
    connect(controller, &ChatController::messageFinished, this, &PromptCounter::invalidate);
    connect(controller, &ChatController::modelLoaded, this, &PromptCounter::invalidate);
    connect(ThemeNotifier::instance(), &ThemeNotifier::themeChanged, this, &PromptCounter::showCount);
    m_label->setAccessibleName(tr("Prompt tokens"));
    m_label->setToolTip(tr("Tokens of the prompt the next send builds (conversation, system prompt and this message) "
                           "against the context size"));
    m_label->clear();
}

void PromptCounter::setEditIndex(int index) {
    if (index == m_editIndex) return;
    m_editIndex = index;
    invalidate();
}

bool PromptCounter::fits() const {
    return context_budget::fits(m_tokens, m_contextSize);
}

void PromptCounter::invalidate() {
    m_fresh = false;
    m_changedSinceRequest = true;
    m_pause.start();
}

void PromptCounter::countNow() {
    m_pause.stop();
    if (m_inFlight) return;  // its answer asks again if the text changed meanwhile
    m_changedSinceRequest = false;
    m_inFlight = m_controller->countPrompt(m_input->toPlainText(), m_editIndex);
}

void PromptCounter::handleCounted(quint64 id, int tokens, int contextSize, const QString& error) {
    if (id != m_inFlight) return;
    m_inFlight = 0;
    if (m_changedSinceRequest) {  // counted what the box held before: ask for what it holds now
        countNow();
        return;
    }
    m_fresh = true;
    m_tokens = tokens;
    m_contextSize = contextSize;
    m_error = error;
    showCount();
    Q_EMIT counted();
}

void PromptCounter::showCount() {
    if (!m_error.isEmpty() || m_contextSize <= 0) {
        m_label->clear();
        return;
    }
    m_label->setText(context_budget::counterText(m_tokens, m_contextSize));
    if (fits()) m_label->setPalette(QPalette());  // the panel's own colours again
    else Theme::setTextColor(m_label, Theme::Role::Warning);
}
