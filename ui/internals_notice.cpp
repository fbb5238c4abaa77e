#include "internals_notice.h"

#include <QEvent>
#include <QLabel>
#include <QWidget>

InternalsNotice::InternalsNotice(QWidget* panel, const QString& what) : QObject(panel), m_panel(panel), m_what(what) {
    m_label = new QLabel(panel);
    m_label->setObjectName(QStringLiteral("internalsNotice"));
    m_label->setWordWrap(true);
    m_label->setAlignment(Qt::AlignCenter);
    m_label->setMargin(fontMargin(panel));
    // Opaque, in the window's colours: nothing of the panel shows through.
    m_label->setAutoFillBackground(true);
    m_label->setBackgroundRole(QPalette::Window);
    m_label->hide();
    panel->installEventFilter(this);
}

int InternalsNotice::fontMargin(const QWidget* w) {
    return w->fontMetrics().height();
}

void InternalsNotice::setRemote(bool remote, const QString& server) {
    if (!remote) {
        m_label->hide();
        return;
    }
    m_label->setText(tr("Replies come from a remote engine%1, which does not expose %2. Load a local model "
                        "(File > Open model…) to see them.")
                         .arg(server.isEmpty() ? QString() : tr(" (%1)").arg(server), m_what));
    m_label->setGeometry(m_panel->rect());
    m_label->raise();
    m_label->show();
}

bool InternalsNotice::isShown() const {
    return !m_label->isHidden();
}

QString InternalsNotice::text() const {
    return m_label->text();
}

bool InternalsNotice::eventFilter(QObject* watched, QEvent* event) {
    // Follows the panel's size; raised again when the panel adds children of its own.
    if (watched == m_panel && (event->type() == QEvent::Resize || event->type() == QEvent::ChildAdded) && isShown()) {
        m_label->setGeometry(m_panel->rect());
        m_label->raise();
    }
    return QObject::eventFilter(watched, event);
}
