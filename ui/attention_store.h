#pragma once
// AttentionStore: the attention rows captured so far in this conversation, by layer, head and query
// position, and the text of every position (the axis labels). Lives on the GUI thread; the attention
// panel and the token inspector draw from it. Only the layers the capture spec asked for have rows.
// The rows live within a memory budget: past it the oldest query rows (every layer and head at the
// lowest positions) are dropped, so "capture all layers" over a long reply stays bounded; clear()
// gives the memory back to the system, not only to the allocator.
#include <cstdint>
#include <deque>
#include <map>
#include <vector>

#include <QObject>
#include <QStringList>

#include "engine/observer.h"
#include "engine_types.h"

class AttentionStore : public QObject {
    Q_OBJECT

public:
    explicit AttentionStore(QObject* parent = nullptr);

    void setModelShape(int nLayer, int nHead);
    int layerCount() const { return m_nLayer; }
    int headCount() const { return m_nHead; }

    int tokenCount() const { return int(m_tokens.size()); }
    const QStringList& tokens() const { return m_tokens; }
    // Label for an axis: whitespace made visible, long pieces shortened.
    QString tokenLabel(int position) const;

    // Rows of the query position, keys 0 .. query; nullptr when that row was not captured.
    const std::vector<float>* row(int layer, int head, int query) const;
    // Number of query rows with data for the layer (rows may have gaps where capture was off).
    int rowCount(int layer) const;
    bool hasLayer(int layer) const { return m_rows.count(layer) > 0; }
    // The last cut of the context the engine reported (shift or trim; dropped == 0: none since the
    // conversation began, or a shift no longer in force: a prompt whose PromptInfo has no shift
    // mapping): the panels mark it, they do not work it out.
    const wb::ContextCut& cut() const { return m_cut; }
    // The conversation's tokens out of the context by cuts of the last cut's kind, as the engine
    // reported them (0: no cut). After a shift: those the shifts in force dropped (the engine's count at
    // the prompt, PromptInfo::shiftDropped, and each cut since), the keys the map leaves empty after
    // cut().position. After a trim: the tokens of the old turns the trims in force keep out of the prompt.
    int droppedTotal() const;
    // Mean over the heads that have the row; empty when none has it.
    std::vector<float> meanRow(int layer, int query) const;
    // The layer's sliding window as the engine recorded it with its rows (0: none, attends to all keys).
    int window(int layer) const;
    // A cache position of the current prompt's generation as a conversation position (the shifts undone:
    // the engine's mapping at the prompt, PromptInfo::shiftKeep/shiftDropped, then its cuts since).
    int conversationPosition(int cachePosition) const;

    // Bytes the captured rows take (their probabilities) and the most they may take.
    qint64 bytesUsed() const { return m_bytes; }
    qint64 budgetBytes() const { return m_budget; }
    // Rows of query positions below this were dropped to stay within the budget (0: none dropped).
    int droppedBelow() const { return m_droppedBelow; }
    static constexpr qint64 kDefaultBudget = qint64(256) << 20;

    // Every change to rows (written, dropped by the budget, removed by a new prompt) gets a new
    // revision, so that a view can redraw only the rows changed since the revision it drew (while a
    // reply streams: the new ones) instead of all n x n cells. clear() forgets them (views redraw all
    // on cleared()).
    quint64 revision() const { return m_revision; }
    // The query positions of `layer` (any head) changed after `revision`, ascending.
    std::vector<int> rowsChangedSince(int layer, quint64 revision) const;

public Q_SLOTS:
    // A new generation: the context is now info.ids; rows past the reused prefix are stale.
    void handlePrompt(const PromptInfo& info);
    // A generated token joins the context at `position`.
    void handleToken(int position, const QString& piece);
    void addEvents(const std::vector<wb::AttentionEvent>& events);
    // The engine cut the context (InferenceWorker::contextCut). After a shift the engine's positions
    // are the cache's (the kept prefix, then the tokens after the dropped ones, moved down), while the
    // store's are the conversation's (the axis labels, TokenRecord::position): later rows are stored
    // at their conversation positions, each key at its token's, and the dropped keys, which the model
    // no longer attends to, are 0 — the recorded probabilities moved, none changed.
    void setCut(const wb::ContextCut& cut);
    void clear();
    // A smaller budget drops old rows at once.
    void setBudgetBytes(qint64 bytes);

Q_SIGNALS:
    void tokensChanged();
    void rowsChanged(int layer);
    void cleared();
    void cutChanged();
    // bytesUsed() or droppedBelow() changed.
    void memoryChanged();

private:
    void truncate(int positions);
    // Drops the oldest rows until the rows fit the budget; true when any went.
    bool enforceBudget();
    // Every layer's and head's row at position m_droppedBelow goes.
    void dropOldestRows();
    void markChanged(int layer, int position);
    // One query row of `e` as the store keeps it: keys 0 .. the query's conversation position.
    std::vector<float> storedRow(const wb::AttentionEvent& e, size_t headIndex, int query) const;

    int m_nLayer = 0;
    int m_nHead = 0;
    QStringList m_tokens;
    wb::ContextCut m_cut;
    // The shifts the session's cache has made since it last held the conversation as it is, in order
    // (setCut; each keeps the same prefix, so together they drop one run after it).
    std::vector<wb::ContextCut> m_shifts;
    // Tokens the trims in force dropped: the worker's figure at the last prompt (PromptInfo::trimDropped),
    // plus each trim's cut since.
    int m_trimmed = 0;
    // m_rows[layer][head][query - m_droppedBelow] = probabilities over keys 0 .. query (empty: not
    // captured). A deque: the budget drops rows at the front, one position at a time.
    using HeadRows = std::deque<std::vector<float>>;
    std::map<int, std::vector<HeadRows>> m_rows;
    std::map<int, int> m_windows;  // layer -> AttentionEvent::window of its latest rows
    qint64 m_bytes = 0;
    qint64 m_budget = kDefaultBudget;
    int m_droppedBelow = 0;
    quint64 m_revision = 0;
    std::map<int, std::vector<quint64>> m_rowRevisions;  // layer -> revision of each position's last change
};
