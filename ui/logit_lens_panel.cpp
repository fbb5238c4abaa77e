#include "logit_lens_panel.h"

#include <algorithm>

#include <QHeaderView>
#include <QLabel>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>

#include <qcustomplot.h>

#include "theme.h"

LogitLensPanel::LogitLensPanel(QWidget* parent) : QWidget(parent) {
    m_title = new QLabel(this);
    m_title->setWordWrap(true);
    m_title->setTextInteractionFlags(Qt::TextSelectableByMouse);

    m_table = new QTableWidget(0, FirstRankColumn + kTop, this);
    QStringList headers = {tr("layer"), tr("p drawn"), tr("entropy")};
    for (int r = 1; r <= kTop; ++r) headers << tr("#%1").arg(r);
    m_table->setHorizontalHeaderLabels(headers);
    m_table->horizontalHeaderItem(DrawnColumn)->setToolTip(tr("Probability this layer gives the token that was finally drawn"));
    m_table->horizontalHeaderItem(EntropyColumn)->setToolTip(tr("Entropy of this layer's next-token distribution (nats)"));
    m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    // A row leads to its layer's attention (the link between the lens and the attention view).
    connect(m_table, &QTableWidget::cellActivated, this, [this](int row, int) {
        if (const QTableWidgetItem* layer = m_table->item(row, LayerColumn)) Q_EMIT layerActivated(layer->data(ValueRole).toInt());
    });
    m_table->horizontalHeader()->setStretchLastSection(true);
    m_table->verticalHeader()->setVisible(false);
    m_table->verticalHeader()->setDefaultSectionSize(fontMetrics().height() + 4);
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setAccessibleName(tr("Logit lens: each layer's most likely next tokens"));

    m_plot = new QCustomPlot(this);
    m_plot->setMinimumHeight(fontMetrics().height() * 6);
    m_plot->setAccessibleName(tr("Logit lens: p of the drawn token and entropy by layer"));
    m_drawn = m_plot->addGraph(m_plot->xAxis, m_plot->yAxis);
    m_drawn->setName(tr("p drawn"));
    m_entropy = m_plot->addGraph(m_plot->xAxis, m_plot->yAxis2);
    m_entropy->setName(tr("entropy (nats)"));
    for (QCPGraph* g : {m_drawn, m_entropy}) g->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, 4));
    m_plot->xAxis->setLabel(tr("layer"));
    m_plot->yAxis->setLabel(tr("p drawn"));
    m_plot->yAxis->setRange(0, 1);
    m_plot->yAxis2->setVisible(true);
    m_plot->yAxis2->setLabel(tr("entropy"));
    QFont small = font();
    small.setPointSizeF(std::max(6.0, small.pointSizeF() * 0.85));
    Theme::legendBelow(m_plot, small);

    auto* split = new QSplitter(Qt::Vertical, this);
    split->addWidget(m_table);
    split->addWidget(m_plot);
    split->setSizes({300, 160});
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addWidget(m_title);
    layout->addWidget(split, 1);

    connect(ThemeNotifier::instance(), &ThemeNotifier::themeChanged, this, &LogitLensPanel::applyTheme);
    applyTheme();
    clear();
}

void LogitLensPanel::applyTheme() {
    Theme::stylePlot(m_plot);
    m_drawn->setPen(QPen(Theme::color(Theme::Role::FinalSeries), 2));
    m_entropy->setPen(QPen(Theme::color(Theme::Role::RawSeries), 2));
    // The probability backgrounds are baked into the items.
    if (m_hasToken) setToken(m_token);
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

QString LogitLensPanel::headline() const {
    return m_title->text();
}

void LogitLensPanel::clear() {
    m_hasToken = m_hasLens = false;
    m_token = TokenRecord();
    m_title->setText(tr("Click a token of a reply to see what each layer would have predicted (recorded while this panel is shown)."));
    m_table->setRowCount(0);
    m_drawn->data()->clear();
    m_entropy->data()->clear();
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void LogitLensPanel::setToken(const TokenRecord& token) {
    m_token = token;
    m_hasToken = true;
    const TokenInspection* in = token.inspection.get();
    m_hasLens = in && !in->lens.empty();
    const QString own = quotedPiece(token.tokenPiece.isEmpty() ? token.piece : token.tokenPiece);
    if (!m_hasLens) {
        m_title->setText(tr("%1 (position %2): no logit lens was recorded for it; the lens is recorded while this panel is shown.")
                             .arg(own)
                             .arg(token.position));
        m_table->setRowCount(0);
        m_drawn->data()->clear();
        m_entropy->data()->clear();
        m_plot->replot(QCustomPlot::rpQueuedReplot);
        return;
    }
    m_title->setText(tr("%1 · id %2 · position %3: each layer's next-token distribution (final norm and output "
                        "matrix on its residual stream)")
                         .arg(own)
                         .arg(token.id)
                         .arg(token.position));
    fillTable(token, *in);
    fillPlot(*in);
}

void LogitLensPanel::fillTable(const TokenRecord& token, const TokenInspection& in) {
    const int n = int(in.lens.size());
    m_table->setRowCount(n);
    auto valueItem = [](double v, int decimals) {
        auto* item = new QTableWidgetItem(QString::number(v, 'f', decimals));
        item->setData(ValueRole, v);
        item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
        return item;
    };
    for (int r = 0; r < n; ++r) {
        const wb::LensLayer& l = in.lens[size_t(r)];
        // The last layer's lens is the model's own output distribution.
        auto* layer = new QTableWidgetItem(r == n - 1 ? tr("%1 (output)").arg(l.layer) : QString::number(l.layer));
        layer->setData(ValueRole, l.layer);
        layer->setToolTip(tr("Double-click a row: layer %1's attention in the Attention panel").arg(l.layer));
        m_table->setItem(r, LayerColumn, layer);
        QTableWidgetItem* drawn = valueItem(double(l.p_drawn), 4);
        drawn->setBackground(Theme::probabilityColor(l.p_drawn));
        m_table->setItem(r, DrawnColumn, drawn);
        m_table->setItem(r, EntropyColumn, valueItem(double(l.entropy), 3));
        for (int k = 0; k < kTop; ++k) {
            if (k >= int(l.top_ids.size())) {
                m_table->setItem(r, FirstRankColumn + k, new QTableWidgetItem);
                continue;
            }
            const int id = l.top_ids[size_t(k)];
            const double p = double(l.top_p[size_t(k)]);
            const QString text = quotedPiece(in.pieces.value(id, QStringLiteral("#%1").arg(id)));
            auto* item = new QTableWidgetItem(QStringLiteral("%1 %2").arg(text).arg(p, 0, 'f', 3));
            item->setData(ValueRole, p);
            item->setData(TokenRole, id);
            item->setToolTip(tr("id %1, p = %2").arg(id).arg(p, 0, 'g', 6));
            item->setBackground(Theme::probabilityColor(float(p)));
            if (id == token.id) {
                QFont bold = item->font();
                bold.setBold(true);
                item->setFont(bold);
            }
            m_table->setItem(r, FirstRankColumn + k, item);
        }
    }
}

void LogitLensPanel::fillPlot(const TokenInspection& in) {
    QVector<double> layers, drawn, entropy;
    double top = 0.0;
    for (const wb::LensLayer& l : in.lens) {
        layers << l.layer;
        drawn << double(l.p_drawn);
        entropy << double(l.entropy);
        top = std::max(top, double(l.entropy));
    }
    m_drawn->setData(layers, drawn, true);
    m_entropy->setData(layers, entropy, true);
    m_plot->xAxis->setRange(-0.5, std::max(1.0, double(layers.size())) - 0.5);
    m_plot->yAxis2->setRange(0, std::max(0.1, top * 1.05));
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}
