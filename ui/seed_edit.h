#pragma once
// The sampling seed: any unsigned 64-bit value. A QSpinBox holds an int and would clamp a seed
// loaded from a conversation or the settings, and send the clamped value back on the next change.
#include <QLineEdit>

class SeedEdit : public QLineEdit {
    Q_OBJECT

public:
    explicit SeedEdit(QWidget* parent = nullptr);

    // The last valid number typed or set (text beyond 2^64 - 1 is not a seed and is not taken).
    quint64 value() const { return m_value; }
    void setValue(quint64 value);  // emits valueChanged when it changes, as QSpinBox does

Q_SIGNALS:
    void valueChanged(quint64 value);

private:
    void handleTextChanged(const QString& text);

    quint64 m_value = 0;
};
