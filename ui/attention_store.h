#pragma once
// AttentionStore: the attention rows captured so far in this conversation, by layer, head and query
// position, and the text of every position (the axis labels). Lives on the GUI thread; the attention
// panel and the token inspector draw from it. Only the layers the capture spec asked for have rows.
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
    // conversation began): the panels mark it, they do not work it out.
    const wb::ContextCut& cut() const { return m_cut; }
    // Mean over the heads that have the row; empty when none has it.
    std::vector<float> meanRow(int layer, int query) const;

public Q_SLOTS:
    // A new generation: the context is now info.ids; rows past the reused prefix are stale.
    void handlePrompt(const PromptInfo& info);
    // A generated token joins the context at `position`.
    void handleToken(int position, const QString& piece);
    void addEvents(const std::vector<wb::AttentionEvent>& events);
    // The engine cut the context (InferenceWorker::contextCut).
    void setCut(const wb::ContextCut& cut);
    void clear();

Q_SIGNALS:
    void tokensChanged();
    void rowsChanged(int layer);
    void cleared();
    void cutChanged();

private:
    void truncate(int positions);

    int m_nLayer = 0;
    int m_nHead = 0;
    QStringList m_tokens;
    wb::ContextCut m_cut;
    // m_rows[layer][head][query] = probabilities over keys 0 .. query (empty: not captured).
    std::map<int, std::vector<std::vector<std::vector<float>>>> m_rows;
};
