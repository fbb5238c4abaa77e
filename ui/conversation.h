#pragma once
// The conversation as the GUI keeps it: messages with, for assistant replies, the tokens they were
// generated from (what the token inspector and the probability colouring show), the system prompt,
// the sampling settings and the model's name. Saved as JSON, written atomically (QSaveFile).
#include <optional>

#include <QJsonObject>
#include <QString>
#include <QVector>

#include "engine/observer.h"
#include "engine_types.h"
#include "sampling/sampling_params.h"

// One generated token with what the engine reported about it.
struct TokenRecord {
    int id = 0;
    QString piece;           // the text it added to the reply
    float p = 0.0f;          // probability in the distribution it was drawn from
    float entropy = 0.0f;    // of the raw next-token distribution (nats), when captured
    int position = -1;       // its position in the context (for its attention row)
    std::vector<wb::TokenCandidate> candidates;
    std::vector<wb::SamplerStageTrace> trace;
};

struct ChatEntry {
    QString role;            // "user" or "assistant"
    QString content;
    QVector<TokenRecord> tokens;  // assistant replies generated in this session (or loaded)
    QString stopReason;      // how the reply ended ("eos", "stopped", ...)
};

class Conversation {
public:
    QString systemPrompt;
    QVector<ChatEntry> messages;
    QString modelName;
    wb::SamplingParams sampling;

    // The messages for the chat template: the system prompt (when set) then every message.
    ChatMessages toEngineMessages() const;

    QJsonObject toJson() const;
    static std::optional<Conversation> fromJson(const QJsonObject& json, QString* error);
    // Atomic write: the file is either the old or the new conversation, never half of one.
    bool save(const QString& path, QString* error) const;
    static std::optional<Conversation> load(const QString& path, QString* error);
};

// SamplingParams <-> JSON, shared by conversations and user presets.
QJsonObject samplingToJson(const wb::SamplingParams& p);
wb::SamplingParams samplingFromJson(const QJsonObject& json);
