#pragma once
// The conversation as the GUI keeps it: a tree of messages (every version that Regenerate, Edit and
// resend or a fork from a token made is kept as a sibling), of which one path from the first message
// to a leaf is active. The active path is `messages`, the flat list the chat view, the token
// inspector and the next prompt read; the methods below change the tree and keep it in step. Assistant
// replies carry the tokens they were generated from (what the token inspector and the probability
// colouring show). Also the system prompt, the sampling settings, the model's name and a title.
// Saved as JSON (format version 2 holds the tree; version 1 files, one path, still load), written
// atomically (QSaveFile).
#include <map>
#include <optional>

#include <QDateTime>
#include <QJsonObject>
#include <QString>
#include <QStringList>
#include <QVector>

#include "engine/observer.h"
#include "engine_types.h"
#include "sampling/sampling_params.h"
#include "sampling/trace_file.h"

// One generated token with what the engine reported about it.
struct TokenRecord {
    int id = 0;
    QString piece;           // the text it added to the reply (empty while the reply holds it back)
    QString tokenPiece;      // the token's own text (tokenText: bytes that are not UTF-8 as \xNN); may be empty
    float p = 0.0f;          // probability in the distribution it was drawn from
    float entropy = 0.0f;    // of the raw next-token distribution (nats), when captured
    int position = -1;       // its position in the context (for its attention row)
    std::vector<wb::TokenCandidate> candidates;
    std::vector<wb::SamplerStageTrace> trace;
    // The logit lens and head statistics, when their panels were shown while it was generated; not
    // saved (this session's replies only).
    TokenInspectionPtr inspection;
};

// How a reply of this session was generated: what Export sampler trace writes beside its tokens'
// traces and what Compare runs through a second model. Not saved (a conversation file keeps text and
// tokens, not prompt ids); shared and immutable.
struct ReplyRun {
    std::vector<int32_t> prompt;  // the ids its drawn tokens follow: the rendered prompt and any given tokens
    int given = 0;                // its first `given` tokens were given (a fork, a continued reply), not drawn
    wb::SamplingParams params;    // the settings the sampler started with (the template's stops included)
    quint64 seed = 0;             // the seed the sampler drew with
    QString backend;              // "cpu", "cuda"
    QString modelPath;
    QString unreplayable;         // why a replay from `prompt` cannot draw the same tokens ("" = it can)
    int rounds = 1;               // > 1: trimmed and continued, `prompt` is only the last round's
    int cached = 0;               // leading prompt positions the session had cached (PromptInfo::reused)
    wb::TraceEngine engine;       // the context, cache types and full-context policy it ran with
};
using ReplyRunPtr = std::shared_ptr<const ReplyRun>;

struct ChatEntry {
    QString role;            // "user" or "assistant"
    QString content;
    QVector<TokenRecord> tokens;  // assistant replies generated in this session (or loaded)
    QString stopReason;      // how the reply ended ("eos", "stopped", ...)
    ReplyRunPtr run = nullptr;  // replies generated in this session
};

class Conversation {
public:
    QString systemPrompt;
    QString modelName;
    QString title;           // the user's name for it; empty: displayTitle() uses the first message
    QDateTime created;
    QDateTime updated;
    wb::SamplingParams sampling;
    // The active path. Appending to it directly is allowed (the tree takes the new messages in at the
    // next call below); replacing or removing messages goes through the methods.
    QVector<ChatEntry> messages;

    Conversation();

    // Appends a message to the active path.
    void append(const ChatEntry& entry);
    // Removes the last message of the active path (that version only); when it had siblings, the
    // path continues with the newest of them.
    void removeLast();
    // A new version of message `index`: a sibling of it, which becomes the active one; the active path
    // ends with it (the old version keeps what followed it).
    void addVersion(int index, const ChatEntry& entry);
    // Versions of message `index` (1 when it has no siblings) and which of them is active (0-based).
    int versionCount(int index) const;
    int versionIndex(int index) const;
    // Makes version `version` of message `index` active; the path below it is the one last active
    // there. False when either is out of range.
    bool selectVersion(int index, int version);
    // Messages in every branch.
    int totalMessages() const;
    // The text of every message in every branch (the search looks here), in tree order.
    QStringList allContents() const;
    bool isEmpty() const { return messages.isEmpty(); }
    // Forgets every message (the settings stay).
    void clearMessages();

    // The title, else the first user message's first line (shortened), else "New chat".
    QString displayTitle() const;
    // The messages for the chat template: the system prompt (when set) then the first `count` messages
    // of the active path (-1: all).
    ChatMessages toEngineMessages(int count = -1) const;
    // A conversation of an API request's messages (the app's server): its leading system messages
    // joined into the system prompt, the rest as messages. toEngineMessages() then gives what the
    // worker renders, which the server checks the request against before it queues it.
    static Conversation fromApiMessages(const ChatMessages& messages);

    QJsonObject toJson() const;
    static std::optional<Conversation> fromJson(const QJsonObject& json, QString* error);
    // Atomic write: the file is either the old or the new conversation, never half of one.
    bool save(const QString& path, QString* error) const;
    static std::optional<Conversation> load(const QString& path, QString* error);

private:
    struct Node {
        int parent = -1;
        QVector<int> children;  // in the order they were made
        int active = -1;        // the child on the active path (or last active there)
        ChatEntry entry;        // empty while the node is on the active path: `messages` holds it
    };
    static constexpr int kRoot = 0;

    // Takes messages appended to `messages` directly into the tree.
    void syncPath();
    // Moves messages[from...] back into their nodes and shortens the path to `from`.
    void cutPath(int from);
    // Appends node and the nodes last active below it to the path.
    void extendPath(int node);
    int addNode(int parent, const ChatEntry& entry);
    int parentOf(int index) const;  // node the path's message `index` hangs from
    // A copy of the tree with the active path's entries in their nodes (for writing).
    std::map<int, Node> fullTree() const;

    std::map<int, Node> m_nodes;
    QVector<int> m_path;  // node of each message in `messages`
    int m_nextId = 1;
};

// SamplingParams <-> JSON, shared by conversations and user presets.
QJsonObject samplingToJson(const wb::SamplingParams& p);
wb::SamplingParams samplingFromJson(const QJsonObject& json);
