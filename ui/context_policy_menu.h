#pragma once
// The "When the context is full" menu: Shift (keep the system prompt, drop the oldest half), Trim old
// turns, or Stop. The choice goes to the controller at once (from the next reply on) and is saved when
// it applies. Shift with a quantized key cache needs a rope over the whole head and a backend that can
// re-rope such keys (wb::check_context_policy; CUDA only f16 keys so far): where the loaded model, cache
// and backend cannot shift it is disabled, its tooltip says why, and a saved Shift waits (Stop is in
// force) until a model loads that can; the saved choice is not overwritten.
#include <QObject>
#include <QString>

#include "engine/context_policy.h"

class ChatController;
class QAction;
class QActionGroup;
class QMenu;
class QWidget;
struct ModelSummary;

class ContextPolicyMenu : public QObject {
    Q_OBJECT

public:
    ContextPolicyMenu(ChatController* controller, QWidget* parent);

    QMenu* menu() const { return m_menu; }
    QAction* action(wb::ContextPolicy policy) const;
    // The user's choice (saved), which may wait while the loaded cache cannot carry it out.
    wb::ContextPolicy chosen() const { return m_chosen; }
    // Why the saved choice was not used at start-up (an unknown name), or empty.
    QString savedProblem() const { return m_savedProblem; }

public Q_SLOTS:
    void handleModelLoaded(const ModelSummary& summary);

Q_SIGNALS:
    // A sentence for the status bar: a choice that could not apply, or a saved one that waits.
    void message(const QString& text);

private:
    void choose(QAction* action);
    // The chosen policy if the loaded cache can carry it out, else Stop; ticked and given to the controller.
    void applyEffective();
    // check_context_policy's refusal for the loaded cache, or empty.
    QString refusal(wb::ContextPolicy policy) const;

    ChatController* m_controller;
    QMenu* m_menu = nullptr;
    QActionGroup* m_group = nullptr;
    wb::ContextPolicy m_chosen = wb::ContextPolicy::SHIFT;
    wb::KvType m_typeK = wb::KvType::F16;  // of the loaded model's cache (f16 before any load)
    int m_nRot = 0, m_headDim = 0;          // of the loaded model's rope and heads (0 before any load)
    QString m_backendName;                  // of the loaded model's session, and whether it can shift m_typeK
    bool m_backendShiftsK = true;
    QString m_savedProblem;
};
