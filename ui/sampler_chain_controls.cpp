#include "sampler_chain_controls.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <QComboBox>
#include <QFont>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QPushButton>
#include <QSignalBlocker>
#include <QVBoxLayout>

#include "param_control.h"
#include "sampling/sampler.h"
#include "theme.h"

namespace {

// Splits at commas outside quotes.
QStringList splitEntries(const QString& text) {
    QStringList out;
    QString cur;
    QChar quote;
    for (QChar c : text) {
        if (!quote.isNull()) {
            if (c == quote) quote = QChar();
        } else if (c == QLatin1Char('\'') || c == QLatin1Char('"')) {
            quote = c;
        } else if (c == QLatin1Char(',')) {
            out << cur;
            cur.clear();
            continue;
        }
        cur += c;
    }
    out << cur;
    return out;
}

bool parseBiasValue(const QString& s, float* bias) {
    const QString v = s.trimmed().toLower();
    if (v == QLatin1String("-inf")) {
        *bias = -std::numeric_limits<float>::infinity();
        return true;
    }
    bool ok = false;
    const double d = v.toDouble(&ok);
    if (!ok || !std::isfinite(d)) return false;
    *bias = float(d);
    return true;
}

}  // namespace

bool parseLogitBias(const QString& text, const TokenEncoder& encode, std::vector<wb::LogitBias>* out, QString* error) {
    std::vector<wb::LogitBias> biases;
    for (const QString& raw : splitEntries(text)) {
        const QString entry = raw.trimmed();
        if (entry.isEmpty()) continue;
        // The bias follows the last '=' (a quoted text may hold one).
        const int eq = int(entry.lastIndexOf(QLatin1Char('=')));
        float bias = 0.0f;
        if (eq <= 0 || !parseBiasValue(entry.mid(eq + 1), &bias)) {
            *error = QObject::tr("'%1': write KEY=BIAS, a number or -inf after the =").arg(entry);
            return false;
        }
        QString key = entry.left(eq).trimmed();
        bool isId = false;
        const int id = key.toInt(&isId);
        if (isId) {
            if (id < 0) {
                *error = QObject::tr("'%1': token ids are >= 0").arg(entry);
                return false;
            }
            biases.push_back({id, bias});
            continue;
        }
        if (key.size() >= 2 && (key.front() == QLatin1Char('\'') || key.front() == QLatin1Char('"')) && key.back() == key.front())
            key = key.mid(1, key.size() - 2);
        std::vector<int32_t> ids;
        QString why;
        if (!encode) {
            *error = QObject::tr("'%1': a text needs a loaded model to find its tokens").arg(entry);
            return false;
        }
        if (!encode(key, &ids, &why) || ids.empty()) {
            *error = QObject::tr("'%1': %2").arg(entry, why.isEmpty() ? QObject::tr("the text encodes to no token") : why);
            return false;
        }
        // As llama.cpp's server does for a text key: every token it encodes to.
        for (int32_t t : ids) biases.push_back({t, bias});
    }
    *out = std::move(biases);
    return true;
}

QString formatLogitBias(const std::vector<wb::LogitBias>& biases) {
    QStringList parts;
    for (const wb::LogitBias& b : biases) {
        const QString v = std::isinf(b.bias) ? QStringLiteral("-inf") : (b.bias >= 0 ? QStringLiteral("+") : QString()) + QString::number(double(b.bias));
        parts << QStringLiteral("%1=%2").arg(b.token).arg(v);
    }
    return parts.join(QStringLiteral(", "));
}

std::vector<std::string> parseBreakers(const QString& text) {
    std::vector<std::string> out;
    for (QString s : text.split(QLatin1Char('|'), Qt::SkipEmptyParts)) {
        s.replace(QStringLiteral("\\n"), QStringLiteral("\n"));
        out.push_back(s.toStdString());
    }
    return out;
}

QString formatBreakers(const std::vector<std::string>& breakers) {
    QStringList parts;
    for (const auto& s : breakers) parts << QString::fromStdString(s).replace(QLatin1Char('\n'), QStringLiteral("\\n"));
    return parts.join(QLatin1Char('|'));
}

SamplerChainControls::SamplerChainControls(QWidget* parent, QFormLayout* form, const MakeControl& make)
    : QObject(parent), m_parent(parent), m_form(form) {
    addSection(tr("DRY (against repeated phrases)"));
    make(QStringLiteral("dry_multiplier"), tr("DRY multiplier"), 0, 5, 0.01, 2,
         tr("penalty = multiplier x base^(repeat length - allowed length) on the token that would extend a repeat; 0 = off"));
    make(QStringLiteral("dry_base"), tr("DRY base"), 1, 4, 0.01, 2, tr("how fast the penalty grows with the repeat's length"));
    make(QStringLiteral("dry_allowed_length"), tr("DRY allowed length"), 0, 20, 1, 0, tr("repeats up to this many tokens are not penalised"));
    make(QStringLiteral("dry_penalty_last_n"), tr("DRY window"), -1, 4096, 1, 0, tr("tokens DRY scans for repeats; 0 = off, -1 = the whole context"));
    m_breakers = new QLineEdit(parent);
    m_breakers->setToolTip(tr("texts that end a repeat (a new line, punctuation), separated by |; \\n is a new line"));
    m_breakers->setAccessibleName(tr("DRY sequence breakers"));
    m_form->addRow(tr("DRY breakers"), m_breakers);
    // llama.cpp's server refuses every request with an empty breaker list, so none is sent.
    m_breakersRemote = new QLabel(tr("The remote engine cannot be sent \"no breakers\": the server's default "
                                     "breakers apply."),
                                  parent);
    m_breakersRemote->setObjectName(QStringLiteral("breakersRemoteNote"));
    m_breakersRemote->setWordWrap(true);
    m_breakersRemote->hide();
    Theme::setTextColor(m_breakersRemote, Theme::Role::Warning);
    m_form->addRow(QString(), m_breakersRemote);

    addSection(tr("XTC (exclude the top choices)"));
    make(QStringLiteral("xtc_probability"), tr("XTC probability"), 0, 1, 0.01, 2,
         tr("chance per token that the likely tokens above the threshold, except the least likely of them, are removed; 0 = off"));
    make(QStringLiteral("xtc_threshold"), tr("XTC threshold"), 0, 1, 0.01, 2, tr("tokens with p >= threshold count as top choices; above 0.5 = off"));

    addSection(tr("Top-nσ and Mirostat"));
    make(QStringLiteral("top_n_sigma"), tr("Top-nσ"), -1, 10, 0.01, 2, tr("keep tokens whose logit is within n standard deviations of the best; <= 0 = off"));
    m_mirostat = new QComboBox(parent);
    m_mirostat->addItem(tr("off"), 0);
    m_mirostat->addItem(tr("Mirostat 1"), 1);
    m_mirostat->addItem(tr("Mirostat 2"), 2);
    m_mirostat->setToolTip(tr("steer the surprise of each token towards tau; replaces the order below (temperature still applies)"));
    m_mirostat->setAccessibleName(tr("Mirostat mode"));
    m_form->addRow(tr("Mirostat"), m_mirostat);
    make(QStringLiteral("mirostat_tau"), tr("Mirostat tau"), 0, 10, 0.01, 2, tr("target surprise (bits)"));
    make(QStringLiteral("mirostat_eta"), tr("Mirostat eta"), 0, 1, 0.01, 2, tr("learning rate"));

    addSection(tr("Logit bias and order"));
    m_bias = new QLineEdit(parent);
    m_bias->setPlaceholderText(tr("e.g. 'Paris'=-inf, 13=+2"));
    m_bias->setToolTip(tr("KEY=BIAS entries separated by commas: KEY a token id or a quoted text (all its tokens), "
                          "BIAS added to the logit; -inf bans the token"));
    m_bias->setAccessibleName(tr("Logit bias"));
    m_biasError = new QLabel(parent);
    m_biasError->setWordWrap(true);
    m_biasError->hide();
    Theme::setTextColor(m_biasError, Theme::Role::Error);
    auto* biasBox = new QVBoxLayout;
    biasBox->setContentsMargins(0, 0, 0, 0);
    biasBox->addWidget(m_bias);
    biasBox->addWidget(m_biasError);
    m_form->addRow(tr("Logit bias"), biasBox);

    m_order = new QListWidget(parent);
    m_order->setDragDropMode(QAbstractItemView::InternalMove);
    m_order->setDefaultDropAction(Qt::MoveAction);
    m_order->setToolTip(tr("the stages run top to bottom; untick a stage to leave it out (drag, or Up / Down)"));
    m_order->setAccessibleName(tr("Sampler order"));
    m_order->setMaximumHeight(m_order->fontMetrics().height() * 10);
    m_up = new QPushButton(tr("Up"), parent);
    m_down = new QPushButton(tr("Down"), parent);
    m_up->setAccessibleName(tr("Move the stage up"));
    m_down->setAccessibleName(tr("Move the stage down"));
    auto* buttons = new QVBoxLayout;
    buttons->addWidget(m_up);
    buttons->addWidget(m_down);
    buttons->addStretch(1);
    auto* orderRow = new QHBoxLayout;
    orderRow->setContentsMargins(0, 0, 0, 0);
    orderRow->addWidget(m_order, 1);
    orderRow->addLayout(buttons);
    m_form->addRow(tr("Order"), orderRow);

    connect(m_breakers, &QLineEdit::textChanged, this, [this] {
        updateBreakersNote();
        if (!m_filling) Q_EMIT changed();
    });
    connect(m_mirostat, &QComboBox::currentIndexChanged, this, [this] {
        if (!m_filling) Q_EMIT changed();
    });
    connect(m_bias, &QLineEdit::textChanged, this, [this] {
        if (!m_filling) parseBias();
    });
    // A drag ends in rowsMoved; a tick in itemChanged.
    connect(m_order->model(), &QAbstractItemModel::rowsMoved, this, [this] {
        if (!m_filling) Q_EMIT changed();
    });
    connect(m_order, &QListWidget::itemChanged, this, [this] {
        if (!m_filling) Q_EMIT changed();
    });
    connect(m_up, &QPushButton::clicked, this, [this] { moveCurrent(-1); });
    connect(m_down, &QPushButton::clicked, this, [this] { moveCurrent(+1); });
}

void SamplerChainControls::setRemote(bool remote) {
    m_remote = remote;
    updateBreakersNote();
}

void SamplerChainControls::updateBreakersNote() {
    m_breakersRemote->setVisible(m_remote && parseBreakers(m_breakers->text()).empty());
}

void SamplerChainControls::addSection(const QString& title) {
    auto* label = new QLabel(title, m_parent);
    label->setWordWrap(true);  // never what sets the panel's width
    QFont bold = label->font();
    bold.setBold(true);
    label->setFont(bold);
    m_form->addRow(label);
}

void SamplerChainControls::read(wb::SamplingParams& p) const {
    auto v = [this](const char* name) { return m_parent->findChild<ParamControl*>(QLatin1String(name))->value(); };
    p.dry_multiplier = float(v("dry_multiplier"));
    p.dry_base = float(v("dry_base"));
    p.dry_allowed_length = int(v("dry_allowed_length"));
    p.dry_penalty_last_n = int(v("dry_penalty_last_n"));
    p.dry_sequence_breakers = parseBreakers(m_breakers->text());
    p.xtc_probability = float(v("xtc_probability"));
    p.xtc_threshold = float(v("xtc_threshold"));
    p.top_n_sigma = float(v("top_n_sigma"));
    p.mirostat = m_mirostat->currentData().toInt();
    p.mirostat_tau = float(v("mirostat_tau"));
    p.mirostat_eta = float(v("mirostat_eta"));
    p.logit_bias = m_biases;
    p.samplers = order();
}

void SamplerChainControls::fill(const wb::SamplingParams& p) {
    m_filling = true;
    auto set = [this](const char* name, double value) { m_parent->findChild<ParamControl*>(QLatin1String(name))->setValue(value); };
    set("dry_multiplier", p.dry_multiplier);
    set("dry_base", p.dry_base);
    set("dry_allowed_length", p.dry_allowed_length);
    set("dry_penalty_last_n", p.dry_penalty_last_n);
    m_breakers->setText(formatBreakers(p.dry_sequence_breakers));
    set("xtc_probability", p.xtc_probability);
    set("xtc_threshold", p.xtc_threshold);
    set("top_n_sigma", p.top_n_sigma);
    m_mirostat->setCurrentIndex(std::max(0, m_mirostat->findData(p.mirostat)));
    set("mirostat_tau", p.mirostat_tau);
    set("mirostat_eta", p.mirostat_eta);
    // The field keeps what the user typed (text keys) while the biases it gave are the ones set.
    const auto same = [](const std::vector<wb::LogitBias>& a, const std::vector<wb::LogitBias>& b) {
        return std::equal(a.begin(), a.end(), b.begin(), b.end(),
                          [](const wb::LogitBias& x, const wb::LogitBias& y) { return x.token == y.token && x.bias == y.bias; });
    };
    if (!same(p.logit_bias, m_biases) || m_bias->text().isEmpty()) {
        m_biases = p.logit_bias;
        m_bias->setText(formatLogitBias(p.logit_bias));
        m_biasError->hide();
    }
    fillOrder(p.samplers);
    m_filling = false;
}

void SamplerChainControls::fillOrder(const std::vector<std::string>& sequence) {
    m_order->clear();
    // The sequence's stages first, ticked, in its order; then the known stages it leaves out, unticked.
    std::vector<std::string> all = sequence;
    for (const std::string& name : wb::default_sampler_sequence())
        if (std::find(all.begin(), all.end(), name) == all.end()) all.push_back(name);
    for (size_t i = 0; i < all.size(); ++i) {
        auto* item = new QListWidgetItem(QString::fromStdString(all[i]), m_order);
        item->setFlags(Qt::ItemIsEnabled | Qt::ItemIsSelectable | Qt::ItemIsUserCheckable | Qt::ItemIsDragEnabled);
        item->setCheckState(i < sequence.size() ? Qt::Checked : Qt::Unchecked);
    }
}

std::vector<std::string> SamplerChainControls::order() const {
    std::vector<std::string> out;
    for (int i = 0; i < m_order->count(); ++i)
        if (m_order->item(i)->checkState() == Qt::Checked) out.push_back(m_order->item(i)->text().toStdString());
    return out;
}

void SamplerChainControls::moveCurrent(int by) {
    const int row = m_order->currentRow();
    const int to = row + by;
    if (row < 0 || to < 0 || to >= m_order->count()) return;
    {
        const QSignalBlocker block(m_order->model());
        QListWidgetItem* item = m_order->takeItem(row);
        m_order->insertItem(to, item);
        m_order->setCurrentRow(to);
    }
    Q_EMIT changed();
}

QString SamplerChainControls::logitBiasText() const {
    return m_bias->text();
}

void SamplerChainControls::setLogitBiasText(const QString& text) {
    m_filling = true;
    m_bias->setText(text);
    m_filling = false;
}

void SamplerChainControls::setTokenEncoder(TokenEncoder encode) {
    m_encode = std::move(encode);
}

void SamplerChainControls::reencode() {
    // The last valid biases were the previous vocabulary's ids: none stays in force when the field no
    // longer reads (a text key with no model to encode it, as with a remote engine, which would
    // otherwise be sent another model's ids). The field keeps its text for the next model.
    if (!parseBias() && !m_biases.empty()) {
        m_biases.clear();
        Q_EMIT changed();
    }
}

bool SamplerChainControls::parseBias() {
    std::vector<wb::LogitBias> biases;
    QString error;
    if (!parseLogitBias(m_bias->text(), m_encode, &biases, &error)) {
        // While typing, the last valid biases stay in force (and in the settings).
        m_biasError->setText(error);
        m_biasError->show();
        return false;
    }
    m_biasError->hide();
    m_biases = std::move(biases);
    Q_EMIT logitBiasAccepted(m_bias->text());
    Q_EMIT changed();
    return true;
}
