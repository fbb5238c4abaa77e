#pragma once
// The notice under the conversation when a reply stopped because the context is full (policy Stop):
// what happened, and the ways on: "Shift and continue", "Trim old turns and continue" (the reply goes
// on from where it stopped, ChatController::continueAfterFullContext) and New chat. Nothing the user
// wrote is touched. Shift is disabled, with the engine's reason, when the loaded cache cannot shift.
#include <QFrame>

class ChatController;
class QLabel;
class QPushButton;

class ContextFullNotice : public QFrame {
    Q_OBJECT

public:
    ContextFullNotice(ChatController* controller, QWidget* parent = nullptr);

    QLabel* label() const { return m_label; }
    QPushButton* shiftButton() const { return m_shift; }
    QPushButton* trimButton() const { return m_trim; }
    QPushButton* newChatButton() const { return m_newChat; }

public Q_SLOTS:
    void showFor(int messageIndex);

private:
    void applyTheme();
    ChatController* m_controller;
    QLabel* m_label;
    QPushButton* m_shift;
    QPushButton* m_trim;
    QPushButton* m_newChat;
};
