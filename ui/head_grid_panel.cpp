#include "head_grid_panel.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <QComboBox>
#include <QHBoxLayout>
#include <QHelpEvent>
#include <QLabel>
#include <QMouseEvent>
#include <QToolTip>
#include <QVBoxLayout>

#include <qcustomplot.h>

#include "theme.h"

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

}  // namespace

HeadGridPanel::HeadGridPanel(QWidget* parent) : QWidget(parent) {
    m_title = new QLabel(this);
    m_title->setWordWrap(true);
    m_statistic = new QComboBox(this);
    m_statistic->addItem(tr("Entropy (nats)"), int(Statistic::Entropy));
    m_statistic->addItem(tr("Attention sink (share on the first token)"), int(Statistic::Sink));
    m_statistic->addItem(tr("Previous token share"), int(Statistic::Prev));
    m_statistic->addItem(tr("Mean attended distance (tokens)"), int(Statistic::Distance));
    m_statistic->addItem(tr("Share inside the window"), int(Statistic::InWindow));
    m_statistic->setAccessibleName(tr("Head statistic shown"));
    auto* label = new QLabel(tr("Colour by"), this);
    label->setBuddy(m_statistic);
    auto* row = new QHBoxLayout;
    row->addWidget(label);
    row->addWidget(m_statistic, 1);

    m_plot = new QCustomPlot(this);
    m_plot->setMinimumHeight(fontMetrics().height() * 8);
    m_plot->setAccessibleName(tr("Head statistics: layers by heads"));
    m_map = new QCPColorMap(m_plot->xAxis, m_plot->yAxis);
    m_map->setInterpolate(false);
    m_scale = new QCPColorScale(m_plot);
    m_plot->plotLayout()->addElement(0, 1, m_scale);
    m_map->setColorScale(m_scale);
    m_plot->xAxis->setLabel(tr("query head"));
    m_plot->yAxis->setLabel(tr("layer"));
    m_plot->yAxis->setRangeReversed(true);  // layer 0 at the top, as the table of the logit lens
    m_plot->installEventFilter(this);
    m_plot->setMouseTracking(true);

    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addWidget(m_title);
    layout->addLayout(row);
    layout->addWidget(m_plot, 1);

    connect(m_statistic, &QComboBox::currentIndexChanged, this, &HeadGridPanel::refresh);
    connect(ThemeNotifier::instance(), &ThemeNotifier::themeChanged, this, &HeadGridPanel::applyTheme);
    applyTheme();
    clear();
}

void HeadGridPanel::applyTheme() {
    Theme::stylePlot(m_plot);
    Theme::styleAxis(m_scale->axis());
    QCPColorGradient g(QCPColorGradient::gpThermal);
    g.setNanHandling(QCPColorGradient::nhNanColor);
    g.setNanColor(Theme::color(Theme::Role::MaskedCell));
    // The scale imposes its gradient on the map.
    m_scale->setGradient(g);
    drawGroups();
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

QString HeadGridPanel::headline() const {
    return m_title->text();
}

HeadGridPanel::Statistic HeadGridPanel::statistic() const {
    return Statistic(m_statistic->currentData().toInt());
}

void HeadGridPanel::setStatistic(Statistic s) {
    m_statistic->setCurrentIndex(m_statistic->findData(int(s)));
}

double HeadGridPanel::value(const wb::HeadStats& s, Statistic statistic) {
    switch (statistic) {
    case Statistic::Entropy: return double(s.entropy);
    case Statistic::Sink: return double(s.sink);
    case Statistic::Prev: return double(s.prev);
    case Statistic::Distance: return double(s.distance);
    case Statistic::InWindow: return double(s.in_window);
    }
    return kNaN;
}

void HeadGridPanel::clear() {
    m_token = TokenRecord();
    m_inspection.reset();
    m_index.clear();
    m_layers = m_heads = 0;
    m_title->setText(tr("Click a token of a reply to see each head's attention at the step that drew it (recorded while this panel is shown)."));
    refresh();
}

void HeadGridPanel::setToken(const TokenRecord& token) {
    m_token = token;
    m_inspection = token.inspection && !token.inspection->heads.empty() ? token.inspection : nullptr;
    m_index.clear();
    m_layers = m_heads = 0;
    const QString own = quotedPiece(token.tokenPiece.isEmpty() ? token.piece : token.tokenPiece);
    if (!m_inspection) {
        m_title->setText(tr("%1 (position %2): no head statistics were recorded for it; they are recorded while this panel is shown.")
                             .arg(own)
                             .arg(token.position));
        refresh();
        return;
    }
    for (const wb::HeadStats& s : m_inspection->heads) {
        m_layers = std::max(m_layers, s.layer + 1);
        m_heads = std::max(m_heads, s.head + 1);
    }
    m_index.assign(size_t(m_layers) * size_t(m_heads), -1);
    for (size_t i = 0; i < m_inspection->heads.size(); ++i) {
        const wb::HeadStats& s = m_inspection->heads[i];
        m_index[size_t(s.layer) * size_t(m_heads) + size_t(s.head)] = int(i);
    }
    m_title->setText(tr("%1 · position %2: each head's attention row at the step that drew it (query position %3)")
                         .arg(own)
                         .arg(token.position)
                         .arg(token.position - 1));
    refresh();
}

const wb::HeadStats* HeadGridPanel::stats(int layer, int head) const {
    if (!m_inspection || layer < 0 || layer >= m_layers || head < 0 || head >= m_heads) return nullptr;
    const int i = m_index[size_t(layer) * size_t(m_heads) + size_t(head)];
    return i < 0 ? nullptr : &m_inspection->heads[size_t(i)];
}

double HeadGridPanel::cellValue(int layer, int head) const {
    const wb::HeadStats* s = stats(layer, head);
    return s ? value(*s, statistic()) : kNaN;
}

QString HeadGridPanel::describeCell(int layer, int head) const {
    const wb::HeadStats* s = stats(layer, head);
    if (!s) return QString();
    QString text = tr("layer %1, head %2 (reads KV head %3)\nentropy %4 nats\nsink %5\nprevious token %6\nmean distance %7")
                       .arg(s->layer)
                       .arg(s->head)
                       .arg(s->kv_head)
                       .arg(double(s->entropy), 0, 'f', 3)
                       .arg(double(s->sink), 0, 'f', 3)
                       .arg(double(s->prev), 0, 'f', 3)
                       .arg(double(s->distance), 0, 'f', 2);
    if (s->window > 0)
        text += tr("\ninside the last %1 keys %2").arg(s->window).arg(double(s->in_window), 0, 'f', 3);
    else
        text += tr("\n(no window)");
    return text;
}

void HeadGridPanel::refresh() {
    const Statistic st = statistic();
    m_map->data()->setSize(std::max(1, m_heads), std::max(1, m_layers));
    m_map->data()->setRange(QCPRange(0, std::max(0, m_heads - 1)), QCPRange(0, std::max(0, m_layers - 1)));
    double top = 0.0;
    for (int l = 0; l < std::max(1, m_layers); ++l)
        for (int h = 0; h < std::max(1, m_heads); ++h) {
            const double v = cellValue(l, h);
            m_map->data()->setCell(h, l, v);
            if (std::isfinite(v)) top = std::max(top, v);
        }
    // Shares have a fixed scale, so two tokens' grids compare by colour; entropy and distance have none.
    const bool share = st == Statistic::Sink || st == Statistic::Prev || st == Statistic::InWindow;
    m_scale->setDataRange(QCPRange(0, share ? 1.0 : std::max(top, 1e-3)));
    m_scale->axis()->setLabel(m_statistic->currentText());
    m_plot->xAxis->setRange(-0.5, std::max(1, m_heads) - 0.5);
    m_plot->yAxis->setRange(-0.5, std::max(1, m_layers) - 0.5);
    drawGroups();
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void HeadGridPanel::drawGroups() {
    // Lines between query heads that read different key/value heads (grouped-query attention).
    m_plot->clearItems();
    if (!m_inspection || m_layers == 0) return;
    for (int h = 1; h < m_heads; ++h) {
        const wb::HeadStats* a = stats(0, h - 1);
        const wb::HeadStats* b = stats(0, h);
        if (!a || !b || a->kv_head == b->kv_head) continue;
        auto* line = new QCPItemStraightLine(m_plot);
        line->point1->setCoords(h - 0.5, 0);
        line->point2->setCoords(h - 0.5, 1);
        line->setPen(QPen(palette().color(QPalette::Base), 3));
    }
}

bool HeadGridPanel::cellAt(const QPoint& pos, int* layer, int* head) const {
    if (!m_plot->axisRect()->rect().contains(pos)) return false;
    *head = int(std::lround(m_plot->xAxis->pixelToCoord(pos.x())));
    *layer = int(std::lround(m_plot->yAxis->pixelToCoord(pos.y())));
    return stats(*layer, *head) != nullptr;
}

bool HeadGridPanel::eventFilter(QObject* watched, QEvent* event) {
    if (watched != m_plot) return QWidget::eventFilter(watched, event);
    int layer = 0, head = 0;
    if (event->type() == QEvent::ToolTip) {
        auto* help = static_cast<QHelpEvent*>(event);
        if (cellAt(help->pos(), &layer, &head))
            QToolTip::showText(help->globalPos(), describeCell(layer, head), m_plot);
        else
            QToolTip::hideText();
        return true;
    }
    if (event->type() == QEvent::MouseButtonRelease) {
        auto* mouse = static_cast<QMouseEvent*>(event);
        if (mouse->button() == Qt::LeftButton && cellAt(mouse->position().toPoint(), &layer, &head)) Q_EMIT headActivated(layer, head);
    }
    return QWidget::eventFilter(watched, event);
}
