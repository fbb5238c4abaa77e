#pragma once
// The message box: Enter sends, Shift+Enter inserts a new line (the chat convention users expect).
#include <QPlainTextEdit>

class MessageEdit : public QPlainTextEdit {
    Q_OBJECT

public:
    explicit MessageEdit(QWidget* parent = nullptr);

Q_SIGNALS:
    void sendRequested();

protected:
    void keyPressEvent(QKeyEvent* event) override;
};
