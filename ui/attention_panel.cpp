#include "attention_panel.h"

#include <QCheckBox>
#include <QComboBox>
#include <QFile>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QHelpEvent>
#include <QLabel>
#include <QActionGroup>
#include <QMenu>
#include <QMessageBox>
#include <QPushButton>
#include <QSaveFile>
#include <QSpinBox>
#include <QTextStream>
#include <QTimer>
#include <QToolButton>
#include <QToolTip>
#include <QVBoxLayout>
#include <cmath>
#include <limits>
#include <numeric>

#include <qcustomplot.h>

#include "attention_map_image.h"
#include "attention_store.h"
#include "theme.h"

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
// Pixels one axis label needs; fewer pixels per position than this and labels are thinned out.
constexpr double kPixelsPerLabel = 15.0;

QCPColorGradient attentionGradient() {
    QCPColorGradient g(QCPColorGradient::gpThermal);
    // Masked (future) keys and rows that were not captured are NaN: drawn in their own colour, not as 0.
    g.setNanHandling(QCPColorGradient::nhNanColor);
    // Drawn light grey in a light theme and dark grey in a dark one.
    g.setNanColor(Theme::color(Theme::Role::MaskedCell));
    return g;
}

QString mibText(qint64 bytes) {
    return QString::number(double(bytes) / double(1 << 20), 'f', bytes < (qint64(10) << 20) ? 1 : 0);
}

QString budgetText(int mib) {
    return mib >= 1024 && mib % 1024 == 0 ? QObject::tr("%1 GiB").arg(mib / 1024) : QObject::tr("%1 MiB").arg(mib);
}

QString csvField(QString s) {
    s.replace(QLatin1Char('"'), QStringLiteral("\"\""));
    return QLatin1Char('"') + s + QLatin1Char('"');
}

}  // namespace

AttentionPanel::AttentionPanel(AttentionStore* store, QWidget* parent) : QWidget(parent), m_store(store) {
    m_refreshTimer = new QTimer(this);
    m_refreshTimer->setSingleShot(true);
    connect(m_refreshTimer, &QTimer::timeout, this, &AttentionPanel::refreshNow);
    m_modeBox = new QComboBox(this);
    m_modeBox->addItems({tr("Single head"), tr("Mean over heads"), tr("All heads (grid)")});
    m_layerBox = new QSpinBox(this);
    m_layerBox->setPrefix(tr("layer "));
    m_headBox = new QSpinBox(this);
    m_headBox->setPrefix(tr("head "));
    m_allLayersBox = new QCheckBox(tr("capture all layers"), this);
    m_allLayersBox->setToolTip(tr("Off: only the selected layer is captured (memory grows with layers x tokens²)."));
    auto* png = new QPushButton(tr("PNG…"), this);
    auto* csv = new QPushButton(tr("CSV…"), this);
    auto* fit = new QPushButton(tr("Fit"), this);
    fit->setToolTip(tr("Show all tokens (wheel zooms, drag pans)"));
    m_modeBox->setAccessibleName(tr("Attention view"));
    m_layerBox->setAccessibleName(tr("Layer"));
    m_headBox->setAccessibleName(tr("Head"));
    fit->setAccessibleName(tr("Fit all tokens"));
    png->setAccessibleName(tr("Export the map as PNG"));
    csv->setAccessibleName(tr("Export the values as CSV"));
    // Two rows: one row of all seven controls would set the dock's minimum width.
    auto* selectors = new QHBoxLayout;
    for (QWidget* w : std::initializer_list<QWidget*>{m_modeBox, m_layerBox, m_headBox}) selectors->addWidget(w);
    selectors->addStretch(1);
    auto* actions = new QHBoxLayout;
    actions->addWidget(m_allLayersBox);
    actions->addStretch(1);
    for (QWidget* w : std::initializer_list<QWidget*>{fit, png, csv}) actions->addWidget(w);

    // The budget beside the selectors (that row has room; the second row sets the dock's minimum width).
    buildBudgetMenu();
    selectors->addWidget(m_budgetButton);
    m_memoryLabel = new QLabel(this);
    m_memoryLabel->setAccessibleName(tr("Captured attention memory"));
    m_memoryLabel->setToolTip(tr("Memory the captured attention rows take, of the budget"));
    m_memoryLabel->setForegroundRole(QPalette::PlaceholderText);

    m_note = new QLabel(this);
    m_note->setWordWrap(true);
    m_note->setForegroundRole(QPalette::PlaceholderText);
    m_plot = new QCustomPlot(this);
    m_plot->setAccessibleName(tr("Attention map"));
    // In text units: enough for a readable map at the panel's smallest, at any font size.
    const QFontMetrics fm = fontMetrics();
    m_plot->setMinimumSize(fm.averageCharWidth() * 36, fm.height() * 12);
    m_plot->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
    m_plot->installEventFilter(this);
    // Label thinning depends on the axis length in pixels, known only once the plot has laid out
    // (QCP computes ticks after this signal, so the new labels are drawn in the same replot).
    connect(m_plot, &QCustomPlot::afterLayout, this, &AttentionPanel::updateTicks);

    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addLayout(selectors);
    layout->addLayout(actions);
    auto* noteRow = new QHBoxLayout;
    noteRow->addWidget(m_note, 1);
    noteRow->addWidget(m_memoryLabel, 0, Qt::AlignTop);
    layout->addLayout(noteRow);
    layout->addWidget(m_plot, 1);

    connect(m_modeBox, &QComboBox::currentIndexChanged, this, [this] {
        m_headBox->setEnabled(mode() == Mode::SingleHead);
        refreshNow();
    });
    connect(m_layerBox, &QSpinBox::valueChanged, this, [this] {
        emitCapture();
        Q_EMIT selectionChanged(layer(), head());
        refreshNow();
    });
    connect(m_headBox, &QSpinBox::valueChanged, this, [this] {
        Q_EMIT selectionChanged(layer(), head());
        refreshNow();
    });
    connect(m_allLayersBox, &QCheckBox::toggled, this, &AttentionPanel::emitCapture);
    connect(fit, &QPushButton::clicked, this, [this] {
        m_shownTokens = -1;
        refreshNow();
    });
    connect(png, &QPushButton::clicked, this, &AttentionPanel::exportPngInteractive);
    connect(csv, &QPushButton::clicked, this, &AttentionPanel::exportCsvInteractive);
    connect(m_store, &AttentionStore::rowsChanged, this, [this](int l) {
        if (l == layer()) scheduleRefresh();
    });
    connect(m_store, &AttentionStore::tokensChanged, this, &AttentionPanel::scheduleRefresh);
    connect(m_store, &AttentionStore::cutChanged, this, &AttentionPanel::scheduleRefresh);
    connect(m_store, &AttentionStore::cleared, this, &AttentionPanel::handleModelShape);
    connect(m_store, &AttentionStore::memoryChanged, this, &AttentionPanel::updateMemoryLabel);
    connect(ThemeNotifier::instance(), &ThemeNotifier::themeChanged, this, &AttentionPanel::applyTheme);
    handleModelShape();
    updateMemoryLabel();
}

QList<int> AttentionPanel::budgetChoicesMiB() {
    return {64, 256, 1024, 4096, 16384};
}

void AttentionPanel::buildBudgetMenu() {
    m_budgetButton = new QToolButton(this);
    m_budgetButton->setPopupMode(QToolButton::InstantPopup);
    m_budgetButton->setAccessibleName(tr("Capture memory budget"));
    m_budgetButton->setToolTip(tr("The most memory captured attention may take; past it the oldest rows are dropped."));
    m_budgetMenu = new QMenu(tr("Capture budget"), this);
    m_budgetGroup = new QActionGroup(this);
    for (int mib : budgetChoicesMiB()) {
        QAction* a = m_budgetMenu->addAction(mib == AttentionStore::kDefaultBudget >> 20 ? tr("%1 (default)").arg(budgetText(mib)) : budgetText(mib));
        a->setCheckable(true);
        a->setData(mib);
        m_budgetGroup->addAction(a);
    }
    m_budgetButton->setMenu(m_budgetMenu);
    connect(m_budgetGroup, &QActionGroup::triggered, this, [this](QAction* a) {
        setCaptureBudgetMiB(a->data().toInt());
        Q_EMIT captureBudgetChanged(a->data().toInt());
    });
    setCaptureBudgetMiB(int(AttentionStore::kDefaultBudget >> 20));
}

int AttentionPanel::captureBudgetMiB() const {
    return int(m_store->budgetBytes() >> 20);
}

void AttentionPanel::setCaptureBudgetMiB(int mib) {
    if (mib <= 0) mib = int(AttentionStore::kDefaultBudget >> 20);
    for (QAction* a : m_budgetGroup->actions()) a->setChecked(a->data().toInt() == mib);
    m_budgetButton->setText(tr("≤ %1").arg(budgetText(mib)));
    m_store->setBudgetBytes(qint64(mib) << 20);
}

void AttentionPanel::updateMemoryLabel() {
    m_memoryLabel->setText(tr("%1 MiB of %2").arg(mibText(m_store->bytesUsed()), budgetText(captureBudgetMiB())));
    if (m_store->droppedBelow() != m_shownDropped) scheduleRefresh();  // the map and note show the dropped rows
}

void AttentionPanel::applyTheme() {
    if (m_scale) m_scale->setGradient(attentionGradient());
    // The maps recolour every row from the values they keep: nothing is read from the store again.
    for (AttentionMapImage* m : m_gridMaps) m->setColors(attentionGradient(), Theme::color(Theme::Role::OutOfWindowCell));
    if (m_map) m_map->setColors(attentionGradient(), Theme::color(Theme::Role::OutOfWindowCell));
    Theme::stylePlot(m_plot);
}

QFont AttentionPanel::tickFont() const {
    // Token labels a little smaller than the text, relative to it so they scale with the font.
    QFont f = font();
    f.setPointSizeF(std::max(6.0, f.pointSizeF() * 0.8));
    return f;
}

void AttentionPanel::setCaptureAllLayers(bool on) {
    m_allLayersBox->setChecked(on);
}

int AttentionPanel::layer() const { return m_layerBox->value(); }
int AttentionPanel::head() const { return m_headBox->value(); }
AttentionPanel::Mode AttentionPanel::mode() const { return Mode(m_modeBox->currentIndex()); }
void AttentionPanel::setLayer(int l) { m_layerBox->setValue(l); }
void AttentionPanel::setHead(int h) { m_headBox->setValue(h); }
void AttentionPanel::setMode(Mode m) { m_modeBox->setCurrentIndex(int(m)); }
bool AttentionPanel::captureAllLayers() const { return m_allLayersBox->isChecked(); }

void AttentionPanel::handleModelShape() {
    m_layerBox->setRange(0, std::max(0, m_store->layerCount() - 1));
    m_headBox->setRange(0, std::max(0, m_store->headCount() - 1));
    m_shownTokens = -1;
    m_filled.valid = false;  // the store was cleared: its revisions start again
    refreshNow();
}

void AttentionPanel::emitCapture() {
    Q_EMIT captureLayersChanged(captureAllLayers() ? QVector<int>{} : QVector<int>{layer()});
}

AttentionMapImage* AttentionPanel::colorMap(int gridHead) const {
    if (gridHead < 0) return m_map;
    return gridHead < m_gridMaps.size() ? m_gridMaps[gridHead] : nullptr;
}

void AttentionPanel::buildSingleLayout() {
    m_plot->clearItems();  // the cut line sits on the axes about to go
    m_cutLine = nullptr;
    m_plot->clearPlottables();
    m_plot->plotLayout()->clear();
    m_gridMaps.clear();
    m_gridRects.clear();
    m_filled.valid = false;
    auto* rect = new QCPAxisRect(m_plot);
    m_plot->plotLayout()->addElement(0, 0, rect);
    addColorScale();
    auto* margins = new QCPMarginGroup(m_plot);
    rect->setMarginGroup(QCP::msTop | QCP::msBottom, margins);
    m_scale->setMarginGroup(QCP::msTop | QCP::msBottom, margins);
    QCPAxis* x = rect->axis(QCPAxis::atBottom);
    QCPAxis* y = rect->axis(QCPAxis::atLeft);
    y->setRangeReversed(true);  // the first token at the top, new rows grow downwards
    x->setLabel(tr("key (attended-to token)"));
    y->setLabel(tr("query (attending token)"));
    x->setTickLabelRotation(90);
    for (QCPAxis* a : {x, y}) {
        a->setTicker(QSharedPointer<QCPAxisTickerText>(new QCPAxisTickerText));
        a->setSubTicks(false);
        a->setTickLabelFont(tickFont());
        connect(a, qOverload<const QCPRange&>(&QCPAxis::rangeChanged), this, [this] { updateTicks(); });
    }
    m_map = addMap(x, y);
    m_scale->setGradient(attentionGradient());
    m_layoutIsGrid = false;
    Theme::stylePlot(m_plot);
}

// The colour scale beside the map(s). It only shows the maps' colour range (they draw their own
// images and are not linked to it), so it cannot be dragged or zoomed: a legend moved away from the
// colours drawn would misstate them.
void AttentionPanel::addColorScale() {
    m_scale = new QCPColorScale(m_plot);
    m_plot->plotLayout()->addElement(0, 1, m_scale);
    m_scale->axis()->setLabel(tr("attention probability"));
    m_scale->setRangeDrag(false);
    m_scale->setRangeZoom(false);
}

void AttentionPanel::buildGridLayout() {
    m_plot->clearItems();  // the cut line sits on the axes about to go
    m_cutLine = nullptr;
    m_plot->clearPlottables();
    m_plot->plotLayout()->clear();
    m_map = nullptr;
    m_gridMaps.clear();
    m_gridRects.clear();
    m_filled.valid = false;
    const int heads = std::max(1, m_store->headCount());
    const int cols = int(std::ceil(std::sqrt(double(heads))));
    auto* grid = new QCPLayoutGrid;
    m_plot->plotLayout()->addElement(0, 0, grid);
    addColorScale();
    for (int h = 0; h < heads; ++h) {
        auto* rect = new QCPAxisRect(m_plot);
        grid->addElement(h / cols, h % cols, rect);
        rect->setupFullAxesBox(false);
        QCPAxis* x = rect->axis(QCPAxis::atBottom);
        QCPAxis* y = rect->axis(QCPAxis::atLeft);
        y->setRangeReversed(true);
        for (QCPAxis* a : rect->axes()) {
            a->setTickLabels(false);
            a->setTicks(false);
        }
        x->setLabel(tr("head %1").arg(h));
        x->setLabelPadding(2);
        m_gridRects.append(rect);
        m_gridMaps.append(addMap(x, y));
    }
    m_scale->setGradient(attentionGradient());
    m_layoutIsGrid = true;
    Theme::stylePlot(m_plot);
}

double AttentionPanel::valueAt(int query, int key, int head) const {
    if (query < 0 || key < 0 || key > query) return kNaN;
    if (mode() == Mode::MeanOverHeads && head < 0) {
        const std::vector<float> r = m_store->meanRow(layer(), query);
        return key < int(r.size()) ? double(r[size_t(key)]) : kNaN;
    }
    const std::vector<float>* r = m_store->row(layer(), head < 0 ? this->head() : head, query);
    return r && key < int(r->size()) ? double((*r)[size_t(key)]) : kNaN;
}

bool AttentionPanel::outsideWindow(int query, int key) const {
    const int w = m_store->window(layer());
    return w > 0 && key >= 0 && key <= query && query - key >= w;
}

AttentionMapImage* AttentionPanel::addMap(QCPAxis* x, QCPAxis* y) {
    auto* map = new AttentionMapImage(x, y);
    map->setColors(attentionGradient(), Theme::color(Theme::Role::OutOfWindowCell));
    return map;
}

void AttentionPanel::fillRow(AttentionMapImage* map, int head, int query, int window) const {
    if (head < 0) {
        const std::vector<float> mean = m_store->meanRow(layer(), query);
        map->setRow(query, mean.empty() ? nullptr : mean.data(), int(mean.size()), window);
        return;
    }
    const std::vector<float>* r = m_store->row(layer(), head, query);
    map->setRow(query, r ? r->data() : nullptr, r ? int(r->size()) : 0, window);
}

void AttentionPanel::fillMaps() {
    const int n = std::max(1, m_store->tokenCount());
    const int window = m_store->window(layer());
    const int shownHead = mode() == Mode::SingleHead ? head() : -1;  // -1: the mean (or every head of the grid)
    const bool full = !m_filled.valid || m_filled.layer != layer() || m_filled.mode != mode() || m_filled.head != shownHead ||
                      m_filled.window != window || n < m_filled.tokens;
    std::vector<int> rows;
    if (full) {
        rows.resize(size_t(n));
        std::iota(rows.begin(), rows.end(), 0);
        ++m_fullRebuildCount;
    } else {
        // Rows the store changed (a budget drop, a re-captured row) and the rows of the new tokens.
        for (int q : m_store->rowsChangedSince(layer(), m_filled.revision))
            if (q < m_filled.tokens) rows.push_back(q);
        for (int q = m_filled.tokens; q < n; ++q) rows.push_back(q);
    }
    const bool grid = mode() == Mode::AllHeads;
    const int maps = grid ? int(m_gridMaps.size()) : 1;
    double top = 0.0;
    for (int i = 0; i < maps; ++i) {
        AttentionMapImage* map = grid ? m_gridMaps[i] : m_map;
        if (full)
            map->reset(n);
        else
            map->grow(n);
        for (int q : rows) fillRow(map, grid ? i : shownHead, q, window);
        top = std::max(top, map->top());
    }
    // One colour scale for all heads, so the heads can be compared. Attention rows peak well below 1
    // except at sinks; row 0 (always p = 1) is left out of top().
    const QCPRange range(0, top > 0 ? top : 1.0);
    for (int i = 0; i < maps; ++i) (grid ? m_gridMaps[i] : m_map)->setDataRange(range);
    m_scale->setDataRange(range);
    m_filled = {true, layer(), shownHead, window, n, mode(), m_store->revision()};
}

void AttentionPanel::scheduleRefresh() {
    if (!isVisible()) {
        m_staleWhileHidden = true;
        return;
    }
    if (m_refreshTimer->isActive()) return;
    const qint64 since = m_sinceRefresh.isValid() ? m_sinceRefresh.elapsed() : qint64(m_minRefreshMs);
    m_refreshTimer->start(int(std::max<qint64>(0, m_minRefreshMs - since)));
}

void AttentionPanel::setMinRefreshInterval(int ms) {
    m_minRefreshMs = std::max(0, ms);
    if (!m_refreshTimer->isActive()) return;
    m_refreshTimer->stop();
    scheduleRefresh();
}

void AttentionPanel::showEvent(QShowEvent* event) {
    QWidget::showEvent(event);
    if (!m_staleWhileHidden) return;
    m_staleWhileHidden = false;
    scheduleRefresh();
}

void AttentionPanel::refreshNow() {
    m_refreshTimer->stop();
    m_staleWhileHidden = false;
    m_sinceRefresh.start();
    ++m_refreshCount;
    const bool grid = mode() == Mode::AllHeads;
    if (!m_map && m_gridMaps.isEmpty()) buildSingleLayout();
    if (grid != m_layoutIsGrid || (grid && m_gridMaps.size() != std::max(1, m_store->headCount()))) {
        if (grid)
            buildGridLayout();
        else
            buildSingleLayout();
        m_shownTokens = -1;
    }
    const int n = m_store->tokenCount();
    fillMaps();
    if (grid) {
        for (QCPAxisRect* r : m_gridRects) {
            r->axis(QCPAxis::atBottom)->setRange(-0.5, std::max(n, 1) - 0.5);
            r->axis(QCPAxis::atLeft)->setRange(-0.5, std::max(n, 1) - 0.5);
        }
    } else {
        // Follow the growing conversation unless the user zoomed in.
        QCPAxis* x = m_map->keyAxis();
        QCPAxis* y = m_map->valueAxis();
        const bool showingAll = m_shownTokens < 0 || (x->range().lower <= -0.4 && x->range().upper >= m_shownTokens - 0.6);
        if (showingAll) {
            x->setRange(-0.5, std::max(n, 1) - 0.5);
            y->setRange(-0.5, std::max(n, 1) - 0.5);
        }
        updateTicks();
    }
    m_shownTokens = n;
    m_shownDropped = m_store->droppedBelow();
    if (m_store->rowCount(layer()) == 0)
        m_note->setText(n == 0 ? tr("Attention appears here while the model answers.")
                               : tr("No attention captured for layer %1 yet; it is captured from the next reply.").arg(layer()));
    else {
        QString note = m_store->window(layer()) > 0
                           ? tr("Layer %1 · %2 tokens · sliding window of %3 keys (outside it shaded)")
                                 .arg(layer())
                                 .arg(n)
                                 .arg(m_store->window(layer()))
                           : tr("Layer %1 · %2 tokens · wheel zooms, drag pans, hover for values").arg(layer()).arg(n);
        if (m_store->droppedBelow() > 0)
            note += tr(" · rows before %1 dropped (memory budget)").arg(m_store->droppedBelow());
        m_note->setText(note);
    }
    drawCut();
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

QString AttentionPanel::cutText() const {
    const wb::ContextCut& c = m_store->cut();
    if (c.dropped <= 0) return {};
    // A reader needs where the kept context goes on (the line, the last cut's position) and how much
    // of the conversation the model no longer sees: the tokens of the cuts in force (not every cut of
    // the chat's history, as the KV panel counts), the last one's apart when there were more.
    const int total = m_store->droppedTotal();
    const bool shift = c.how == wb::ContextPolicy::SHIFT;
    const QString where = shift ? tr("context shifted at position %1").arg(c.position)
                                : tr("old turns trimmed at position %1").arg(c.position);
    if (total == c.dropped) return (c.dropped == 1 ? tr("%1: 1 token dropped") : tr("%1: %2 tokens dropped")).arg(where).arg(c.dropped);
    return (shift ? tr("%1: %2 tokens out of the context now, %3 dropped by the last shift")
                  : tr("%1: %2 tokens out of the context now, %3 dropped by the last trim"))
        .arg(where)
        .arg(total)
        .arg(c.dropped);
}

void AttentionPanel::drawCut() {
    // Keys from `position` on followed the dropped tokens: the line stands between the kept prefix and them.
    if (m_cutLine) m_plot->removeItem(m_cutLine);
    m_cutLine = nullptr;
    const QString text = cutText();
    if (text.isEmpty()) return;
    m_note->setText(m_note->text() + QStringLiteral(" · ") + text);
    if (!m_map) return;
    m_cutLine = new QCPItemStraightLine(m_plot);
    m_cutLine->setClipAxisRect(m_map->keyAxis()->axisRect());
    m_cutLine->point1->setAxes(m_map->keyAxis(), m_map->valueAxis());
    m_cutLine->point2->setAxes(m_map->keyAxis(), m_map->valueAxis());
    const double x = m_store->cut().position - 0.5;
    m_cutLine->point1->setCoords(x, 0);
    m_cutLine->point2->setCoords(x, 1);
    m_cutLine->setPen(QPen(Theme::color(Theme::Role::Warning), 2, Qt::DashLine));
}

void AttentionPanel::updateTicks() {
    if (!m_map) return;
    const int n = m_store->tokenCount();
    auto fill = [this, n](QCPAxis* axis, double pixels) {
        auto ticker = qSharedPointerDynamicCast<QCPAxisTickerText>(axis->ticker());
        if (!ticker) return;
        ticker->clear();
        const QCPRange r = axis->range();
        const int lo = std::max(0, int(std::floor(r.lower)));
        const int hi = std::min(n - 1, int(std::ceil(r.upper)));
        const double perLabel = pixels / std::max(1.0, r.size());
        const int stride = std::max(1, int(std::ceil(kPixelsPerLabel / std::max(perLabel, 1e-6))));
        for (int p = lo - lo % stride; p <= hi; p += stride)
            if (p >= 0) ticker->addTick(p, m_store->tokenLabel(p));
    };
    fill(m_map->keyAxis(), m_map->keyAxis()->axisRect()->width());
    fill(m_map->valueAxis(), m_map->valueAxis()->axisRect()->height());
}

QString AttentionPanel::xTickLabel(int position) const {
    if (!m_map) return {};
    auto t = qSharedPointerDynamicCast<QCPAxisTickerText>(m_map->keyAxis()->ticker());
    return t ? t->ticks().value(position) : QString();
}

QString AttentionPanel::yTickLabel(int position) const {
    if (!m_map) return {};
    auto t = qSharedPointerDynamicCast<QCPAxisTickerText>(m_map->valueAxis()->ticker());
    return t ? t->ticks().value(position) : QString();
}

QString AttentionPanel::describeCell(int query, int key, int gridHead) const {
    const int n = m_store->tokenCount();
    if (query < 0 || key < 0 || query >= n || key >= n) return {};
    const double v = valueAt(query, key, gridHead);
    const QString who = gridHead >= 0 ? tr("head %1").arg(gridHead)
                        : mode() == Mode::MeanOverHeads ? tr("mean of heads")
                                                        : tr("head %1").arg(head());
    return tr("layer %1, %2\nquery %3: %4\nkey %5: %6\np = %7")
        .arg(layer())
        .arg(who)
        .arg(query)
        .arg(m_store->tokenLabel(query))
        .arg(key)
        .arg(m_store->tokenLabel(key))
        .arg(outsideWindow(query, key) ? tr("outside the sliding window of %1 keys (masked)").arg(m_store->window(layer()))
             : std::isnan(v)           ? (key > query                         ? tr("masked (future)")
                                          : query < m_store->droppedBelow() ? tr("dropped (capture memory budget)")
                                                                             : tr("not captured"))
                                       : QString::number(v, 'f', 4));
}

bool AttentionPanel::eventFilter(QObject* watched, QEvent* event) {
    if (watched == m_plot && event->type() == QEvent::ToolTip) {
        const QPoint pos = static_cast<QHelpEvent*>(event)->pos();
        QCPAxisRect* rect = m_plot->axisRectAt(pos);
        QString text;
        if (rect && rect->rect().contains(pos)) {
            const int gridHead = m_layoutIsGrid ? int(m_gridRects.indexOf(rect)) : -1;
            const int key = int(std::lround(rect->axis(QCPAxis::atBottom)->pixelToCoord(pos.x())));
            const int query = int(std::lround(rect->axis(QCPAxis::atLeft)->pixelToCoord(pos.y())));
            text = describeCell(query, key, gridHead);
        }
        if (text.isEmpty())
            QToolTip::hideText();
        else
            QToolTip::showText(static_cast<QHelpEvent*>(event)->globalPos(), text, m_plot);
        return true;
    }
    return QWidget::eventFilter(watched, event);
}

bool AttentionPanel::exportPng(const QString& path) const {
    return m_plot->savePng(path, std::max(m_plot->width(), 800), std::max(m_plot->height(), 700));
}

bool AttentionPanel::exportCsv(const QString& path, QString* error) const {
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly | QIODevice::Text)) {
        if (error) *error = file.errorString();
        return false;
    }
    QTextStream out(&file);
    const int n = m_store->tokenCount();
    QList<int> heads;
    if (mode() == Mode::AllHeads)
        for (int h = 0; h < m_store->headCount(); ++h) heads << h;
    else
        heads << -1;
    // One matrix per head: rows are queries, columns keys, empty cells were not captured or are masked.
    for (int h : heads) {
        out << "# layer " << layer() << ", "
            << (h >= 0 ? QStringLiteral("head %1").arg(h)
                       : mode() == Mode::MeanOverHeads ? QStringLiteral("mean over heads") : QStringLiteral("head %1").arg(head()))
            << '\n';
        out << "query\\key";
        for (int k = 0; k < n; ++k) out << ',' << csvField(QStringLiteral("%1:%2").arg(k).arg(m_store->tokens().value(k)));
        out << '\n';
        for (int q = 0; q < n; ++q) {
            out << csvField(QStringLiteral("%1:%2").arg(q).arg(m_store->tokens().value(q)));
            for (int k = 0; k < n; ++k) {
                const double v = valueAt(q, k, h);
                out << ',';
                if (!std::isnan(v)) out << QString::number(v, 'g', 6);
            }
            out << '\n';
        }
    }
    out.flush();
    if (!file.commit()) {
        if (error) *error = file.errorString();
        return false;
    }
    return true;
}

void AttentionPanel::exportPngInteractive() {
    const QString path = QFileDialog::getSaveFileName(this, tr("Export attention map"), QStringLiteral("attention.png"),
                                                      tr("PNG images (*.png)"));
    if (!path.isEmpty() && !exportPng(path)) QMessageBox::warning(this, tr("Export failed"), tr("Could not write %1.").arg(path));
}

void AttentionPanel::exportCsvInteractive() {
    const QString path = QFileDialog::getSaveFileName(this, tr("Export attention values"), QStringLiteral("attention.csv"),
                                                      tr("CSV files (*.csv)"));
    QString error;
    if (!path.isEmpty() && !exportCsv(path, &error)) QMessageBox::warning(this, tr("Export failed"), error);
}
