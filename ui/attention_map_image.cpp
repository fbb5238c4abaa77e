#include "attention_map_image.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace {

constexpr float kNaNf = std::numeric_limits<float>::quiet_NaN();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr int kMinCapacity = 64;

}  // namespace

AttentionMapImage::AttentionMapImage(QCPAxis* keyAxis, QCPAxis* valueAxis) : QCPAbstractPlottable(keyAxis, valueAxis) {
    setColors(QCPColorGradient(QCPColorGradient::gpThermal), Qt::transparent);
}

void AttentionMapImage::reset(int tokens) {
    m_n = std::max(0, tokens);
    // New buffers rather than assign(): a reset after a long chat (New chat) gives its memory back
    // (an 8,192-token map holds ~134 MB of values and, with headroom, a ~600 MB image).
    m_values = std::vector<float>(rowStart(m_n), kNaNf);
    m_rowMax = std::vector<float>(size_t(m_n), 0.0f);
    m_windows = std::vector<int>(size_t(m_n), 0);
    m_pending.clear();
    m_isPending = std::vector<char>(size_t(m_n), 0);
    m_allPending = false;
    if (!m_image.isNull() && m_image.width() > 2 * std::max(m_n + m_n / 2, kMinCapacity)) m_image = QImage();
    if (!m_image.isNull()) m_image.fill(m_masked);  // every cell masked, the rows past m_n too
    if (!reserveImage(m_n)) m_n = capacity();
}

void AttentionMapImage::grow(int tokens) {
    if (tokens <= m_n) return;
    if (!reserveImage(tokens)) tokens = capacity();  // out of memory: the map stays as large as it can
    if (tokens <= m_n) return;
    m_values.resize(rowStart(tokens), kNaNf);  // std::vector grows its capacity geometrically
    m_rowMax.resize(size_t(tokens), 0.0f);
    m_windows.resize(size_t(tokens), 0);
    m_isPending.resize(size_t(tokens), 0);
    m_n = tokens;  // the new rows are masked already: the image is filled with that colour ahead
}

bool AttentionMapImage::reserveImage(int tokens) {
    const int capacity = this->capacity();
    if (tokens <= capacity) return true;
    // Geometric growth: a streamed token reallocates (and copies) the image only now and then, and
    // the headroom past `tokens` means the reply's first token after a rebuild does not (a 1,000-token
    // image took ~14 ms to reallocate).
    const int grown = std::max({tokens + tokens / 2, capacity + capacity / 2, kMinCapacity});
    QImage image(grown, grown, QImage::Format_ARGB32_Premultiplied);
    if (image.isNull()) return false;  // QImage gives a null image when the allocation fails
    image.fill(m_masked);
    for (int y = 0; y < capacity; ++y)
        std::memcpy(image.scanLine(y), m_image.constScanLine(y), size_t(capacity) * sizeof(QRgb));
    m_image = std::move(image);
    return true;
}

void AttentionMapImage::setRow(int query, const float* values, int count, int window) {
    if (query < 0 || query >= m_n) return;
    count = values ? std::clamp(count, 0, query + 1) : 0;
    float* row = &m_values[rowStart(query)];
    std::copy(values, values + count, row);
    std::fill(row + count, row + query + 1, kNaNf);
    float top = 0.0f;
    for (int k = 0; k < count; ++k)
        if (row[k] > top) top = row[k];  // NaN compares false: not captured cells do not count
    m_rowMax[size_t(query)] = top;
    m_windows[size_t(query)] = std::max(0, window);
    if (!m_isPending[size_t(query)]) {
        m_isPending[size_t(query)] = 1;
        m_pending.push_back(query);
    }
}

double AttentionMapImage::top() const {
    if (m_n == 1) return m_rowMax[0];
    float top = 0.0f;
    for (int q = 1; q < m_n; ++q) top = std::max(top, m_rowMax[size_t(q)]);
    return top;
}

void AttentionMapImage::setDataRange(const QCPRange& range) {
    if (range == m_range) return;
    m_range = range;
    m_allPending = true;
}

void AttentionMapImage::setColors(const QCPColorGradient& gradient, const QColor& outOfWindow) {
    m_gradient = gradient;
    m_outOfWindow = qPremultiply(outOfWindow.rgba());  // the image is premultiplied
    // The masked colour as colorize() writes it for NaN, so that cells filled ahead and cells
    // coloured from a NaN value are the same pixel.
    const double nan = kNaN;
    m_gradient.colorize(&nan, m_range, &m_masked, 1);
    if (!m_image.isNull()) m_image.fill(m_masked);
    m_allPending = true;
}

void AttentionMapImage::colourRow(int query) const {
    const int keys = query + 1;  // keys after the query keep the masked colour they were filled with
    m_scratch.resize(size_t(keys));
    const float* row = &m_values[rowStart(query)];
    for (int k = 0; k < keys; ++k) m_scratch[size_t(k)] = double(row[k]);
    auto* pixels = reinterpret_cast<QRgb*>(m_image.scanLine(query));
    m_gradient.colorize(m_scratch.data(), m_range, pixels, keys);
    const int w = m_windows[size_t(query)];
    if (w > 0)
        for (int k = 0; k <= query - w; ++k) pixels[k] = m_outOfWindow;
    m_cellsColoured += keys;
}

void AttentionMapImage::colourPending() const {
    if (m_allPending) {
        for (int q = 0; q < m_n; ++q) colourRow(q);
    } else {
        for (int q : m_pending)
            if (q < m_n) colourRow(q);
    }
    for (int q : m_pending)
        if (q < int(m_isPending.size())) m_isPending[size_t(q)] = 0;
    m_pending.clear();
    m_allPending = false;
}

double AttentionMapImage::cell(int key, int query) const {
    if (query < 0 || query >= m_n || key < 0 || key > query) return kNaN;
    return double(m_values[rowStart(query) + size_t(key)]);
}

bool AttentionMapImage::outsideWindow(int key, int query) const {
    if (query < 0 || query >= m_n) return false;
    const int w = m_windows[size_t(query)];
    return w > 0 && key >= 0 && key <= query && query - key >= w;
}

QImage AttentionMapImage::image() const {
    colourPending();
    return m_image.copy(0, 0, m_n, m_n);
}

void AttentionMapImage::draw(QCPPainter* painter) {
    // The panel's maps have the key axis horizontal: image column = key, image row = query.
    if (m_n <= 0 || !mKeyAxis || !mValueAxis || mKeyAxis->orientation() != Qt::Horizontal) return;
    colourPending();
    // Cell (key k, query q) spans k - 0.5 .. k + 0.5 and q - 0.5 .. q + 0.5 (a reversed axis flips the scale).
    const QPointF origin = coordsToPixels(-0.5, -0.5);
    const QPointF end = coordsToPixels(m_n - 0.5, m_n - 0.5);
    const double sx = (end.x() - origin.x()) / m_n;
    const double sy = (end.y() - origin.y()) / m_n;
    if (sx == 0.0 || sy == 0.0 || !std::isfinite(sx) || !std::isfinite(sy)) return;
    // Only the cells inside the axis rect are scaled and drawn: zoomed in, the rest costs nothing.
    const QRectF clip = clipRect();
    auto cells = [this](double a, double b, int* lo, int* hi) {
        if (a > b) std::swap(a, b);
        *lo = int(std::clamp(std::floor(a), 0.0, double(m_n)));
        *hi = int(std::clamp(std::ceil(b), 0.0, double(m_n)));
    };
    int k0, k1, q0, q1;
    cells((clip.left() - origin.x()) / sx, (clip.right() - origin.x()) / sx, &k0, &k1);
    cells((clip.top() - origin.y()) / sy, (clip.bottom() - origin.y()) / sy, &q0, &q1);
    if (k0 >= k1 || q0 >= q1) return;
    painter->save();
    painter->setRenderHint(QPainter::Antialiasing, false);
    painter->setRenderHint(QPainter::SmoothPixmapTransform, false);  // one flat colour per cell
    painter->translate(origin);
    painter->scale(sx, sy);
    const QRectF source(k0, q0, k1 - k0, q1 - q0);
    painter->drawImage(source, m_image, source);
    painter->restore();
}

void AttentionMapImage::drawLegendIcon(QCPPainter*, const QRectF&) const {}  // the panel has no legend

double AttentionMapImage::selectTest(const QPointF&, bool, QVariant*) const {
    return -1.0;  // not selectable: hovering is the panel's tooltip
}

QCPRange AttentionMapImage::getKeyRange(bool& foundRange, QCP::SignDomain inSignDomain) const {
    foundRange = m_n > 0 && inSignDomain != QCP::sdNegative;  // keys and queries are never negative
    return QCPRange(inSignDomain == QCP::sdPositive ? 0.0 : -0.5, m_n - 0.5);
}

QCPRange AttentionMapImage::getValueRange(bool& foundRange, QCP::SignDomain inSignDomain, const QCPRange&) const {
    return getKeyRange(foundRange, inSignDomain);
}
