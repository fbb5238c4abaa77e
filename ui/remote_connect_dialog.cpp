#include "remote_connect_dialog.h"

#include <QDialogButtonBox>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QVBoxLayout>

RemoteConnectDialog::RemoteConnectDialog(const AppSettings::RemoteEngine& last, QWidget* parent) : QDialog(parent) {
    setObjectName(QStringLiteral("remoteConnectDialog"));
    setWindowTitle(tr("Connect to server"));
    m_url = new QLineEdit(last.url, this);
    m_url->setPlaceholderText(QStringLiteral("http://127.0.0.1:8080"));
    m_key = new QLineEdit(last.apiKey, this);
    m_key->setEchoMode(QLineEdit::Password);
    m_key->setPlaceholderText(tr("none"));
    m_model = new QLineEdit(last.model, this);
    m_model->setPlaceholderText(tr("the first model the server lists"));
    auto* intro = new QLabel(tr("Chat with a model served by any OpenAI-compatible engine: another WhiteBox "
                                "(<tt>whitebox-cli serve</tt>), llama-server, vLLM, Ollama, LM Studio. The token "
                                "inspector and the distribution plot show the server's top 20 logprobs; attention, "
                                "the KV cache, the logit lens and head statistics stay with local models."),
                             this);
    intro->setWordWrap(true);
    // Said before anything is kept: the key lands in the settings file like every other setting.
    auto* kept = new QLabel(tr("The address, the API key and the model name are kept in the app's settings file "
                               "(plain text, like every setting) once the connection succeeds. A connection that "
                               "fails keeps nothing."),
                            this);
    kept->setWordWrap(true);
    auto* form = new QFormLayout;
    form->addRow(tr("Server address:"), m_url);
    form->addRow(tr("API key:"), m_key);
    form->addRow(tr("Model:"), m_model);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Cancel, this);
    m_connect = buttons->addButton(tr("Connect"), QDialogButtonBox::AcceptRole);
    m_connect->setDefault(true);
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(intro);
    layout->addLayout(form);
    layout->addWidget(kept);
    layout->addWidget(buttons);
    setMinimumWidth(fontMetrics().averageCharWidth() * 70);

    const auto updateButton = [this] { m_connect->setEnabled(!m_url->text().trimmed().isEmpty()); };
    connect(m_url, &QLineEdit::textChanged, this, updateButton);
    updateButton();
    connect(buttons, &QDialogButtonBox::accepted, this, [this] {
        const AppSettings::RemoteEngine e = engine();
        accept();
        Q_EMIT connectRequested(e.url, e.apiKey, e.model);
    });
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
}

AppSettings::RemoteEngine RemoteConnectDialog::engine() const {
    return {m_url->text().trimmed(), m_key->text().trimmed(), m_model->text().trimmed()};
}
