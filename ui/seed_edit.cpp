#include "seed_edit.h"

#include <QRegularExpressionValidator>

SeedEdit::SeedEdit(QWidget* parent) : QLineEdit(parent) {
    // 20 digits hold 2^64 - 1; the overflow check is in handleTextChanged.
    setValidator(new QRegularExpressionValidator(QRegularExpression(QStringLiteral("[0-9]{1,20}")), this));
    setText(QStringLiteral("0"));
    connect(this, &QLineEdit::textChanged, this, &SeedEdit::handleTextChanged);
}

void SeedEdit::setValue(quint64 value) {
    // Emits valueChanged when the value changes, as QSpinBox::setValue does.
    setText(QString::number(value));
}

void SeedEdit::handleTextChanged(const QString& text) {
    bool ok = false;
    const quint64 v = text.toULongLong(&ok);
    if (!ok || v == m_value) return;
    m_value = v;
    Q_EMIT valueChanged(v);
}
