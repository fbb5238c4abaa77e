#pragma once
// Shared pieces of the llama.cpp parity tests: reading the reference JSON, top-1 / KL agreement over
// positions, SHA-256 of logits rows (equal hashes: bit-identical logits), and greedy decoding with the
// engine.
#include <QCryptographicHash>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QString>

#include <algorithm>
#include <cmath>
#include <vector>

#include "engine/session.h"
#include "test_paths.h"

namespace wb_test {

// tests/reference/<model_dir>/<name>, parsed.
inline QJsonObject load_reference(const QString& model_dir, const QString& name) {
    const QString path = QString::fromStdString(reference_dir()) + "/" + model_dir + "/" + name;
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) qFatal("cannot open reference file %s", qPrintable(path));
    QByteArray json = f.readAll();
    // Qt 6.4's JSON parser drops a raw U+FEFF at the start of a string value (the corpus has one);
    // the escaped form survives, and inside a string both mean the same.
    json.replace("\xEF\xBB\xBF", "\\ufeff");
    return QJsonDocument::fromJson(json).object();
}

inline std::vector<int32_t> ids_of(const QJsonArray& a) {
    std::vector<int32_t> out;
    for (const auto& v : a) out.push_back(int32_t(v.toInt()));
    return out;
}

inline int32_t argmax(const float* v, int32_t n) {
    int32_t best = 0;
    for (int32_t i = 1; i < n; ++i)
        if (v[i] > v[best]) best = i;
    return best;
}

// Top-1 agreement and KL(reference || engine) over positions; the KL runs over the reference's top ids
// plus one bucket for the rest of the vocabulary (tests/reference/README.md explains the bound).
struct Agreement {
    int64_t positions = 0, agree = 0;
    double kl_sum = 0.0, kl_max = 0.0;

    void add(const float* logits, int32_t n_vocab, const QJsonObject& ref) {
        double mx = logits[0];
        for (int32_t i = 1; i < n_vocab; ++i) mx = std::max(mx, double(logits[i]));
        double sum = 0.0;
        for (int32_t i = 0; i < n_vocab; ++i) sum += std::exp(double(logits[i]) - mx);
        const double lse = mx + std::log(sum);
        double kl = 0.0, p_top = 0.0, q_top = 0.0;
        for (const auto& e : ref["top"].toArray()) {
            const QJsonArray pair = e.toArray();
            const double lp = pair[1].toDouble();
            const double lq = double(logits[pair[0].toInt()]) - lse;
            kl += std::exp(lp) * (lp - lq);
            p_top += std::exp(lp);
            q_top += std::exp(lq);
        }
        const double p_rest = std::max(0.0, 1.0 - p_top), q_rest = std::max(1e-300, 1.0 - q_top);
        if (p_rest > 0.0) kl += p_rest * std::log(p_rest / q_rest);
        ++positions;
        if (argmax(logits, n_vocab) == ref["argmax"].toInt()) ++agree;
        kl_sum += kl;
        kl_max = std::max(kl_max, kl);
    }
    void merge(const Agreement& o) {
        positions += o.positions;
        agree += o.agree;
        kl_sum += o.kl_sum;
        kl_max = std::max(kl_max, o.kl_max);
    }
    double top1() const { return positions ? double(agree) / double(positions) : 0.0; }
    double kl_mean() const { return positions ? kl_sum / double(positions) : 0.0; }
};

// n greedy tokens (argmax of the raw logits, no end-of-generation stop) after prompt, from an empty
// cache: the definition the reference data uses.
// SHA-256 of float32 rows as make_reference.py hashes them (little-endian bytes, in order).
inline QString logits_sha256(const float* rows, size_t n_floats) {
    QCryptographicHash h(QCryptographicHash::Sha256);
    h.addData(QByteArrayView(reinterpret_cast<const char*>(rows), qsizetype(n_floats * sizeof(float))));
    return QString::fromLatin1(h.result().toHex());
}

// n greedy tokens after `prompt`; with `steps`, the logits rows each one was chosen from (the prompt's
// last row, then one per decoded token), as the reference's steps_sha256 covers them.
inline std::vector<int32_t> greedy_tokens(wb::Session& s, const std::vector<int32_t>& prompt, size_t n,
                                          std::vector<float>* steps = nullptr) {
    s.reset();
    const int32_t n_vocab = s.model().config().n_vocab;
    const std::vector<float>* logits = &s.append(prompt.data(), int32_t(prompt.size()));
    std::vector<int32_t> got;
    while (got.size() < n) {
        if (steps) steps->insert(steps->end(), logits->begin(), logits->begin() + n_vocab);
        const int32_t next = argmax(logits->data(), n_vocab);
        got.push_back(next);
        logits = &s.append(&next, 1);
    }
    return got;
}

}  // namespace wb_test
