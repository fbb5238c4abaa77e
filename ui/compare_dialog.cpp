#include "compare_dialog.h"

#include <algorithm>

#include <QDialogButtonBox>
#include <QFileInfo>
#include <QHeaderView>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>

#include <qcustomplot.h>

#include "theme.h"

CompareDialog::CompareDialog(const QString& modelName, const QString& otherPath, QWidget* parent) : QDialog(parent) {
    setWindowTitle(tr("Compare with %1").arg(QFileInfo(otherPath).fileName()));
    setAttribute(Qt::WA_DeleteOnClose);
    m_heading = new QLabel(tr("The reply through <b>%1</b> (loaded) and <b>%2</b>, teacher-forced: per reply token the "
                              "KL divergence KL(loaded ‖ other) of the two next-token distributions, and where their "
                              "most likely tokens differ (top-1 flips).")
                               .arg(modelName.toHtmlEscaped(), QFileInfo(otherPath).fileName().toHtmlEscaped()),
                           this);
    m_heading->setWordWrap(true);
    m_heading->setToolTip(otherPath);
    m_summary = new QLabel(this);
    m_summary->setWordWrap(true);
    m_summary->setTextInteractionFlags(Qt::TextSelectableByMouse | Qt::TextSelectableByKeyboard);
    m_progress = new QProgressBar(this);
    m_progress->setRange(0, 0);

    const int line = fontMetrics().height();
    m_plot = new QCustomPlot(this);
    m_plot->setMinimumHeight(line * 9);
    m_plot->setAccessibleName(tr("KL divergence of each reply token, top-1 flips marked"));
    m_klGraph = m_plot->addGraph();
    m_klGraph->setName(tr("KL (nats)"));
    m_klGraph->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, 4));
    m_flipGraph = m_plot->addGraph();
    m_flipGraph->setName(tr("top-1 flip"));
    m_flipGraph->setLineStyle(QCPGraph::lsNone);
    m_flipGraph->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCrossCircle, 9));
    m_plot->xAxis->setLabel(tr("token of the reply"));
    // Tokens are whole positions: ticks at multiples of 1 (QCustomPlot's default ticker put them at 2.5, 7.5).
    auto ticker = QSharedPointer<QCPAxisTickerFixed>::create();
    ticker->setTickStep(1.0);
    ticker->setScaleStrategy(QCPAxisTickerFixed::ssMultiples);
    m_plot->xAxis->setTicker(ticker);
    m_plot->yAxis->setLabel(tr("KL (nats)"));
    QFont small = font();
    small.setPointSizeF(std::max(6.0, small.pointSizeF() * 0.85));
    Theme::legendBelow(m_plot, small);

    m_table = new QTableWidget(0, 5, this);
    m_table->setHorizontalHeaderLabels({tr("#"), tr("Token"), tr("KL (nats)"), tr("Top-1 loaded"), tr("Top-1 other")});
    m_table->verticalHeader()->hide();
    m_table->verticalHeader()->setDefaultSectionSize(line + 4);  // as the logit lens and token inspector
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->horizontalHeader()->setStretchLastSection(true);

    auto* split = new QSplitter(Qt::Vertical, this);
    split->addWidget(m_plot);
    split->addWidget(m_table);
    split->setSizes({line * 14, line * 10});

    auto* buttons = new QDialogButtonBox(this);
    m_cancel = buttons->addButton(QDialogButtonBox::Cancel);
    connect(m_cancel, &QPushButton::clicked, this, [this] {
        if (!m_running) {
            close();
            return;
        }
        m_cancel->setEnabled(false);
        m_summary->setText(tr("Cancelling…"));
        Q_EMIT cancelRequested();
    });

    auto* layout = new QVBoxLayout(this);
    layout->addWidget(m_heading);
    layout->addWidget(m_progress);
    layout->addWidget(m_summary);
    layout->addWidget(split, 1);
    layout->addWidget(buttons);
    resize(line * 46, line * 34);

    connect(ThemeNotifier::instance(), &ThemeNotifier::themeChanged, this, &CompareDialog::applyTheme);
    applyTheme();
    setProgress(-1, 0);
}

void CompareDialog::applyTheme() {
    Theme::stylePlot(m_plot);
    m_klGraph->setPen(QPen(Theme::color(Theme::Role::FinalSeries), 1.5));
    m_flipGraph->setPen(QPen(Theme::color(Theme::Role::Error), 2.0));
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void CompareDialog::setProgress(int done, int total) {
    if (!m_running) return;
    if (done < 0 || total <= 0) {
        m_progress->setRange(0, 0);  // busy: a model file loads in one piece
        m_summary->setText(tr("Loading %1…").arg(m_heading->toolTip()));
        return;
    }
    m_progress->setRange(0, total);
    m_progress->setValue(done);
    m_summary->setText(tr("Evaluating: %1 of %2 positions (both models)").arg(done).arg(total));
}

QString CompareDialog::piece(int id) const {
    return m_result ? quotedPiece(m_result->pieces.value(id)) : QString();
}

void CompareDialog::setResult(const ModelCompareResultPtr& result) {
    m_running = false;
    m_result = result;
    m_progress->hide();
    m_cancel->setText(tr("Close"));
    m_cancel->setEnabled(true);
    if (!result) return;
    const wb::ModelComparison& c = result->comparison;
    QVector<double> x, kl, fx, fy;
    size_t worst = 0;
    for (size_t i = 0; i < c.tokens.size(); ++i) {
        x << double(i);
        kl << c.tokens[i].kl;
        if (c.tokens[i].flip()) {
            fx << double(i);
            fy << c.tokens[i].kl;
        }
        if (c.tokens[i].kl > c.tokens[worst].kl) worst = i;
    }
    m_klGraph->setData(x, kl, true);
    m_flipGraph->setData(fx, fy, true);
    m_plot->xAxis->setRange(-0.5, std::max(1.0, double(c.tokens.size()) - 0.5));
    m_plot->yAxis->setRange(0.0, c.kl_max > 0.0 ? c.kl_max * 1.1 : 1.0);
    m_plot->replot();
    QString max = QString::number(c.kl_max, 'g', 6);
    if (!c.tokens.empty() && c.kl_max > 0.0) max += tr(" at token %1 %2").arg(worst).arg(piece(c.tokens[worst].token));
    m_summary->setText(tr("KL mean %1 nats, max %2; top-1 flips: %3 of %4 tokens")
                           .arg(QString::number(c.kl_mean, 'g', 6), max)
                           .arg(c.flips)
                           .arg(c.tokens.size()));
    fillTable(*result);
}

void CompareDialog::fillTable(const ModelCompareResult& r) {
    const auto& tokens = r.comparison.tokens;
    m_table->setRowCount(int(tokens.size()));
    QFont bold = m_table->font();
    bold.setBold(true);
    for (int i = 0; i < int(tokens.size()); ++i) {
        const wb::TokenComparison& t = tokens[size_t(i)];
        const QStringList cells{QString::number(i), piece(t.token), QString::number(t.kl, 'g', 6),
                                piece(t.top_a), piece(t.top_b) + (t.flip() ? tr("  (flip)") : QString())};
        for (int col = 0; col < cells.size(); ++col) {
            auto* item = new QTableWidgetItem(cells[col]);
            if (t.flip()) item->setFont(bold);
            m_table->setItem(i, col, item);
        }
    }
    m_table->resizeColumnsToContents();
}

void CompareDialog::setError(const QString& message) {
    setResult(nullptr);
    m_summary->setText(message);
    QPalette p = m_summary->palette();
    p.setColor(QPalette::WindowText, Theme::color(Theme::Role::Error));
    m_summary->setPalette(p);
}
