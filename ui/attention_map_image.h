#pragma once
// AttentionMapImage: one attention map of the attention panel (query rows down, key columns across)
// drawn from an image the map keeps and extends, instead of a QCPColorMap. A QCPColorMap resizes
// (and so clears) its data for every new token and colours all n x n cells again on every replot:
// while a reply streams that is O(n²) per refresh. Here the values live in a lower-triangular buffer
// (row q holds keys 0 .. q; later keys are masked by causality), the image is allocated ahead
// (its capacity grows geometrically, cells not yet written stay the masked colour), and only the
// rows written since the last draw are coloured: O(new rows x n) per streamed refresh. A change
// of the colour range or of the colours recolours every row from the kept values (exactly as a
// full rebuild would; that happens when the scale's top moves, on a theme change, or when rebuilt).
// Cells are coloured by QCPColorGradient::colorize, as QCPColorMap colours them; keys outside a
// sliding-window layer's window get the out-of-window colour (opaque, as the overlay was).
#include <QImage>
#include <vector>

#include <qcustomplot.h>

class AttentionMapImage : public QCPAbstractPlottable {
    Q_OBJECT

public:
    AttentionMapImage(QCPAxis* keyAxis, QCPAxis* valueAxis);

    // Every cell masked, `tokens` x `tokens` of them (the full rebuild's start).
    void reset(int tokens);
    // Grows to `tokens` x `tokens`; the new cells are masked until their rows are written. Fewer
    // tokens than shown needs reset() (the rows past them would stay).
    void grow(int tokens);
    int tokenCount() const { return m_n; }
    // Row `query`: values of keys 0 .. count-1 (count <= query + 1, the rest NaN); nullptr: not
    // captured (all NaN). Keys with query - key >= window (window > 0) lie outside the window.
    void setRow(int query, const float* values, int count, int window);
    // The colour range (the colour scale's); a different one recolours every row.
    void setDataRange(const QCPRange& range);
    QCPRange dataRange() const { return m_range; }
    // The gradient (NaN: its NaN colour) and the out-of-window colour; recolours every row.
    void setColors(const QCPColorGradient& gradient, const QColor& outOfWindow);
    // The largest value of rows 1 .. n-1 (of row 0 too when it is the only one; 0 when none): row
    // 0 is always p = 1, which would push the rest of the map into the bottom of the colours.
    double top() const;

    // The value at (key, query) as drawn: NaN when masked, not captured or outside the map.
    double cell(int key, int query) const;
    // Whether (key, query) is drawn in the out-of-window colour.
    bool outsideWindow(int key, int query) const;
    // The n x n image as drawn (row q = query q), with every written row coloured.
    QImage image() const;
    // Cells coloured since construction (for tests: a streamed refresh colours only its new rows).
    qint64 cellsColoured() const { return m_cellsColoured; }
    // The side of the image allocated (for tests: a reset after a long chat gives the memory back).
    int capacity() const { return m_image.isNull() ? 0 : m_image.width(); }

    double selectTest(const QPointF& pos, bool onlySelectable, QVariant* details = nullptr) const override;
    QCPRange getKeyRange(bool& foundRange, QCP::SignDomain inSignDomain = QCP::sdBoth) const override;
    QCPRange getValueRange(bool& foundRange, QCP::SignDomain inSignDomain = QCP::sdBoth,
                           const QCPRange& inKeyRange = QCPRange()) const override;

protected:
    void draw(QCPPainter* painter) override;
    void drawLegendIcon(QCPPainter* painter, const QRectF& rect) const override;

private:
    static size_t rowStart(int query) { return size_t(query) * size_t(query + 1) / 2; }
    // Makes the image hold `tokens` x `tokens` cells; false when it cannot be allocated (the old one kept).
    bool reserveImage(int tokens);
    // Colours the rows written since the last call (all of them after a range or colour change).
    void colourPending() const;
    void colourRow(int query) const;

    int m_n = 0;
    std::vector<float> m_values;       // lower triangle, row q at rowStart(q), q + 1 keys
    std::vector<float> m_rowMax;       // the largest value of each row (0: none)
    std::vector<int> m_windows;        // each row's window (0: none)
    QCPRange m_range{0.0, 1.0};
    QRgb m_outOfWindow = 0;
    QRgb m_masked = 0;
    mutable QCPColorGradient m_gradient;  // colorize() fills its colour cache
    mutable QImage m_image;               // capacity x capacity; rows >= m_n not drawn
    mutable std::vector<int> m_pending;   // rows written since they were last coloured
    mutable std::vector<char> m_isPending;
    mutable bool m_allPending = false;
    mutable std::vector<double> m_scratch;
    mutable qint64 m_cellsColoured = 0;
};
