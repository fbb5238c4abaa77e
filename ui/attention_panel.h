#pragma once
// Attention panel: the captured attention of a layer as a colour map (query tokens down, key tokens
// across), for one head, the mean over heads, or a grid of all heads. Token text labels both axes and
// thins out as you zoom out; wheel zooms, drag pans; hovering a cell names the query token, the key
// token and the probability. The map grows one row per generated token. Export as PNG or CSV.
// Colours (the masked cells, axes, text) follow the theme. A sliding-window layer draws the keys outside
// its window (the window the engine recorded with the rows) in their own colour, not as zero attention.
// The capture's memory budget is chosen in the panel's Budget menu; the memory the rows take is shown.
// While a reply streams a refresh draws only the rows that arrived (AttentionMapImage, and the
// store's revisions say which); a change of layer, head, view, window or a shorter context redraws all.
#include <QElapsedTimer>
#include <QVector>
#include <QWidget>

class AttentionMapImage;
class AttentionStore;
class QCPAxisRect;
class QCPAxis;
class QCPColorScale;
class QCPItemStraightLine;
class QCheckBox;
class QComboBox;
class QCustomPlot;
class QActionGroup;
class QLabel;
class QMenu;
class QSpinBox;
class QTimer;
class QToolButton;

class AttentionPanel : public QWidget {
    Q_OBJECT

public:
    enum class Mode { SingleHead = 0, MeanOverHeads = 1, AllHeads = 2 };

    explicit AttentionPanel(AttentionStore* store, QWidget* parent = nullptr);

    int layer() const;
    int head() const;
    Mode mode() const;
    void setLayer(int layer);
    void setHead(int head);
    void setMode(Mode mode);
    bool captureAllLayers() const;
    void setCaptureAllLayers(bool on);
    QCheckBox* captureAllLayersBox() const { return m_allLayersBox; }
    // The memory budget of the captured rows (AttentionStore::setBudgetBytes), in MiB.
    static QList<int> budgetChoicesMiB();
    int captureBudgetMiB() const;
    void setCaptureBudgetMiB(int mib);
    QMenu* budgetMenu() const { return m_budgetMenu; }
    QActionGroup* budgetGroup() const { return m_budgetGroup; }
    // "12.3 MiB of 256 MiB captured", and the rows the budget dropped.
    QLabel* memoryLabel() const { return m_memoryLabel; }
    // Whether (query, key) lies outside the layer's sliding window (keys the window masked).
    bool outsideWindow(int query, int key) const;

    QCustomPlot* plot() const { return m_plot; }
    // The map of single-head / mean mode, or of head h in grid mode.
    AttentionMapImage* colorMap(int gridHead = -1) const;
    QCPColorScale* colorScale() const { return m_scale; }
    // Tooltip text for a cell: query token, key token, probability (empty outside the data).
    QString describeCell(int query, int key, int gridHead = -1) const;
    // Value shown at (query, key) in the current mode; NaN when not captured or masked.
    double valueAt(int query, int key, int head) const;
    // Axis label currently shown at a position ("" when thinned out).
    QString xTickLabel(int position) const;
    QString yTickLabel(int position) const;

    // The engine's last cut of the context, drawn as a line before key `position` (empty: none).
    QCPItemStraightLine* cutLine() const { return m_cutLine; }
    // The cut under the map: the last cut's position, and the tokens the cuts dropped in all with the
    // last one's when they differ (AttentionStore::droppedTotal); empty before a cut.
    QString cutText() const;

    bool exportPng(const QString& path) const;
    bool exportCsv(const QString& path, QString* error) const;

    // How often the map was refreshed (for tests: streamed tokens must not refresh it each), and
    // how often a refresh redrew every row rather than the changed ones.
    int refreshCount() const { return m_refreshCount; }
    int fullRebuildCount() const { return m_fullRebuildCount; }
    // The least time between two scheduled refreshes (kMinRefreshMs unless a test changes it); a
    // refresh waiting for it is rescheduled.
    void setMinRefreshInterval(int ms);
    static constexpr int kMinRefreshMs = 100;

public Q_SLOTS:
    // Redraws the map from the store, coalesced: requests while one is pending redraw once, a
    // scheduled refresh waits until kMinRefreshMs after the last one, and a hidden panel waits for
    // its show. A streamed refresh costs O(new rows x n); the replot that follows still scales the
    // whole map image, so one per streamed token would still be more than the GUI thread needs.
    void scheduleRefresh();
    void refreshNow();
    void handleModelShape();

Q_SIGNALS:
    // Layers the engine should capture: empty = all layers.
    void captureLayersChanged(const QVector<int>& layers);
    void captureBudgetChanged(int mib);
    void selectionChanged(int layer, int head);

protected:
    bool eventFilter(QObject* watched, QEvent* event) override;
    void showEvent(QShowEvent* event) override;

private:
    void buildSingleLayout();
    void buildGridLayout();
    void addColorScale();
    // Fills the maps: every row, or (same layer, head, view and window, no fewer tokens) the rows
    // the store changed since the last fill and the new ones.
    void fillMaps();
    void fillRow(AttentionMapImage* map, int head, int query, int window) const;
    AttentionMapImage* addMap(QCPAxis* x, QCPAxis* y);
    void buildBudgetMenu();
    void updateMemoryLabel();
    void updateTicks();
    void emitCapture();
    void applyTheme();
    void drawCut();
    QFont tickFont() const;
    void exportPngInteractive();
    void exportCsvInteractive();

    AttentionStore* m_store;
    QComboBox* m_modeBox;
    QSpinBox* m_layerBox;
    QSpinBox* m_headBox;
    QCheckBox* m_allLayersBox;
    QLabel* m_note;
    QLabel* m_memoryLabel;
    QToolButton* m_budgetButton = nullptr;
    QMenu* m_budgetMenu = nullptr;
    QActionGroup* m_budgetGroup = nullptr;
    QCustomPlot* m_plot;
    QCPColorScale* m_scale = nullptr;
    AttentionMapImage* m_map = nullptr;     // single / mean mode
    QVector<AttentionMapImage*> m_gridMaps;  // grid mode, one per head
    QVector<QCPAxisRect*> m_gridRects;
    QCPItemStraightLine* m_cutLine = nullptr;  // single / mean mode, while the store has a cut
    QTimer* m_refreshTimer;                  // the pending scheduled refresh
    QElapsedTimer m_sinceRefresh;            // since the last refresh (invalid: none yet)
    int m_minRefreshMs = kMinRefreshMs;
    bool m_staleWhileHidden = false;         // a refresh was asked for while the panel was hidden
    int m_refreshCount = 0;
    int m_fullRebuildCount = 0;
    // What the maps hold: drawn from the store at `revision` (AttentionStore::revision()).
    struct Filled {
        bool valid = false;
        int layer = -1, head = -1, window = 0, tokens = 0;
        Mode mode = Mode::SingleHead;
        quint64 revision = 0;
    } m_filled;
    bool m_layoutIsGrid = false;
    int m_shownTokens = -1;                  // token count the axes were last fitted to
    int m_shownDropped = 0;                  // AttentionStore::droppedBelow() of the last refresh
};
