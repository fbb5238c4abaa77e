#include "serve_menu.h"

#include <QDialog>
#include <QDialogButtonBox>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QMainWindow>
#include <QMenu>
#include <QMenuBar>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QStatusBar>

ServeMenu::ServeMenu(ServeController* serve, QMainWindow* window)
    : QObject(window), m_serve(serve), m_window(window), m_pending(ServeSettings::load()) {
    m_menu = window->menuBar()->addMenu(tr("&Server"));
    m_toggle = m_menu->addAction(tr("Serve the loaded model"));
    m_toggle->setCheckable(true);
    m_toggle->setToolTip(tr("An OpenAI-compatible API (POST /v1/chat/completions) for editors and agents; "
                            "their requests appear as conversations"));
    m_settingsAction = m_menu->addAction(tr("Server settings…"), this, &ServeMenu::openSettings);
    m_label = new QLabel(window);
    m_label->setObjectName(QStringLiteral("serveLabel"));
    m_label->setTextInteractionFlags(Qt::TextSelectableByMouse);
    // Set apart from the status messages beside it: other programs are using the model.
    QFont bold = m_label->font();
    bold.setBold(true);
    m_label->setFont(bold);
    m_label->hide();
    window->statusBar()->addPermanentWidget(m_label);
    connect(m_toggle, &QAction::toggled, this, &ServeMenu::toggled);
    connect(m_serve, &ServeController::servingChanged, this, &ServeMenu::showState);
    connect(m_serve, &ServeController::stoppedBecause, this, &ServeMenu::problem);
}

void ServeMenu::toggled(bool on) {
    if (on == m_serve->isServing()) return;
    if (!on) {
        m_serve->stop();
        return;
    }
    QString error;
    if (m_serve->start(m_pending, &error)) {
        m_lastError.clear();
        return;
    }
    m_lastError = error;
    const QSignalBlocker block(m_toggle);
    m_toggle->setChecked(false);
    Q_EMIT problem(error);
}

void ServeMenu::showState(bool serving, const QString& address) {
    {
        const QSignalBlocker block(m_toggle);
        m_toggle->setChecked(serving);
    }
    m_label->setText(serving ? tr("Serving on %1").arg(address) : QString());
    m_label->setToolTip(serving ? tr("POST %1/v1/chat/completions; Server > Serve the loaded model turns it off").arg(address)
                                : QString());
    m_label->setVisible(serving);
}

void ServeMenu::openSettings() {
    auto* d = new QDialog(m_window);
    d->setObjectName(QStringLiteral("serveSettings"));
    d->setWindowTitle(tr("Server settings"));
    d->setAttribute(Qt::WA_DeleteOnClose);
    d->setWindowModality(Qt::WindowModal);
    // Wide enough for the key's placeholder and an address like 192.168.100.200 without cutting.
    d->setMinimumWidth(d->fontMetrics().averageCharWidth() * 60);
    auto* form = new QFormLayout(d);
    auto* host = new QLineEdit(m_pending.host, d);
    host->setObjectName(QStringLiteral("serveHost"));
    auto* port = new QSpinBox(d);
    port->setObjectName(QStringLiteral("servePort"));
    port->setRange(0, 65535);
    port->setSpecialValueText(tr("any free port"));
    port->setValue(m_pending.port);
    auto* key = new QLineEdit(m_pending.apiKey, d);
    key->setObjectName(QStringLiteral("serveKey"));
    key->setEchoMode(QLineEdit::PasswordEchoOnEdit);
    key->setPlaceholderText(tr("none (allowed on 127.0.0.1 only)"));
    form->addRow(tr("Host:"), host);
    form->addRow(tr("Port:"), port);
    form->addRow(tr("API key:"), key);
    auto* note = new QLabel(tr("Clients send the key as \"Authorization: Bearer KEY\"; it is kept in plain text in "
                               "the settings file. Changes apply the next time serving starts, and are saved once "
                               "it started."), d);
    note->setWordWrap(true);
    form->addRow(note);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, d);
    form->addRow(buttons);
    connect(buttons, &QDialogButtonBox::accepted, d, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, d, &QDialog::reject);
    connect(d, &QDialog::accepted, this, [this, host, port, key] {
        m_pending.host = host->text().trimmed();
        m_pending.port = port->value();
        m_pending.apiKey = key->text();
    });
    d->open();
}
