#pragma once
// The plain statement over a panel that draws the model's internals (attention, KV cache, logit
// lens, head statistics, the memory ledger) while replies come from a remote engine, which does not
// expose them: the panel is covered, so it shows neither an empty plot nor the last local model's.
// A label laid over the panel (not a page swapped in), so the panel and its dock stay as they are.
#include <QObject>
#include <QString>

class QLabel;
class QWidget;

class InternalsNotice : public QObject {
    Q_OBJECT

public:
    // what: the panel's subject, as in "The remote engine does not expose <what>."
    InternalsNotice(QWidget* panel, const QString& what);

    void setRemote(bool remote, const QString& server = {});
    bool isShown() const;
    QString text() const;
    QLabel* label() const { return m_label; }

protected:
    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    static int fontMargin(const QWidget* w);
    QWidget* m_panel;
    QString m_what;
    QLabel* m_label;
};
