#include "token_inspector.h"

#include <cmath>

#include <QHash>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QSplitter>
#include <QTableWidget>
#include <QTreeWidget>
#include <QVBoxLayout>

#include <qcustomplot.h>

#include "attention_store.h"
#include "theme.h"

namespace {

// A probability as the table shows it; "—" where none was recorded (NaN: a remote engine's final p).
QString probabilityText(float p) {
    return std::isfinite(p) ? QString::number(double(p), 'f', 4) : QStringLiteral("—");
}

}  // namespace

TokenInspector::TokenInspector(AttentionStore* store, QWidget* parent) : QWidget(parent), m_store(store) {
    m_title = new QLabel(tr("Click a token of a reply to inspect it."), this);
    m_title->setWordWrap(true);
    m_title->setTextInteractionFlags(Qt::TextSelectableByMouse);

    m_candidates = new QTableWidget(0, 4, this);
    m_candidates->setHorizontalHeaderLabels({tr("token"), tr("id"), tr("p raw"), tr("p final")});
    m_candidates->horizontalHeader()->setSectionResizeMode(0, QHeaderView::Stretch);
    m_candidates->verticalHeader()->setVisible(false);
    m_candidates->verticalHeader()->setDefaultSectionSize(fontMetrics().height() + 4);
    m_candidates->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_candidates->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_candidates->setSelectionMode(QAbstractItemView::SingleSelection);
    m_forkButton = new QPushButton(tr("Continue with this token"), this);
    m_forkButton->setToolTip(tr("A new version of the reply: the same up to here, then the selected candidate, "
                                "and the model goes on from it (double-click a candidate does the same)"));

    m_trace = new QTreeWidget(this);
    m_trace->setHeaderLabels({tr("sampler stage"), tr("kept"), tr("what it did"), tr("best after the stage")});
    m_trace->setRootIsDecorated(false);
    // The stage, what it kept and its own account at full width; the best tokens take what is left.
    for (int c = 0; c < 3; ++c) m_trace->header()->setSectionResizeMode(c, QHeaderView::ResizeToContents);
    m_candidates->setAccessibleName(tr("Candidates of the selected token"));
    m_trace->setAccessibleName(tr("Sampler stages of the selected token"));

    m_attentionNote = new QLabel(this);
    m_attentionNote->setWordWrap(true);
    m_attentionPlot = new QCustomPlot(this);
    m_attentionPlot->setMinimumHeight(fontMetrics().height() * 6);
    m_attentionPlot->setAccessibleName(tr("Attention of the selected token"));
    m_attentionBars = new QCPBars(m_attentionPlot->xAxis, m_attentionPlot->yAxis);
    m_attentionBars->setPen(Qt::NoPen);
    m_attentionPlot->xAxis->setTicker(QSharedPointer<QCPAxisTickerText>(new QCPAxisTickerText));
    m_attentionPlot->xAxis->setTickLabelRotation(90);
    QFont tickFont = font();
    tickFont.setPointSizeF(std::max(6.0, tickFont.pointSizeF() * 0.8));
    m_attentionPlot->xAxis->setTickLabelFont(tickFont);
    m_attentionPlot->yAxis->setLabel(tr("p"));
    m_attentionPlot->yAxis->ticker()->setTickCount(3);
    m_attentionPlot->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
    m_attentionPlot->axisRect()->setRangeZoom(Qt::Horizontal);
    m_attentionPlot->axisRect()->setRangeDrag(Qt::Horizontal);

    auto* attention = new QWidget(this);
    auto* al = new QVBoxLayout(attention);
    al->setContentsMargins(0, 0, 0, 0);
    al->addWidget(m_attentionNote);
    al->addWidget(m_attentionPlot, 1);
    auto* split = new QSplitter(Qt::Vertical, this);
    split->addWidget(m_candidates);
    split->addWidget(m_trace);
    split->addWidget(attention);
    split->setSizes({160, 130, 200});
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addWidget(m_title);
    auto* forkRow = new QHBoxLayout;
    forkRow->addStretch(1);
    forkRow->addWidget(m_forkButton);
    layout->addLayout(forkRow);
    layout->addWidget(split, 1);

    connect(m_store, &AttentionStore::rowsChanged, this, [this](int layer) {
        if (layer == m_layer && m_hasToken) refreshAttention();
    });
    connect(m_candidates, &QTableWidget::currentCellChanged, this, &TokenInspector::updateForkButton);
    connect(m_candidates, &QTableWidget::cellDoubleClicked, this, &TokenInspector::forkWithSelected);
    connect(m_forkButton, &QPushButton::clicked, this, &TokenInspector::forkWithSelected);
    connect(ThemeNotifier::instance(), &ThemeNotifier::themeChanged, this, &TokenInspector::applyTheme);
    applyTheme();
    clear();
}

void TokenInspector::applyTheme() {
    m_attentionBars->setBrush(Theme::color(Theme::Role::FinalSeries));
    Theme::stylePlot(m_attentionPlot);
    // The probability backgrounds of the candidate table are baked into its items.
    if (m_hasToken) setToken(m_token);
}

QString TokenInspector::headline() const {
    return m_title->text();
}

void TokenInspector::clear() {
    m_hasToken = false;
    m_messageIndex = m_tokenIndex = -1;
    m_title->setText(tr("Click a token of a reply to inspect it."));
    m_candidates->setRowCount(0);
    m_trace->clear();
    m_attentionBars->data()->clear();
    m_attentionNote->setText(QString());
    m_attentionPlot->replot(QCustomPlot::rpQueuedReplot);
    updateForkButton();
}

void TokenInspector::setToken(const TokenRecord& token, int messageIndex, int tokenIndex) {
    setToken(token);
    m_messageIndex = messageIndex;
    m_tokenIndex = tokenIndex;
    updateForkButton();
}

void TokenInspector::updateForkButton() {
    const int row = m_candidates->currentRow();
    // A negative id is a remote engine's token (remote_reply.h): a server cannot be given a token to go on from.
    const bool other = m_hasToken && row >= 0 && row < int(m_token.candidates.size()) && m_token.candidates[size_t(row)].id != m_token.id &&
                       m_token.candidates[size_t(row)].id >= 0;
    m_forkButton->setEnabled(other && m_messageIndex >= 0);
}

void TokenInspector::forkWithSelected() {
    const int row = m_candidates->currentRow();
    if (!m_hasToken || m_messageIndex < 0 || row < 0 || row >= int(m_token.candidates.size())) return;
    if (m_token.candidates[size_t(row)].id == m_token.id) return;
    Q_EMIT forkRequested(m_messageIndex, m_tokenIndex, m_token.candidates[size_t(row)].id);
}

void TokenInspector::setToken(const TokenRecord& token) {
    m_token = token;
    m_hasToken = true;
    m_messageIndex = m_tokenIndex = -1;
    // The token's own text: the reply may hold it back (part of a stop string or of a typed marker), so
    // the text it added can be empty or differ.
    const QString own = token.tokenPiece.isEmpty() ? token.piece : token.tokenPiece;
    QString title = tr("%1 · id %2 · position %3 · p = %4")
                        .arg(quotedPiece(own), token.id < 0 ? QStringLiteral("—") : QString::number(token.id))
                        .arg(token.position)
                        .arg(probabilityText(token.p));
    if (own != token.piece) title += tr(" · added %1 to the reply").arg(quotedPiece(token.piece));
    if (token.entropy > 0) title += tr(" · entropy %1 nats").arg(double(token.entropy), 0, 'f', 3);
    m_title->setText(title);

    m_candidates->setRowCount(int(token.candidates.size()));
    for (int i = 0; i < int(token.candidates.size()); ++i) {
        const wb::TokenCandidate& c = token.candidates[size_t(i)];
        auto* name = new QTableWidgetItem(quotedPiece(QString::fromStdString(c.piece)));
        // A remote engine's tokens have no id and no final p (remote_reply.h): a dash, not a number.
        auto* id = new QTableWidgetItem(c.id < 0 ? QStringLiteral("—") : QString::number(c.id));
        auto* raw = new QTableWidgetItem(probabilityText(c.p_raw));
        auto* fin = new QTableWidgetItem(probabilityText(c.p_final));
        if (std::isfinite(c.p_raw)) raw->setBackground(Theme::probabilityColor(c.p_raw));
        if (c.id == token.id) {
            QFont bold = name->font();
            bold.setBold(true);
            for (auto* item : {name, id, raw, fin}) item->setFont(bold);
        }
        m_candidates->setItem(i, 0, name);
        m_candidates->setItem(i, 1, id);
        m_candidates->setItem(i, 2, raw);
        m_candidates->setItem(i, 3, fin);
    }
    m_trace->clear();
    // Candidate texts by id, for the stages' best tokens (the trace itself records ids).
    QHash<int, QString> text;
    for (const wb::TokenCandidate& c : token.candidates) text.insert(c.id, quotedPiece(QString::fromStdString(c.piece)));
    for (const wb::SamplerStageTrace& s : token.trace) {
        QStringList best;
        for (size_t i = 0; i < s.top_after.size() && i < 5; ++i) {
            const int id = s.top_after[i].id;
            best << QStringLiteral("%1 %2").arg(text.value(id, QStringLiteral("#%1").arg(id))).arg(double(s.top_after[i].p), 0, 'f', 3);
        }
        // The stage's own account of what it did (its threshold, what it found), as the engine wrote it.
        QString detail = QString::fromStdString(s.detail);
        // Where the stage compared logits (min-p, top-nσ), the probability it cut at in what it saw.
        if (std::isfinite(s.p_cutoff)) detail += tr(" · cut-off p = %1").arg(s.p_cutoff, 0, 'g', 3);
        auto* item = new QTreeWidgetItem({QString::fromStdString(s.stage), QStringLiteral("%1 → %2").arg(s.n_before).arg(s.n_after),
                                          detail, best.join(QStringLiteral(", "))});
        item->setToolTip(2, detail);
        m_trace->addTopLevelItem(item);
    }
    // Only a remote engine's tokens have no id (remote_reply.h): its server reports neither.
    if (token.id < 0)
        m_trace->addTopLevelItem(new QTreeWidgetItem({tr("(a remote engine reports no sampler stages)")}));
    else if (token.candidates.empty() && token.trace.empty())
        m_trace->addTopLevelItem(new QTreeWidgetItem({tr("(no candidates or trace were captured for this token)")}));
    refreshAttention();
}

void TokenInspector::setAttentionSelection(int layer, int head) {
    m_layer = layer;
    m_head = head;
    if (m_hasToken) refreshAttention();
}

void TokenInspector::refreshAttention() {
    // The token was chosen from the logits of the step whose query was the position before it.
    const int query = m_token.position - 1;
    const std::vector<float>* row = m_hasToken ? m_store->row(m_layer, m_head, query) : nullptr;
    QVector<double> keys, values;
    auto ticker = qSharedPointerDynamicCast<QCPAxisTickerText>(m_attentionPlot->xAxis->ticker());
    ticker->clear();
    if (row) {
        const int stride = std::max(1, int(row->size()) / 40);
        for (int k = 0; k < int(row->size()); ++k) {
            keys << k;
            values << (*row)[size_t(k)];
            if (k % stride == 0) ticker->addTick(k, m_store->tokenLabel(k));
        }
        m_attentionNote->setText(tr("Attention of layer %1, head %2 at the step that chose it (query position %3)").arg(m_layer).arg(m_head).arg(query));
    } else if (m_hasToken && m_token.id < 0) {
        m_attentionNote->setText(tr("A remote engine does not expose its attention."));
    } else if (m_hasToken) {
        m_attentionNote->setText(tr("No attention row captured for layer %1, head %2 at position %3.").arg(m_layer).arg(m_head).arg(query));
    }
    m_attentionBars->setData(keys, values, true);
    // No empty axes for a remote token: there is nothing that could be drawn there.
    m_attentionPlot->setVisible(!(m_hasToken && m_token.id < 0));
    m_attentionPlot->xAxis->setRange(-0.5, std::max<double>(1, double(keys.size())) - 0.5);
    double top = 0.0;
    for (double v : values) top = std::max(top, v);
    m_attentionPlot->yAxis->setRange(0, std::max(0.05, top * 1.1));
    m_attentionPlot->replot(QCustomPlot::rpQueuedReplot);
}
