#include "attention_store.h"

#include <algorithm>
#include <set>

#ifdef __GLIBC__
#include <malloc.h>
#endif

namespace {

// What one row costs beyond its probabilities: the deque slot holding it and the allocator's header.
constexpr qint64 kSlotBytes = qint64(sizeof(std::vector<float>));
constexpr qint64 kAllocHeader = 16;

qint64 rowBytes(const std::vector<float>& row) {
    return row.capacity() == 0 ? 0 : qint64(row.capacity() * sizeof(float)) + kAllocHeader;
}

}  // namespace

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
    const HeadRows& rows = it->second[size_t(head)];
    const int i = query - m_droppedBelow;
    if (i < 0 || i >= int(rows.size()) || rows[size_t(i)].empty()) return nullptr;
    return &rows[size_t(i)];
}

int AttentionStore::rowCount(int layer) const {
    auto it = m_rows.find(layer);
    if (it == m_rows.end()) return 0;
    size_t n = 0;
    for (const HeadRows& head : it->second) n = std::max(n, head.size());
    return n == 0 ? 0 : m_droppedBelow + int(n);
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

int AttentionStore::window(int layer) const {
    auto it = m_windows.find(layer);
    return it == m_windows.end() ? 0 : it->second;
}

void AttentionStore::handlePrompt(const PromptInfo& info) {
    // The next prompt is the whole conversation, and the engine says how its cache holds the reused
    // part (PromptInfo::shiftKeep, shiftDropped: Session::reuse_prefix). Taken as said, not inferred
    // from the cuts seen: a replay or compare may have reset the session meanwhile, a request not
    // shown may have shifted it, and sliding-window layers may keep less than the match.
    m_shifts.clear();
    if (info.shiftDropped > 0) m_shifts.push_back({wb::ContextPolicy::SHIFT, info.shiftKeep, info.shiftDropped});
    // A cache that holds the conversation as it is again (the prompt went back before the dropped
    // run, or the session was reset) has no shift in force: none to mark on this context's map.
    // Likewise the trims: the worker says what its trims in force keep out of this prompt (none after
    // an edit before the first message still sent, or under another policy).
    m_trimmed = info.trimDropped;
    const bool cutGone = m_cut.dropped > 0 && ((m_cut.how == wb::ContextPolicy::SHIFT && info.shiftDropped == 0) ||
                                               (m_cut.how == wb::ContextPolicy::TRIM && info.trimDropped == 0));
    if (cutGone) m_cut = {};
    truncate(info.reused);
    m_tokens = info.pieces;
    Q_EMIT tokensChanged();
    Q_EMIT memoryChanged();
    if (cutGone) Q_EMIT cutChanged();
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

std::vector<int> AttentionStore::rowsChangedSince(int layer, quint64 revision) const {
    std::vector<int> rows;
    auto it = m_rowRevisions.find(layer);
    if (it == m_rowRevisions.end()) return rows;
    for (size_t pos = 0; pos < it->second.size(); ++pos)
        if (it->second[pos] > revision) rows.push_back(int(pos));
    return rows;
}

void AttentionStore::markChanged(int layer, int position) {
    std::vector<quint64>& revisions = m_rowRevisions[layer];
    if (int(revisions.size()) <= position) revisions.resize(size_t(position) + 1, 0);
    revisions[size_t(position)] = m_revision;
}

void AttentionStore::addEvents(const std::vector<wb::AttentionEvent>& events) {
    std::set<int> touched;
    ++m_revision;
    for (const wb::AttentionEvent& e : events) {
        if (e.layer < 0 || e.n_queries <= 0 || e.n_keys <= 0) continue;
        auto& layer = m_rows[e.layer];
        m_windows[e.layer] = e.window;
        const int nHead = std::max(e.n_head, m_nHead);
        if (int(layer.size()) < nHead) layer.resize(size_t(nHead));
        for (size_t hi = 0; hi < e.heads.size(); ++hi) {
            const int head = e.heads[hi];
            if (head < 0 || head >= int(layer.size())) continue;
            HeadRows& rows = layer[size_t(head)];
            for (int q = 0; q < e.n_queries; ++q) {
                const int pos = conversationPosition(e.query_pos0 + q);
                const int i = pos - m_droppedBelow;
                if (i < 0) continue;  // below what the budget already dropped
                if (int(rows.size()) <= i) {
                    m_bytes += kSlotBytes * qint64(size_t(i) + 1 - rows.size());
                    rows.resize(size_t(i) + 1);
                }
                std::vector<float>& row = rows[size_t(i)];
                m_bytes -= rowBytes(row);
                row = storedRow(e, hi, q);  // exactly its floats: the accounting is the allocation
                m_bytes += rowBytes(row);
                markChanged(e.layer, pos);
            }
        }
        touched.insert(e.layer);
        // Per event, not per batch: a batch of every layer's prefill may be far larger than the budget.
        enforceBudget();
    }
    for (int layer : touched) Q_EMIT rowsChanged(layer);
    if (!touched.empty()) Q_EMIT memoryChanged();
}

int AttentionStore::conversationPosition(int cachePosition) const {
    // The latest shift first: each moved the positions from its cut on down by what it dropped.
    int pos = cachePosition;
    for (auto it = m_shifts.rbegin(); it != m_shifts.rend(); ++it)
        if (pos >= it->position) pos += it->dropped;
    return pos;
}

std::vector<float> AttentionStore::storedRow(const wb::AttentionEvent& e, size_t headIndex, int query) const {
    const int cachePos = e.query_pos0 + query;
    // Keys after the query are masked (0) by causality: keep only 0 .. the query.
    const int nk = std::min(e.n_keys, cachePos + 1);
    const float* src = &e.probs[(headIndex * size_t(e.n_queries) + size_t(query)) * size_t(e.n_keys)];
    if (m_shifts.empty()) return std::vector<float>(src, src + nk);
    std::vector<float> row(size_t(conversationPosition(cachePos)) + 1, 0.0f);
    for (int k = 0; k < nk; ++k) row[size_t(conversationPosition(k))] = src[k];
    return row;
}

void AttentionStore::dropOldestRows() {
    for (auto& [layer, heads] : m_rows) {
        markChanged(layer, m_droppedBelow);
        for (HeadRows& rows : heads) {
            if (rows.empty()) continue;
            m_bytes -= rowBytes(rows.front()) + kSlotBytes;
            rows.pop_front();
        }
    }
    ++m_droppedBelow;
}

bool AttentionStore::enforceBudget() {
    bool dropped = false;
    while (m_bytes > m_budget && m_bytes > 0) {
        dropOldestRows();
        dropped = true;
    }
    return dropped;
}

void AttentionStore::setBudgetBytes(qint64 bytes) {
    m_budget = std::max<qint64>(0, bytes);
    ++m_revision;
    if (enforceBudget()) {
        for (const auto& [layer, heads] : m_rows) Q_EMIT rowsChanged(layer);
    }
    Q_EMIT memoryChanged();
}

void AttentionStore::truncate(int positions) {
    positions = std::max(positions, 0);
    ++m_revision;
    // The rows from `positions` on go (below m_droppedBelow they went already and were marked then).
    for (auto& [layer, revisions] : m_rowRevisions)
        for (size_t pos = size_t(positions); pos < revisions.size(); ++pos) revisions[pos] = m_revision;
    if (positions <= m_droppedBelow) {
        // Every stored row is stale; the new context's rows start at `positions`.
        for (auto& [layer, heads] : m_rows)
            for (HeadRows& rows : heads) HeadRows().swap(rows);
        m_bytes = 0;
        m_droppedBelow = positions;
    } else {
        const size_t keep = size_t(positions - m_droppedBelow);
        for (auto& [layer, heads] : m_rows)
            for (HeadRows& rows : heads)
                while (rows.size() > keep) {
                    m_bytes -= rowBytes(rows.back()) + kSlotBytes;
                    rows.pop_back();
                }
    }
    if (m_tokens.size() > positions) m_tokens = m_tokens.mid(0, positions);
}

void AttentionStore::setCut(const wb::ContextCut& cut) {
    m_cut = cut;
    if (cut.how == wb::ContextPolicy::SHIFT && cut.dropped > 0) m_shifts.push_back(cut);
    if (cut.how == wb::ContextPolicy::TRIM) m_trimmed += cut.dropped;
    Q_EMIT cutChanged();
}

int AttentionStore::droppedTotal() const {
    if (m_cut.dropped <= 0) return 0;
    if (m_cut.how == wb::ContextPolicy::TRIM) return m_trimmed;
    int total = 0;
    for (const wb::ContextCut& s : m_shifts) total += s.dropped;
    return total;
}

void AttentionStore::clear() {
    m_cut = {};
    m_shifts.clear();
    m_trimmed = 0;
    m_rows.clear();
    m_windows.clear();
    m_rowRevisions.clear();
    ++m_revision;
    m_tokens.clear();
    m_bytes = 0;
    m_droppedBelow = 0;
    // Thousands of small rows freed in the middle of the heap stay with the allocator (resident)
    // unless it is asked to hand free pages back: New chat should return the memory to the system.
#ifdef __GLIBC__
    malloc_trim(0);
#endif
    Q_EMIT cleared();
    Q_EMIT memoryChanged();
}
