#pragma once
// Shared by the GUI tests: a private QSettings namespace and conversations folder (so tests never
// read or change the user's settings or conversations and start from a clean state) and synthetic engine events.
#include <QCoreApplication>
#include <QDir>
#include <QSettings>
#include <QStandardPaths>
#include <QTemporaryDir>

#include "engine/observer.h"

namespace wb_gui_test {

// The settings live in a temporary directory that is removed when the test ends: QSettings' user
// scope is pointed there, and QStandardPaths' test mode keeps other writable locations away from
// the user's. Call it before anything reads a setting.
inline void isolateSettings(const char* testName) {
    static QTemporaryDir dir;
    QStandardPaths::setTestModeEnabled(true);
    QSettings::setPath(QSettings::NativeFormat, QSettings::UserScope, dir.path());
    QSettings::setPath(QSettings::IniFormat, QSettings::UserScope, dir.path());
    // The saved conversations too (ConversationStore::defaultDirectory).
    qputenv("WHITEBOX_DATA_DIR", QDir(dir.path()).filePath(QStringLiteral("data")).toUtf8());
    QCoreApplication::setOrganizationName(QStringLiteral("WhiteBoxTest"));
    QCoreApplication::setApplicationName(QString::fromLatin1(testName));
    QSettings().clear();
}

inline QString settingsFile() {
    return QSettings().fileName();
}

// A token event with candidates of the given raw and final probabilities (pieces "t0", "t1", ...).
inline wb::TokenEvent tokenEvent(const std::vector<float>& raw, const std::vector<float>& fin, int chosen = 0) {
    wb::TokenEvent e;
    e.index = 0;
    e.id = 100 + chosen;
    e.piece = "t" + std::to_string(chosen);
    e.p = fin.at(size_t(chosen));
    for (size_t i = 0; i < raw.size(); ++i)
        e.candidates.push_back({int32_t(100 + i), "t" + std::to_string(i), raw[i], fin[i]});
    return e;
}

// Attention of one layer for queries [pos0, pos0 + nq) over keys [0, pos0 + nq), every head's row q
// filled with value(head, query, key) on the causal part and 0 elsewhere.
template <typename F>
wb::AttentionEvent attentionEvent(int layer, int nHead, int pos0, int nq, F value) {
    wb::AttentionEvent e;
    e.layer = layer;
    e.prefill = nq > 1;
    e.n_head = nHead;
    e.n_head_kv = nHead;
    for (int h = 0; h < nHead; ++h) {
        e.heads.push_back(h);
        e.kv_head_of.push_back(h);
    }
    e.query_pos0 = pos0;
    e.n_queries = nq;
    e.n_keys = pos0 + nq;
    e.probs.assign(size_t(nHead) * size_t(nq) * size_t(e.n_keys), 0.0f);
    for (int h = 0; h < nHead; ++h)
        for (int q = 0; q < nq; ++q)
            for (int k = 0; k <= pos0 + q; ++k)
                e.probs[(size_t(h) * size_t(nq) + size_t(q)) * size_t(e.n_keys) + size_t(k)] = value(h, pos0 + q, k);
    return e;
}

}  // namespace wb_gui_test
