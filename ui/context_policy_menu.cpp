#include "context_policy_menu.h"

#include <QAction>
#include <QActionGroup>
#include <QMenu>

#include "app_settings.h"
#include "chat_controller.h"
#include "model_summary.h"
#include "util/error.h"

ContextPolicyMenu::ContextPolicyMenu(ChatController* controller, QWidget* parent) : QObject(parent), m_controller(controller) {
    m_menu = new QMenu(tr("When the context is full"), parent);
    m_menu->setToolTipsVisible(true);
    m_group = new QActionGroup(this);
    const std::pair<wb::ContextPolicy, QString> items[] = {
        {wb::ContextPolicy::SHIFT, tr("Shift (keep the system prompt, drop the oldest half)")},
        {wb::ContextPolicy::TRIM, tr("Trim old turns")},
        {wb::ContextPolicy::STOP, tr("Stop")},
    };
    for (const auto& [policy, text] : items) {
        QAction* a = m_menu->addAction(text);
        a->setCheckable(true);
        a->setData(int(policy));
        m_group->addAction(a);
    }
    action(wb::ContextPolicy::TRIM)->setToolTip(tr("Drops whole old turns (never the system prompt) and recomputes the rest"));
    action(wb::ContextPolicy::STOP)->setToolTip(tr("Ends the reply; the chat then offers a shift or a trim to go on"));
    try {
        m_chosen = wb::parse_context_policy(AppSettings::contextPolicy().toStdString());
    } catch (const wb::Error& e) {
        m_savedProblem = tr("The saved context policy was not used (%1); Shift is used instead.").arg(QString::fromUtf8(e.what()));
    }
    connect(m_group, &QActionGroup::triggered, this, &ContextPolicyMenu::choose);
    applyEffective();
}

QAction* ContextPolicyMenu::action(wb::ContextPolicy policy) const {
    for (QAction* a : m_group->actions())
        if (a->data().toInt() == int(policy)) return a;
    return nullptr;
}

QString ContextPolicyMenu::refusal(wb::ContextPolicy policy) const {
    try {
        wb::check_context_policy(policy, m_typeK, m_nRot, m_headDim, m_backendName.toStdString(), m_backendShiftsK);
        return {};
    } catch (const wb::Error& e) {
        return QString::fromUtf8(e.what());
    }
}

void ContextPolicyMenu::applyEffective() {
    const QString shiftRefused = refusal(wb::ContextPolicy::SHIFT);
    QAction* shift = action(wb::ContextPolicy::SHIFT);
    shift->setEnabled(shiftRefused.isEmpty());
    shift->setToolTip(shiftRefused.isEmpty() ? tr("Keeps the system prompt, drops the oldest half of the rest and goes on "
                                                  "without recomputing (llama.cpp's context shift)")
                                             : tr("Not available: %1").arg(shiftRefused));
    const wb::ContextPolicy effective = refusal(m_chosen).isEmpty() ? m_chosen : wb::ContextPolicy::STOP;
    action(effective)->setChecked(true);
    m_controller->setContextPolicy(effective);
}

void ContextPolicyMenu::choose(QAction* a) {
    const auto policy = wb::ContextPolicy(a->data().toInt());
    const QString refused = refusal(policy);
    if (!refused.isEmpty()) {
        // Not applied, not saved: the tick goes back to what is in force.
        applyEffective();
        Q_EMIT message(tr("Not kept: %1").arg(refused));
        return;
    }
    m_chosen = policy;
    AppSettings::setContextPolicy(QString::fromLatin1(wb::context_policy_name(policy)));
    applyEffective();
}

void ContextPolicyMenu::handleModelLoaded(const ModelSummary& summary) {
    m_typeK = summary.kvTypeK;
    m_nRot = summary.nRot;
    m_headDim = summary.headDim;
    m_backendName = summary.backendName;
    m_backendShiftsK = summary.backendShiftsK;
    applyEffective();
    const QString refused = refusal(m_chosen);
    if (!refused.isEmpty())
        Q_EMIT message(tr("A full context stops with this cache (%1); your choice of %2 applies again with f16 keys.")
                           .arg(refused, QString::fromLatin1(wb::context_policy_name(m_chosen))));
}
