#include "context_full_notice.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QVBoxLayout>

#include "chat_controller.h"
#include "engine/context_policy.h"
#include "theme.h"
#include "util/error.h"

ContextFullNotice::ContextFullNotice(ChatController* controller, QWidget* parent) : QFrame(parent), m_controller(controller) {
    setObjectName(QStringLiteral("contextFullNotice"));
    setFrameShape(QFrame::StyledPanel);
    m_label = new QLabel(this);
    m_label->setWordWrap(true);
    m_shift = new QPushButton(tr("Shift and continue"), this);
    m_shift->setToolTip(tr("Keeps the system prompt, drops the oldest half of the rest and goes on with this reply"));
    m_trim = new QPushButton(tr("Trim old turns and continue"), this);
    m_trim->setToolTip(tr("Drops whole old turns (never the system prompt), recomputes the rest and goes on with this reply"));
    m_newChat = new QPushButton(tr("New chat"), this);
    auto* buttons = new QHBoxLayout;
    buttons->addWidget(m_shift);
    buttons->addWidget(m_trim);
    buttons->addWidget(m_newChat);
    buttons->addStretch(1);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(6, 4, 6, 4);
    layout->addWidget(m_label);
    layout->addLayout(buttons);
    setVisible(false);
    const auto go = [this](wb::ContextPolicy how) {
        if (m_controller->continueAfterFullContext(how)) hide();
    };
    connect(m_shift, &QPushButton::clicked, this, [go] { go(wb::ContextPolicy::SHIFT); });
    connect(m_trim, &QPushButton::clicked, this, [go] { go(wb::ContextPolicy::TRIM); });
    connect(m_newChat, &QPushButton::clicked, this, [this] {
        hide();
        m_controller->newChat();
    });
    connect(controller, &ChatController::contextFull, this, &ContextFullNotice::showFor);
    connect(controller, &ChatController::generatingChanged, this, [this](bool on) { if (on) hide(); });
    connect(controller, &ChatController::conversationReset, this, &QWidget::hide);
    // The full context was the engine's in use: another one (a remote engine too) cannot go on with it,
    // nor can anything go on while it loads (continueAfterFullContext refuses both).
    connect(controller, &ChatController::aboutToLoad, this, &QWidget::hide);
    applyTheme();
    connect(ThemeNotifier::instance(), &ThemeNotifier::themeChanged, this, &ContextFullNotice::applyTheme);
}

void ContextFullNotice::applyTheme() {
    Theme::setTextColor(m_label, Theme::Role::Warning);
}

void ContextFullNotice::showFor(int messageIndex) {
    (void)messageIndex;  // always the last reply: the only one that can go on
    m_label->setText(tr("The context is full (%1 tokens): the reply stopped here. Your messages are kept; choose how to go on.")
                         .arg(m_controller->model().contextSize));
    QString refused;
    try {
        const ModelSummary& m = m_controller->model();
        wb::check_context_policy(wb::ContextPolicy::SHIFT, m.kvTypeK, m.nRot, m.headDim, m.backendName.toStdString(),
                                 m.backendShiftsK);
    } catch (const wb::Error& e) {
        refused = QString::fromUtf8(e.what());
    }
    m_shift->setEnabled(refused.isEmpty());
    if (!refused.isEmpty()) m_shift->setToolTip(tr("Not available: %1").arg(refused));
    show();
}
