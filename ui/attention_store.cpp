#include "attention_store.h"

#include <algorithm>
#include <set>

AttentionStore::AttentionStore(QObject* parent) : QObject(parent) {}

void AttentionStore::setModelShape(int nLayer, int nHead) {
    m_nLayer = nLayer;
    m_nHead = nHead;
    clear();
}

QString AttentionStore::tokenLabel(int position) const {
    if (position < 0 || position >= m_tokens.size()) return {};
    QString s = m_tokens[position];
    s.replace(QLatin1Char('\n'), QChar(0x21B5));  // ↵
    s.replace(QLatin1Char('\t'), QChar(0x2192));  // →
    s.replace(QLatin1Char(' '), QChar(0x00B7));   // ·
    if (s.size() > 14) s = s.left(13) + QChar(0x2026);
    return s;
}

const std::vector<float>* AttentionStore::row(int layer, int head, int query) const {
    auto it = m_rows.find(layer);
    if (it == m_rows.end() || head < 0 || head >= int(it->second.size())) return nullptr;
    const auto& rows = it->second[size_t(head)];
    if (query < 0 || query >= int(rows.size()) || rows[size_t(query)].empty()) return nullptr;
    return &rows[size_t(query)];
}

int AttentionStore::rowCount(int layer) const {
    auto it = m_rows.find(layer);
    if (it == m_rows.end()) return 0;
    size_t n = 0;
    for (const auto& head : it->second) n = std::max(n, head.size());
    return int(n);
}

std::vector<float> AttentionStore::meanRow(int layer, int query) const {
    std::vector<float> sum;
    int n = 0;
    for (int h = 0; h < m_nHead; ++h) {
        const std::vector<float>* r = row(layer, h, query);
        if (!r) continue;
        if (sum.size() < r->size()) sum.resize(r->size(), 0.0f);
        for (size_t k = 0; k < r->size(); ++k) sum[k] += (*r)[k];
        ++n;
    }
    for (float& v : sum) v /= float(n);
    return sum;
}

void AttentionStore::handlePrompt(const PromptInfo& info) {
    truncate(info.reused);
    m_tokens = info.pieces;
    Q_EMIT tokensChanged();
}

void AttentionStore::handleToken(int position, const QString& piece) {
    if (position < 0) return;
    while (m_tokens.size() < position) m_tokens.append(QString());
    if (position < m_tokens.size())
        m_tokens[position] = piece;
    else
        m_tokens.append(piece);
    Q_EMIT tokensChanged();
}

void AttentionStore::addEvents(const std::vector<wb::AttentionEvent>& events) {
    std::set<int> touched;
    for (const wb::AttentionEvent& e : events) {
        if (e.layer < 0 || e.n_queries <= 0 || e.n_keys <= 0) continue;
        auto& layer = m_rows[e.layer];
        const int nHead = std::max(e.n_head, m_nHead);
        if (int(layer.size()) < nHead) layer.resize(size_t(nHead));
        for (size_t hi = 0; hi < e.heads.size(); ++hi) {
            const int head = e.heads[hi];
            if (head < 0 || head >= int(layer.size())) continue;
            auto& rows = layer[size_t(head)];
            for (int q = 0; q < e.n_queries; ++q) {
                const int pos = e.query_pos0 + q;
                // Keys after the query are masked (0) by causality: keep only 0 .. pos.
                const int nk = std::min(e.n_keys, pos + 1);
                if (int(rows.size()) <= pos) rows.resize(size_t(pos) + 1);
                const float* src = &e.probs[(hi * size_t(e.n_queries) + size_t(q)) * size_t(e.n_keys)];
                rows[size_t(pos)].assign(src, src + nk);
            }
        }
        touched.insert(e.layer);
    }
    for (int layer : touched) Q_EMIT rowsChanged(layer);
}

void AttentionStore::truncate(int positions) {
    for (auto& [layer, heads] : m_rows)
        for (auto& rows : heads)
            if (int(rows.size()) > positions) rows.resize(size_t(std::max(positions, 0)));
    if (m_tokens.size() > positions) m_tokens = m_tokens.mid(0, std::max(positions, 0));
}

void AttentionStore::setCut(const wb::ContextCut& cut) {
    m_cut = cut;
    Q_EMIT cutChanged();
}

void AttentionStore::clear() {
    m_cut = {};
    m_rows.clear();
    m_tokens.clear();
    Q_EMIT cleared();
}
