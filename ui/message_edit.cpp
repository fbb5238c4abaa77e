#include "message_edit.h"

#include <QKeyEvent>

MessageEdit::MessageEdit(QWidget* parent) : QPlainTextEdit(parent) {
    setPlaceholderText(tr("Message (Enter sends, Shift+Enter for a new line)"));
    setTabChangesFocus(true);
}

void MessageEdit::keyPressEvent(QKeyEvent* event) {
    const bool enter = event->key() == Qt::Key_Return || event->key() == Qt::Key_Enter;
    if (enter && !(event->modifiers() & Qt::ShiftModifier)) {
        Q_EMIT sendRequested();
        event->accept();
        return;
    }
    QPlainTextEdit::keyPressEvent(event);
}
